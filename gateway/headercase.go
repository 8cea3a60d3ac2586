package gateway

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"slices"
	"strings"
	"sync"
)

// Azure keeps the case a metadata name was sent in (x-ms-meta-MyKey comes
// back as x-ms-meta-MyKey and <MyKey> in listings) and compares names
// ignoring case ("Setting and retrieving properties and metadata for Blob
// service resources"). Go's server canonicalizes request header names
// (X-Ms-Meta-Mykey) before a handler runs and keeps no raw form, so the
// spelling is recovered below it: PreserveHeaderCase records the bytes a
// connection reads, except while a handler reads a request body, and
// ServeHTTP finds its own header block in that record (rawHeaderNames).
// The record only ever
// chooses between spellings of a name Go parsed: names and values always
// come from r.Header, so a wrong or missing record at worst lowercases a
// name, as the gateway did before.

// headerRecordMax bounds a connection's record: the last bytes read, never
// more. A header block longer than this is not found (names are lowercased).
const headerRecordMax = 64 << 10

// headerRecordReuseMax is the largest record buffer a connection keeps
// between requests (giveBack).
const headerRecordReuseMax = 8 << 10

// maxHeaderCandidates bounds the request lines tried per request: a body tail
// full of copies of the request line costs that many block parses at most.
const maxHeaderCandidates = 16

// PreserveHeaderCase wraps l so that the gateway keeps the case of metadata
// names its clients send. Set http.Server.ConnContext to ConnContext as well;
// a Server reached any other way lowercases metadata names. Wrap the
// plaintext listener of an HTTP/1 server: behind TLS the record would hold
// ciphertext (names then stay lowercased, nothing worse).
func PreserveHeaderCase(l net.Listener) net.Listener { return recordingListener{l} }

// ConnContext is the http.Server.ConnContext hook that goes with
// PreserveHeaderCase: it makes a recording connection reachable from the
// requests it carries.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if rc, ok := c.(*recordingConn); ok {
		return context.WithValue(ctx, recordingConnKey{}, rc)
	}
	return ctx
}

type recordingConnKey struct{}

type recordingListener struct{ net.Listener }

func (l recordingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &recordingConn{Conn: c, on: true}, nil
}

// recordingConn records what is read from the socket while on. Go's server
// reads from the connection in a background goroutine while a handler runs,
// so every field is behind mu.
type recordingConn struct {
	net.Conn

	mu  sync.Mutex
	on  bool
	buf []byte // the last bytes read while on, at most headerRecordMax

	// For tests (export_test.go): the longest the record has been and
	// every byte ever copied into it.
	peak   int
	copied int64
}

func (c *recordingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		// The flag is read when the bytes arrive, not when the read
		// started: the server's background read blocks across requests.
		c.mu.Lock()
		if c.on {
			c.record(p[:n])
		}
		c.mu.Unlock()
	}
	return n, err
}

// record appends p, dropping the oldest bytes beyond headerRecordMax.
func (c *recordingConn) record(p []byte) {
	c.copied += int64(len(p))
	if len(p) > headerRecordMax {
		p = p[len(p)-headerRecordMax:]
	}
	if drop := len(c.buf) + len(p) - headerRecordMax; drop > 0 {
		c.buf = c.buf[:copy(c.buf, c.buf[drop:])]
	}
	if need := len(c.buf) + len(p); need > cap(c.buf) {
		// Grow by hand: append's growth could overshoot the bound.
		nb := make([]byte, len(c.buf), min(max(2*cap(c.buf), need, 4096), headerRecordMax))
		copy(nb, c.buf)
		c.buf = nb
	}
	c.buf = append(c.buf, p...)
	c.peak = max(c.peak, len(c.buf))
}

// take hands the record over, empties it and records from now on only if
// on is set (no body follows the header just read).
func (c *recordingConn) take(on bool) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.buf
	c.buf, c.on = nil, on
	return b
}

// giveBack returns a record take handed over, once it is read, so that
// the connection's next request records into the same buffer instead of
// growing a new one. Bytes recorded meanwhile (a request without a body
// records on) keep their own buffer. A buffer grown past
// headerRecordReuseMax (a discarded body's tail was recorded) is let go: an
// idle connection holds at most that much.
func (c *recordingConn) giveBack(b []byte) {
	if cap(b) > headerRecordReuseMax {
		return
	}
	c.mu.Lock()
	if c.buf == nil {
		c.buf = b[:0]
	}
	c.mu.Unlock()
}

// resume records again: the next request's header is what comes next.
func (c *recordingConn) resume() {
	c.mu.Lock()
	c.on = true
	c.mu.Unlock()
}

// ReadFrom keeps the socket's io.ReaderFrom reachable: the server sends
// Get Blob bodies from disk with sendfile(2) through it.
func (c *recordingConn) ReadFrom(r io.Reader) (int64, error) { return io.Copy(c.Conn, r) }

