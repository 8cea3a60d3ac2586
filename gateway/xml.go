package gateway

import (
	"bytes"
	"encoding/xml"
	"errors"
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
// oversized body 413 RequestBodyTooLarge, a Content-MD5 or
// x-ms-content-crc64 the body does not match 400 Md5Mismatch /
// Crc64Mismatch (bodySums).
func readXML(r *http.Request, limit int64, v any, emptyOK bool) error {
	body, err := readSmallBody(r, limit)
	if err != nil {
		return err
	}
	if _, err := bodySums(r.Header, body); err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if emptyOK {
			return nil
		}
		return svcerr.New(svcerr.InvalidXmlDocument)
	}
	return unmarshalXMLDoc(body, v)
}

// readSmallBody reads a request body of at most limit bytes (an XML
// document) into memory: a longer one is 413 RequestBodyTooLarge, one that
// ends before its Content-Length 400 InvalidInput, as a short Put Blob
// body is (the client's failure, never a 500).
func readSmallBody(r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, svcerr.New(svcerr.RequestBodyTooLarge)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, svcerr.Newf(svcerr.InvalidInput, "The request body is shorter than Content-Length.")
	}
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > limit {
		return nil, svcerr.New(svcerr.RequestBodyTooLarge)
	}
	return body, nil
}

// unmarshalXMLDoc decodes body's root element into v, as xml.Unmarshal
// does, and refuses a body that is not one XML document: xml.Unmarshal
// stops at the root's end and never sees a second root or text after it
// ("<Tags>...</Tags>junk"). Either, and malformed XML, is 400
// InvalidXmlDocument.
func unmarshalXMLDoc(body []byte, v any) error {
	dec := xml.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return svcerr.New(svcerr.InvalidXmlDocument)
	}
	return xmlDocEnd(dec)
}

// xmlDocEnd reads what follows a document's root element: comments,
// processing instructions and white space only, up to the end.
func xmlDocEnd(dec *xml.Decoder) error {
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return svcerr.New(svcerr.InvalidXmlDocument)
		}
		switch t := tok.(type) {
		case xml.Comment, xml.ProcInst:
		case xml.CharData:
			if len(bytes.TrimSpace(t)) != 0 {
				return svcerr.New(svcerr.InvalidXmlDocument)
			}
		default:
			return svcerr.New(svcerr.InvalidXmlDocument)
		}
	}
}
