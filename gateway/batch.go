package gateway

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/blobgw/blobgw/gateway/auth"
	"github.com/blobgw/blobgw/svcerr"
	"github.com/google/uuid"
)

// Blob Batch: POST ?comp=batch (the account) or
// ?restype=container&comp=batch (one container) with a multipart/mixed
// body of up to 256 application/http parts, each a Delete Blob or each a
// Set Blob Tier request. The answer is 202 with a multipart/mixed body:
// one part per sub-request, in order, carrying its Content-ID and the
// sub-request's own status line, headers and error body.
//
// Every sub-request runs through the same dispatch as a request of its
// own (Server.serve: address, operation, authorization, refusals,
// handler), authorized on its own: its own Shared Key Authorization, its
// own SAS, or else the batch request's SAS, whose permissions it then
// needs. The body is read and checked whole before any sub-request runs,
// so a batch refused for its body (malformed, more than 256 parts, mixed
// or unsupported operations, a part outside the batch's account or
// container) runs nothing. Azure answers such a batch 202 with a single
// part without Content-ID that carries the 400 (the SDKs' batch clients
// read it as the batch's error); the parts of a valid batch are answered
// as each sub-request finishes, so the response streams.

const (
	// maxBatchParts is Blob Batch's limit on sub-requests.
	maxBatchParts = 256
	// maxBatchPart bounds one part: a Delete Blob or Set Blob Tier
	// request is a request line and headers, never a body.
	maxBatchPart = 64 << 10
	// maxBatchBody bounds a whole batch body: 256 sub-requests of
	// headers are far below it, and no part is read into memory beyond
	// it.
	maxBatchBody = 4 << 20
	// maxBatchSubBody bounds what a sub-response may write: Delete Blob
	// and Set Blob Tier answer with headers and, on failure, a short
	// error document.
	maxBatchSubBody = 64 << 10
)

// batchOps are the operations a batch may carry.
var batchOps = map[string]bool{"DeleteBlob": true, "SetBlobTier": true}

// subRequest is one parsed part of a batch.
type subRequest struct {
	contentID string
	r         *http.Request
}

// submitBatch serves Blob Batch (its row in the operations table).
func (s *Server) submitBatch(w http.ResponseWriter, r *http.Request, req *request) error {
	return batchHandler(s, w, r, req)
}

// batchHandler is serveBatch, set by init: the sub-requests go through
// the operations table, which names submitBatch, so a direct call would
// make the table's initialization depend on itself.
var batchHandler func(s *Server, w http.ResponseWriter, r *http.Request, req *request) error

func init() { batchHandler = (*Server).serveBatch }

func (s *Server) serveBatch(w http.ResponseWriter, r *http.Request, req *request) error {
	if r.Method != http.MethodPost {
		return svcerr.New(svcerr.UnsupportedHttpVerb)
	}
	boundary, err := batchBoundary(r.Header.Get("Content-Type"))
	if err != nil {
		return err
	}
	if r.ContentLength > maxBatchBody {
		return svcerr.New(svcerr.RequestBodyTooLarge)
	}
	subs, batchErr := s.parseBatch(r, req, boundary)

	respBoundary := "batchresponse_" + uuid.NewString()
	w.Header().Set("Content-Type", "multipart/mixed; boundary="+respBoundary)
	w.WriteHeader(http.StatusAccepted)
	mw := multipart.NewWriter(w)
	if err := mw.SetBoundary(respBoundary); err != nil {
		return err // cannot happen: the boundary is short and plain
	}
	if batchErr != nil {
		// The whole batch is refused: one part, no Content-ID.
		e, ok := svcerr.As(batchErr)
		if !ok {
			s.log.Error("batch", "request_id", req.id, "err", batchErr)
			e = svcerr.New(svcerr.InternalError)
		}
		rec := newSubRecorder()
		rec.Header().Set("x-ms-request-id", req.id)
		rec.Header().Set("x-ms-version", w.Header().Get("x-ms-version"))
		s.writeError(rec, r, req, e)
		if err := rec.writePart(mw, ""); err != nil {
			return nil // the client went away; the status is out
		}
		_ = mw.Close()
		return nil
	}
	flusher := http.NewResponseController(w)
	for _, sub := range subs {
		if r.Context().Err() != nil {
			return nil // the client went away: run no more
		}
		rec := newSubRecorder()
		s.serveSub(rec, sub.r, req)
		if err := rec.writePart(mw, sub.contentID); err != nil {
			return nil
		}
		_ = flusher.Flush()
	}
	_ = mw.Close()
	return nil
}

