package gateway

import (
	"context"
	"encoding/xml"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/blobgw/blobgw/backends"
	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

// writeError turns err into the service's error response:
// x-ms-error-code always, the XML body except for HEAD and 304. Errors that
// are not *svcerr.Error are bugs or infrastructure failures: logged with
// the request id and answered 500 InternalError (or 503 ServerBusy when the
// client's context was cut or the store is unreachable), which SDKs retry.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, req *request, err error) {
	h := w.Header()
	if leasedb.IsNotModified(err) {
		h.Set("X-Ms-Error-Code", string(svcerr.ConditionNotMet))
		w.WriteHeader(http.StatusNotModified)
		return
	}
	e, ok := svcerr.As(err)
	if !ok {
		switch {
		case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
			// The client went away; nobody reads the answer.
			e = svcerr.New(svcerr.OperationTimedOut)
		case errors.Is(err, backends.ErrUnavailable), errors.Is(err, leasedb.ErrUnavailable), outOfFiles(err):
			s.log.Warn("dependency unavailable", "request_id", req.id, "err", err)
			e = svcerr.New(svcerr.ServerBusy)
		default:
			s.log.Error("internal error", "request_id", req.id, "method", r.Method, "uri", redactURI(r.RequestURI), "err", err)
			e = svcerr.New(svcerr.InternalError)
		}
	} else if e.Status() >= 500 {
		s.log.Warn("server error", "request_id", req.id, "code", e.Code, "err", err)
	}
	h.Set("X-Ms-Error-Code", string(e.Code))
	if r.Method == http.MethodHead {
		w.WriteHeader(e.Status())
		return
	}
	body := errorBody(e, req.id)
	h.Set("Content-Type", "application/xml")
	h.Del("Content-Length")
	if e.Status() != http.StatusRequestedRangeNotSatisfiable {
		h.Del("Content-Range")
	}
	w.WriteHeader(e.Status())
	_, _ = w.Write(body)
}

func errorBody(e *svcerr.Error, requestID string) []byte {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?><Error><Code>`)
	xmlEscape(&b, string(e.Code))
	b.WriteString(`</Code><Message>`)
	// Azure ends the message with RequestId and Time lines, the newlines
	// sent as they are (xml.EscapeText would write &#xA;).
	xmlEscape(&b, e.Message)
	b.WriteString("\nRequestId:")
	xmlEscape(&b, requestID)
	b.WriteString("\nTime:" + time.Now().UTC().Format("2006-01-02T15:04:05.0000000Z"))
	b.WriteString(`</Message>`)
	for _, d := range e.Details {
		b.WriteString("<" + d[0] + ">")
		xmlEscape(&b, d[1])
		b.WriteString("</" + d[0] + ">")
	}
	b.WriteString(`</Error>`)
	return []byte(b.String())
}

func xmlEscape(b *strings.Builder, s string) {
	_ = xml.EscapeText(b, []byte(s))
}
