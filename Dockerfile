# blobgw container image: a static binary on a distroless base.
# Untested here (no container engine on the build machine); the build
# command it runs is: CGO_ENABLED=0 go build ./cmd/blobgw (the SQLite
# driver, modernc.org/sqlite, is pure Go).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/blobgw ./cmd/blobgw && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/blobgw /usr/local/bin/blobgw
# /data belongs to the nonroot user (uid 65532), so the volume is writable.
COPY --from=build --chown=65532:65532 /out/data /data
# The Blob API, and the metrics/health listener (bound to all interfaces
# here so that the orchestrator's probes reach it).
EXPOSE 10000 9464
ENV BLOBGW_LISTEN=0.0.0.0:10000 \
    BLOBGW_METRICS_LISTEN=0.0.0.0:9464 \
    BLOBGW_DATA_DIR=/data \
    BLOBGW_LOG_FORMAT=json
VOLUME /data
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/blobgw"]
CMD ["serve"]
