package gateway

import (
	"bytes"
	"encoding/xml"
	"io"
	"net/http"

	"github.com/blobgw/blobgw/svcerr"
)

// writeXML encodes v with the XML declaration Azure sends.
func writeXML(w http.ResponseWriter, r *http.Request, status int, v any) error {
	var buf bytes.Buffer
	buf.WriteString(`<?xml version="1.0" encoding="utf-8"?>`)
	if err := xml.NewEncoder(&buf).Encode(v); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
	return nil
}

// readXML decodes a request body of at most limit bytes. An empty body is
// allowed when emptyOK. Malformed XML is 400 InvalidXmlDocument, an
// oversized body 413 RequestBodyTooLarge.
func readXML(r *http.Request, limit int64, v any, emptyOK bool) error {
	if r.ContentLength > limit {
		return svcerr.New(svcerr.RequestBodyTooLarge)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return err
	}
	if int64(len(body)) > limit {
		return svcerr.New(svcerr.RequestBodyTooLarge)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if emptyOK {
			return nil
		}
		return svcerr.New(svcerr.InvalidXmlDocument)
	}
	if err := xml.Unmarshal(body, v); err != nil {
		return svcerr.New(svcerr.InvalidXmlDocument)
	}
	return nil
}