// CloseWrite keeps the half-close the server uses to deliver an error
// response before closing a connection whose body it will not read.
func (c *recordingConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// rawHeaderNames is ServeHTTP's hook: it takes the record of the connection
// r came on, returns the spelling of r's x-ms-meta-* header names as sent
// (lowercased name → name as sent; nil when unknown) and stops recording
// while r's body is read: the body is not copied. Call the returned func
// when the handler returns, so the next request's header is recorded.
// Without a body recording stays on: the server may already be waiting in
// a background read for the next request's first byte, and a response sent
// whole before the handler returns (Get Blob) lets that byte arrive early.
func rawHeaderNames(r *http.Request) (map[string]string, func()) {
	c, _ := r.Context().Value(recordingConnKey{}).(*recordingConn)
	if c == nil || r.ProtoMajor != 1 {
		return nil, func() {}
	}
	hasBody := r.Body != nil && r.Body != http.NoBody
	rec := c.take(!hasBody)
	resume := func() {}
	if hasBody {
		resume = c.resume
	}
	var names map[string]string
	if hasMetaHeader(r.Header) {
		names = findMetaNames(rec, r) // copies what it keeps
	}
	c.giveBack(rec)
	return names, resume
}

func hasMetaHeader(h http.Header) bool {
	for k := range h {
		if hasPrefixFold(k, metaPrefix) {
			return true
		}
	}
	return false
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// findMetaNames finds r's header block in rec and returns the x-ms-meta-*
// names it spells (lowercased → as sent, first spelling of each). rec may
// hold, before the block, the tail of an earlier body the server discarded
// (up to headerRecordMax) and, after it, what the server read ahead: the
// start of r's body or pipelined requests (a few KiB); any of them may
// contain lines that look like r's. A block counts only if it starts with
// r's request line, ends with a blank line inside rec, and parses to exactly
// r's x-ms-* headers (names and values: x-ms-date, x-ms-client-request-id
// and the metadata itself). Candidates are tried from the end, where the
// read-ahead is short, and the last that counts is taken.
func findMetaNames(rec []byte, r *http.Request) map[string]string {
	line := []byte(r.Method + " " + r.RequestURI + " " + r.Proto)
	end := len(rec)
	for tries := 0; tries < maxHeaderCandidates; tries++ {
		i := bytes.LastIndex(rec[:end], line)
		if i < 0 {
			return nil
		}
		end = i + len(line) - 1 // the next candidate starts before this one
		rest := rec[i+len(line):]
		switch {
		case bytes.HasPrefix(rest, []byte("\r\n")):
			rest = rest[2:]
		case bytes.HasPrefix(rest, []byte("\n")):
			rest = rest[1:]
		default:
			continue
		}
		if names, ok := blockMetaNames(rest, r.Header); ok {
			return names
		}
	}
	return nil
}

// blockMetaNames reads the header lines at the start of b, as net/textproto
// splits them (LF or CRLF endings; a line starting with a space or tab
// continues the previous one; the name ends at the first colon). It reports
// false when b ends before the blank line, a line has no colon (Go refuses
// such a header, so this is not the block it parsed), or the lines do not
// parse to want's x-ms-* headers.
func blockMetaNames(b []byte, want http.Header) (map[string]string, bool) {
	names := map[string]string{}
	end := -1
	for pos := 0; end < 0; {
		nl := bytes.IndexByte(b[pos:], '\n')
		if nl < 0 {
			return nil, false // cut off by the end of the record
		}
		ln := bytes.TrimSuffix(b[pos:pos+nl], []byte("\r"))
		pos += nl + 1
		switch {
		case len(ln) == 0:
			end = pos
		case ln[0] == ' ' || ln[0] == '\t':
			// a continuation: no name on this line
		default:
			k, _, ok := bytes.Cut(ln, []byte(":"))
			if !ok {
				return nil, false
			}
			if hasPrefixFold(string(k), metaPrefix) {
				lk := strings.ToLower(string(k))
				if _, seen := names[lk]; !seen {
					names[lk] = string(k)
				}
			}
		}
	}
	got, err := textproto.NewReader(bufio.NewReader(bytes.NewReader(b[:end]))).ReadMIMEHeader()
	if err != nil || !sameXMSHeaders(http.Header(got), want) {
		return nil, false
	}
	return names, true
}

// sameXMSHeaders reports whether a and b hold the same x-ms-* headers with
// the same values in the same order.
func sameXMSHeaders(a, b http.Header) bool {
	n := 0
	for k, av := range a {
		if hasPrefixFold(k, "x-ms-") {
			n++
			if !slices.Equal(av, b[k]) {
				return false
			}
		}
	}
	for k := range b {
		if hasPrefixFold(k, "x-ms-") {
			n--
		}
	}
	return n == 0
}