// batchBoundary reads the boundary of a Blob Batch Content-Type, which
// must be multipart/mixed with one.
func batchBoundary(ct string) (string, error) {
	if ct == "" {
		return "", svcerr.Header(svcerr.MissingRequiredHeader, "Content-Type", "")
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || !strings.EqualFold(mt, "multipart/mixed") || params["boundary"] == "" {
		return "", svcerr.Header(svcerr.InvalidHeaderValue, "Content-Type", ct)
	}
	return params["boundary"], nil
}

// parseBatch reads the whole batch body into sub-requests and checks it
// as one: any error refuses the batch before a sub-request runs.
func (s *Server) parseBatch(r *http.Request, batch *request, boundary string) ([]subRequest, error) {
	invalid := func(format string, args ...any) error {
		return svcerr.Newf(svcerr.InvalidInput, "One of the request inputs is not valid: "+format, args...)
	}
	mr := multipart.NewReader(&capReader{r: r.Body, left: maxBatchBody}, boundary)
	var subs []subRequest
	op := ""
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if _, ok := svcerr.As(err); ok || r.Context().Err() != nil {
				return nil, err // a stalled or oversized body, a client gone
			}
			return nil, invalid("the batch body is not a multipart/mixed document with its boundary (%v).", err)
		}
		if len(subs) == maxBatchParts {
			return nil, svcerr.New(svcerr.ExceedsMaxBatchRequestCount)
		}
		n := len(subs)
		if ct := part.Header.Get("Content-Type"); ct != "" && !strings.EqualFold(strings.TrimSpace(ct), "application/http") {
			return nil, invalid("part %d has Content-Type %q; a batch part is application/http.", n, ct)
		}
		if te := part.Header.Get("Content-Transfer-Encoding"); te != "" && !strings.EqualFold(strings.TrimSpace(te), "binary") {
			return nil, invalid("part %d has Content-Transfer-Encoding %q; only binary is accepted.", n, te)
		}
		id := strings.TrimSpace(part.Header.Get("Content-ID"))
		if id == "" {
			return nil, invalid("part %d has no Content-ID.", n)
		}
		raw, err := io.ReadAll(io.LimitReader(part, maxBatchPart+1))
		if err != nil {
			if _, ok := svcerr.As(err); ok || r.Context().Err() != nil {
				return nil, err
			}
			return nil, invalid("part %d cannot be read (%v).", n, err)
		}
		if len(raw) > maxBatchPart {
			return nil, invalid("part %d is longer than %d bytes.", n, maxBatchPart)
		}
		sr, err := newSubHTTPRequest(r, raw)
		if err != nil {
			return nil, invalid("part %d is not an HTTP request (%v).", n, err)
		}
		name, err := batchSubOperation(s, sr, batch)
		if err != nil {
			return nil, invalid("part %d: %v", n, err)
		}
		switch {
		case name == "":
			// Its address does not parse: it fails on its own, in its
			// part, and runs nothing.
		case op == "":
			op = name
		case name != op:
			return nil, svcerr.New(svcerr.AllBatchSubRequestsShouldBeSameApi)
		}
		if name != "" && batch.sas && sr.Header.Get("Authorization") == "" && !auth.IsSAS(sr.URL.Query()) {
			// Only a query that parses: re-encoding one that does not
			// would drop its malformed pairs and run a request never
			// checked here (a Delete Container, say).
			inheritSAS(sr, r)
		}
		subs = append(subs, subRequest{contentID: id, r: sr})
	}
	if len(subs) == 0 {
		return nil, invalid("the batch holds no sub-request.")
	}
	return subs, nil
}

// newSubHTTPRequest parses one part's request line and headers. The
// sub-request reaches the server the batch reached: its host, client
// address and TLS state are the batch's, so path-style addressing, a
// SAS's sip and spr, and Shared Key's canonical resource work as for a
// request of its own.
func newSubHTTPRequest(batch *http.Request, raw []byte) (*http.Request, error) {
	if !bytes.Contains(raw, []byte("\n\n")) && !bytes.Contains(raw, []byte("\r\n\r\n")) {
		// A part cut before its blank line: http.ReadRequest would
		// accept the headers read so far.
		raw = append(raw, "\r\n\r\n"...)
	}
	sr, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
	if err != nil {
		return nil, err
	}
	if sr.ContentLength > 0 || len(sr.TransferEncoding) > 0 {
		return nil, errors.New("a Delete Blob or Set Blob Tier sub-request has no body")
	}
	if !strings.HasPrefix(sr.RequestURI, "/") {
		// The absolute form names a host; the sub-request goes to the
		// batch's.
		u, err := url.Parse(sr.RequestURI)
		if err != nil || u.Path == "" {
			return nil, fmt.Errorf("request target %q is not a path", sr.RequestURI)
		}
		sr.RequestURI = u.EscapedPath()
		if u.RawQuery != "" {
			sr.RequestURI += "?" + u.RawQuery
		}
		sr.URL = &url.URL{Path: u.Path, RawPath: u.RawPath, RawQuery: u.RawQuery}
	}
	sr.Host = batch.Host
	sr.URL.Host = ""
	sr.RemoteAddr = batch.RemoteAddr
	sr.TLS = batch.TLS
	sr.Body = http.NoBody
	sr.ContentLength = 0
	return sr.WithContext(batch.Context()), nil
}

