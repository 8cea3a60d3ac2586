package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestFromURLChunkedBody: the operations whose bytes come from a source
// (Put Blob / Put Block / Append Block / Put Page From URL, Incremental
// Copy Blob) take no body, and Content-Length must be 0; a body sent
// chunked (no Content-Length) is refused as one with a length is, never
// read and ignored.
func TestFromURLChunkedBody(t *testing.T) {
	b := setup(t, "sqlite")
	createContainers(t, b.client, "zbody")
	ctx := context.Background()
	if _, err := b.client.UploadBuffer(ctx, "zbody", "src", []byte("source"), nil); err != nil {
		t.Fatal(err)
	}
	src := b.serviceURL(0) + "zbody/src"
	for _, tc := range []struct {
		name, path string
		hdr        map[string]string
	}{
		{"put blob from url", "zbody/dst", map[string]string{"x-ms-blob-type": "BlockBlob", "x-ms-copy-source": src}},
		{"put block from url", "zbody/dst?comp=block&blockid=YWFhYQ%3D%3D", map[string]string{"x-ms-copy-source": src}},
		{"append block from url", "zbody/dst?comp=appendblock", map[string]string{"x-ms-copy-source": src}},
		{"put page from url", "zbody/dst?comp=page", map[string]string{"x-ms-copy-source": src, "x-ms-page-write": "update", "x-ms-range": "bytes=0-511", "x-ms-source-range": "bytes=0-511"}},
		{"incremental copy", "zbody/dst?comp=incrementalcopy", map[string]string{"x-ms-copy-source": src}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, chunked := range []bool{false, true} {
				req, err := http.NewRequest(http.MethodPut, b.serviceURL(0)+tc.path, strings.NewReader("ignored body"))
				if err != nil {
					t.Fatal(err)
				}
				if chunked {
					req.ContentLength = -1
				}
				for k, v := range tc.hdr {
					req.Header.Set(k, v)
				}
				b.sign(t, req)
				resp, body := send(t, req)
				if chunked {
					wantStatus(t, resp, http.StatusLengthRequired, "MissingContentLengthHeader", "chunked body: "+body)
				} else {
					wantStatus(t, resp, http.StatusBadRequest, "InvalidHeaderValue", "body with a length: "+body)
				}
			}
		})
	}
}
