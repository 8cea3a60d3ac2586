package gateway

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"time"
)

// The access log is one info line per request, with what an operator
// needs to find it again (the x-ms-request-id the client saw, its
// x-ms-client-request-id) and what it did, never a credential: no URL with
// its query (a SAS carries sig=), no Authorization header, no
// x-ms-copy-source (its URL may carry a SAS) nor
// x-ms-copy-source-authorization.

// countingBody counts the request body bytes a handler read.
type countingBody struct {
	io.ReadCloser
	n int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	return n, err
}

// wrap makes b r.Body's counter; unwrap puts the original body back.
func (b *countingBody) wrap(r *http.Request) {
	if orig := r.Body; orig != nil && orig != http.NoBody {
		b.ReadCloser = orig
		r.Body = b
	}
}

func (b *countingBody) unwrap(r *http.Request) {
	if b.ReadCloser != nil {
		r.Body = b.ReadCloser
	}
}

// finish records a served request: the access log line and the request
// metrics.
func (s *Server) finish(w *statusWriter, r *http.Request, req *request, in *countingBody) {
	status := w.status
	if !w.wrote {
		// Nothing was written: Go's server answers 200 with no body.
		status = http.StatusOK
	}
	d := time.Since(req.start)
	code := w.Header().Get("X-Ms-Error-Code")
	op := req.opName()
	s.metrics.observeRequest(op, status, code, d, in.n, w.n)
	s.logAccess(r.Context(), &accessFields{
		requestID: req.id, clientRequestID: clientRequestID(r), method: r.Method, account: req.account,
		operation: op, container: req.container, blob: req.blob, status: status, errorCode: code,
		bytesIn: in.n, bytesOut: w.n, duration: d, client: req.peer.addr, https: req.peer.https,
	})
}

func clientRequestID(r *http.Request) string {
	if id := r.Header.Get("X-Ms-Client-Request-Id"); len(id) <= 1024 {
		return id
	}
	return ""
}

// Redaction. Every log line of the gateway passes through redactHandler,
// so a credential that reaches a message or an attribute by any path (an
// error that quotes a copy-source URL with its SAS, a request URI) is
// masked before it is written. Code that logs a URL redacts it as well
// (redactURI); this is the net under it.

var (
	// sig= in a query string (a SAS signature), in any case, also
	// %-encoded inside another URL (x-ms-copy-source).
	sigRE = regexp.MustCompile(`(?i)((?:^|[?&;\s"'=]|%26|%3f)sig(?:=|%3d))[^&\s"'#]*`)
	// The signature of a Shared Key (or Shared Key Lite) Authorization.
	sharedKeyRE = regexp.MustCompile(`(?i)(SharedKey(?:Lite)?\s+[^:\s]+:)[A-Za-z0-9+/=]+`)
	// Azure connection-string keys, account keys given as AccountKey=.
	accountKeyRE = regexp.MustCompile(`(?i)(AccountKey=)[^;\s"']+`)
)

// Redact masks SAS signatures, Shared Key signatures and account keys in s.
// Every access log attribute passes through it: an ASCII string with
// neither "sig" nor "key" in any case (what every pattern needs) is
// returned without running the expressions. Non-ASCII text always runs
// them: (?i) also folds U+017F (ſ) to s and U+212A (Kelvin) to k.
func Redact(s string) string {
	if !mayHoldCredential(s) {
		return s
	}
	return redactAll(s)
}

// redactAll runs every expression.
func redactAll(s string) string {
	s = sigRE.ReplaceAllString(s, "${1}REDACTED")
	s = sharedKeyRE.ReplaceAllString(s, "${1}REDACTED")
	return accountKeyRE.ReplaceAllString(s, "${1}REDACTED")
}

func mayHoldCredential(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return true
		}
	}
	return containsFoldASCII(s, "sig") || containsFoldASCII(s, "key")
}

// containsFoldASCII reports whether s contains sub (lowercase ASCII
// letters) in any case, without allocating.
func containsFoldASCII(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		j := 0
		for ; j < len(sub); j++ {
			if s[i+j]|0x20 != sub[j] {
				break
			}
		}
		if j == len(sub) {
			return true
		}
	}
	return false
}

// redactHandler is a slog.Handler that applies Redact to messages and
// string, error and stringer attribute values.
type redactHandler struct{ h slog.Handler }

// RedactingHandler wraps h so that nothing it writes carries a credential
// (see Redact).
func RedactingHandler(h slog.Handler) slog.Handler {
	if _, ok := h.(redactHandler); ok {
		return h
	}
	return redactHandler{h}
}

func (h redactHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h redactHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, Redact(rec.Message), rec.PC)
	// All attributes in one AddAttrs: one by one, the record's overflow
	// slice grows several times for the access line's 14.
	as := make([]slog.Attr, 0, rec.NumAttrs())
	rec.Attrs(func(a slog.Attr) bool {
		as = append(as, redactAttr(a))
		return true
	})
	out.AddAttrs(as...)
	return h.h.Handle(ctx, out)
}

func (h redactHandler) WithAttrs(as []slog.Attr) slog.Handler {
	rs := make([]slog.Attr, len(as))
	for i, a := range as {
		rs[i] = redactAttr(a)
	}
	return redactHandler{h.h.WithAttrs(rs)}
}

func (h redactHandler) WithGroup(name string) slog.Handler { return redactHandler{h.h.WithGroup(name)} }

func redactAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, Redact(v.String()))
	case slog.KindGroup:
		g := v.Group()
		rs := make([]slog.Attr, len(g))
		for i, x := range g {
			rs[i] = redactAttr(x)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(rs...)}
	case slog.KindAny:
		switch x := v.Any().(type) {
		case redacted:
			return slog.String(a.Key, string(x))
		case error:
			return slog.String(a.Key, Redact(x.Error()))
		case interface{ String() string }:
			return slog.String(a.Key, Redact(x.String()))
		case []string:
			rs := make([]string, len(x))
			for i, s := range x {
				rs[i] = Redact(s)
			}
			return slog.Any(a.Key, rs)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// redactURI is a request URI fit for a log: the SAS signature masked.
// The result is marked as redacted, so that the redacting handler writes
// it as it is instead of running the expressions over it, and building
// the URI's text, a second time.
func redactURI(uri string) redacted { return redacted(Redact(uri)) }

// redacted is text Redact has masked already; redactAttr writes it as a
// string.
type redacted string