// batchSubOperation resolves a sub-request's operation as serve will: it
// must be Delete Blob or Set Blob Tier, in the batch's account and, at
// container scope, in the batch's container. "" with no error: the
// sub-request's address does not parse, which its own answer reports.
func batchSubOperation(s *Server, sr *http.Request, batch *request) (string, error) {
	sreq := &request{}
	var err error
	if sreq.query, err = parseQuery(sr.URL.RawQuery); err != nil {
		return "", nil
	}
	if err := s.parseAddress(sr, sreq); err != nil {
		return "", nil
	}
	if sreq.account != batch.account {
		return "", fmt.Errorf("the sub-request addresses account %q, not the batch's.", sreq.account)
	}
	if batch.container != "" && sreq.container != batch.container {
		return "", fmt.Errorf("the sub-request addresses container %q; a container's batch holds requests for its own blobs only.", sreq.container)
	}
	op, err := resolve(sr, sreq)
	if err != nil || !batchOps[op.name] {
		what := sr.Method + " " + sr.URL.EscapedPath()
		return "", fmt.Errorf("%s is not a Delete Blob or Set Blob Tier request; a batch holds only those.", what)
	}
	return op.name, nil
}

// inheritSAS gives a sub-request without a credential of its own the
// batch request's SAS token.
func inheritSAS(sr, batch *http.Request) {
	q := sr.URL.Query()
	for k, v := range auth.SASParams(batch.URL.Query()) {
		q[k] = v
	}
	sr.URL.RawQuery = q.Encode()
}

// serveSub runs one sub-request as ServeHTTP runs a request: its own
// request id, the batch's client (scheme and address: a SAS's sip and
// spr are checked against it) and x-ms-version (Blob Batch: the batch's
// version is used for all sub-requests), the same dispatch, and a panic
// answered in its own part.
func (s *Server) serveSub(w http.ResponseWriter, r *http.Request, batch *request) {
	req := &request{id: uuid.NewString(), start: time.Now(), version: batch.version, peer: batch.peer}
	hv := newHeaderVals(w.Header(), 3)
	setRequestHeaders(&hv, r, req)
	rw := &statusWriter{ResponseWriter: w}
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("panic serving batch sub-request", "request_id", req.id, "batch_request_id", batch.id, "panic", p)
			if !rw.wrote {
				s.writeError(rw, r, req, svcerr.New(svcerr.InternalError))
			}
		}
		s.log.Debug("batch sub-request", "request_id", req.id, "batch_request_id", batch.id, "method", r.Method,
			"uri", r.RequestURI, "operation", req.opName(), "status", rw.status, "duration", time.Since(req.start))
	}()
	if err := s.serve(rw, r, req); err != nil {
		s.writeError(rw, r, req, err)
	}
}

// capReader fails a batch body longer than its cap (a chunked one whose
// length was not announced) with 413 RequestBodyTooLarge.
type capReader struct {
	r    io.Reader
	left int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		// At the cap: only a body that goes on is too large.
		var one [1]byte
		n, err := c.r.Read(one[:])
		if n > 0 {
			return 0, svcerr.New(svcerr.RequestBodyTooLarge)
		}
		return 0, err
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// subRecorder holds one sub-response until its part is written.
type subRecorder struct {
	h      http.Header
	status int
	body   bytes.Buffer
}

func newSubRecorder() *subRecorder { return &subRecorder{h: http.Header{}} }

func (rec *subRecorder) Header() http.Header { return rec.h }

func (rec *subRecorder) WriteHeader(code int) {
	if rec.status == 0 {
		rec.status = code
	}
}

func (rec *subRecorder) Write(p []byte) (int, error) {
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	if rec.body.Len()+len(p) > maxBatchSubBody {
		return 0, errors.New("batch sub-response body too long")
	}
	return rec.body.Write(p)
}

// writePart writes the sub-response as one application/http part: the
// status line (an error's reason phrase is its message, as Azure writes
// it), the headers in name order and the body with its Content-Length.
func (rec *subRecorder) writePart(mw *multipart.Writer, contentID string) error {
	ph := textproto.MIMEHeader{"Content-Type": {"application/http"}}
	if contentID != "" {
		// Spelled as Azure spells it (Set would write Content-Id): the
		// SDKs' batch parsers look for this name.
		ph["Content-ID"] = []string{contentID}
	}
	pw, err := mw.CreatePart(ph)
	if err != nil {
		return err
	}
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	reason := http.StatusText(status)
	if code := rec.h.Get("x-ms-error-code"); code != "" && svcerr.Known(svcerr.Code(code)) {
		reason = svcerr.New(svcerr.Code(code)).Message
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", status, reason)
	rec.h.Set("Content-Length", strconv.Itoa(rec.body.Len()))
	names := make([]string, 0, len(rec.h))
	for k := range rec.h {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		// x-ms-* names in lower case, as Azure writes them: the
		// JavaScript SDK's batch parser compares x-ms-error-code
		// case-sensitively.
		name := k
		if l := strings.ToLower(k); strings.HasPrefix(l, "x-ms-") {
			name = l
		}
		for _, v := range rec.h[k] {
			fmt.Fprintf(&b, "%s: %s\r\n", name, v)
		}
	}
	b.WriteString("\r\n")
	b.Write(rec.body.Bytes())
	_, err = pw.Write(b.Bytes())
	return err
}
