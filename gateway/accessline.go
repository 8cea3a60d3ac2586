package gateway

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
)

// The access line written without log/slog. Through slog one line cost
// about 20 µs of a small request on the loaded development machine: a
// Record of 14 attributes, the redacting handler's copy of it, and slog's
// generic formatting of each value. NewLogHandler's handler is slog's text
// or JSON handler with a side door: the Server finds it under its
// redacting handler and appends the access line's fields into a pooled
// buffer itself, byte for byte what slog writes for the same attributes
// (TestAccessLineMatchesSlog), in one Write. Every other line still goes
// through slog.

// NewLogHandler is slog's text handler over w, or its JSON handler when
// format is "json", whose access lines the gateway writes directly. Lines
// are serialized on w with one Write each, as slog's handlers do. opts as
// for slog; with ReplaceAttr or AddSource set, or once WithAttrs or
// WithGroup is applied, the access line goes through slog like any other
// line.
func NewLogHandler(w io.Writer, format string, opts *slog.HandlerOptions) slog.Handler {
	if opts == nil {
		opts = &slog.HandlerOptions{}
	}
	lw := &lockedWriter{w: w}
	h := &logHandler{out: lw, json: format == "json", direct: opts.ReplaceAttr == nil && !opts.AddSource}
	if h.json {
		h.Handler = slog.NewJSONHandler(lw, opts)
	} else {
		h.Handler = slog.NewTextHandler(lw, opts)
	}
	return h
}

// logHandler is slog's handler (all lines but the access line) and the
// writer they share with the access line.
type logHandler struct {
	slog.Handler
	out    *lockedWriter
	json   bool
	direct bool // the access line may bypass slog (no ReplaceAttr, no AddSource)
}

// WithAttrs and WithGroup give slog's handler alone: its lines carry the
// attributes or the group, which the access line's own formatting does not.
func (h *logHandler) WithAttrs(as []slog.Attr) slog.Handler { return h.Handler.WithAttrs(as) }
func (h *logHandler) WithGroup(name string) slog.Handler    { return h.Handler.WithGroup(name) }

// lockedWriter serializes the Writes of slog's handler and of the access
// line on one writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// accessWriter is the direct access line writer under log (a Server's
// logger, wrapped in redactHandler), or nil when the line must go through
// slog.
func accessWriter(log *slog.Logger) *logHandler {
	h := log.Handler()
	if r, ok := h.(redactHandler); ok {
		h = r.h
	}
	if lh, ok := h.(*logHandler); ok && lh.direct {
		return lh
	}
	return nil
}

// accessFields are the access line's values, in the line's order after
// time, level and msg.
type accessFields struct {
	requestID, clientRequestID, method, account, operation, container, blob string
	status                                                                  int
	errorCode                                                               string
	bytesIn, bytesOut                                                       int64
	duration                                                                time.Duration
	client                                                                  string
	https                                                                   bool
}

// attrs are the fields as the slog attributes of the access line (the
// path of a logger that is not NewLogHandler's).
func (f *accessFields) attrs() []slog.Attr {
	return []slog.Attr{
		slog.String("request_id", f.requestID),
		slog.String("client_request_id", f.clientRequestID),
		slog.String("method", f.method),
		slog.String("account", f.account),
		slog.String("operation", f.operation),
		slog.String("container", f.container),
		slog.String("blob", f.blob),
		slog.Int("status", f.status),
		slog.String("error_code", f.errorCode),
		slog.Int64("bytes_in", f.bytesIn),
		slog.Int64("bytes_out", f.bytesOut),
		slog.Duration("duration", f.duration),
		slog.String("client", f.client),
		slog.Bool("https", f.https),
	}
}

// lineBufs holds the access line buffers. A line longer than maxPooledLine
// (a blob name near its 1,024 characters quoted with escapes, a long
// client request id) is not kept.
var lineBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

const maxPooledLine = 16 << 10

// writeAccess writes the access line at time t in one Write.
func (h *logHandler) writeAccess(t time.Time, f *accessFields) {
	bp := lineBufs.Get().(*[]byte)
	b := h.appendAccess((*bp)[:0], t, f)
	h.out.Write(b) // as slog's handlers, whose error the logger drops
	if cap(b) <= maxPooledLine {
		*bp = b
		lineBufs.Put(bp)
	}
}

// appendAccess appends the access line, newline included, as slog's
// handler would write the record "request" at level INFO with the fields'
// attrs, each string passed through Redact.
func (h *logHandler) appendAccess(b []byte, t time.Time, f *accessFields) []byte {
	if h.json {
		b = append(b, `{"time":"`...)
		b = appendTimeNano(b, t)
		b = append(b, `","level":"INFO","msg":"request"`...)
	} else {
		b = append(b, "time="...)
		b = appendTimeMillis(b, t)
		b = append(b, " level=INFO msg=request"...)
	}
	b = h.appendStr(b, "request_id", f.requestID)
	b = h.appendStr(b, "client_request_id", f.clientRequestID)
	b = h.appendStr(b, "method", f.method)
	b = h.appendStr(b, "account", f.account)
	b = h.appendStr(b, "operation", f.operation)
	b = h.appendStr(b, "container", f.container)
	b = h.appendStr(b, "blob", f.blob)
	b = strconv.AppendInt(h.appendKey(b, "status"), int64(f.status), 10)
	b = h.appendStr(b, "error_code", f.errorCode)
	b = strconv.AppendInt(h.appendKey(b, "bytes_in"), f.bytesIn, 10)
	b = strconv.AppendInt(h.appendKey(b, "bytes_out"), f.bytesOut, 10)
	b = h.appendKey(b, "duration")
	if h.json {
		b = strconv.AppendInt(b, int64(f.duration), 10) // nanoseconds, as encoding/json
	} else {
		b = append(b, f.duration.String()...) // inlined: the string stays on the stack
	}
	b = h.appendStr(b, "client", f.client)
	b = strconv.AppendBool(h.appendKey(b, "https"), f.https)
	if h.json {
		b = append(b, '}')
	}
	return append(b, '\n')
}

func (h *logHandler) appendKey(b []byte, key string) []byte {
	if h.json {
		b = append(b, ',', '"')
		b = append(b, key...)
		return append(b, '"', ':')
	}
	b = append(b, ' ')
	b = append(b, key...)
	return append(b, '=')
}

func (h *logHandler) appendStr(b []byte, key, s string) []byte {
	b = h.appendKey(b, key)
	if plainText(s) { // the usual case: one pass, as it is
		if h.json {
			b = append(b, '"')
			b = append(b, s...)
			return append(b, '"')
		}
		return append(b, s...)
	}
	s = Redact(s)
	if h.json {
		b = append(b, '"')
		b = appendJSONEscaped(b, s)
		return append(b, '"')
	}
	if textNeedsQuote(s) {
		return strconv.AppendQuote(b, s)
	}
	return append(b, s...)
}

// plainText reports, in one pass, whether s is written as it is in both
// formats and holds nothing Redact masks: not empty, printable ASCII
// without space, '"', '\\' and '=', and neither "sig" nor "key" in any
// case. The line's usual strings (ids, names, addresses) are.
func plainText(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || c == '"' || c == '\\' || c == '=' {
			return false
		}
		if l := c | 0x20; (l == 's' || l == 'k') && i+2 < len(s) {
			x, y := s[i+1]|0x20, s[i+2]|0x20
			if l == 's' && x == 'i' && y == 'g' || l == 'k' && x == 'e' && y == 'y' {
				return false
			}
		}
	}
	return s != ""
}

// textNeedsQuote reports whether slog's text handler quotes s: when it is
// empty, holds a space, '=', '"' or an ASCII control character (DEL and
// '\\' are left as they are), or a rune that is invalid, a space or not
// printable.
func textNeedsQuote(s string) bool {
	if s == "" {
		return true
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == ' ' || c == '=' || c == '"' {
				return true
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return true
		}
		i += n
	}
	return false
}

// appendJSONEscaped appends s escaped as slog's JSON handler escapes a
// string: '"' and '\\' with a backslash, \n \r \t, other control
// characters as \u00XX, an invalid byte as \ufffd, U+2028 and U+2029 as
// \u2028 and \u2029; HTML characters are not escaped.
func appendJSONEscaped(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += n
			continue
		}
		i += n
		start = i
	}
	return append(b, s[start:]...)
}

// The time of the line, formatted once per second: the date and time to
// the second and the zone, around the fraction each line appends.

type secondText struct {
	unix int64
	loc  *time.Location
	date []byte // 2006-01-02T15:04:05
	zone []byte // Z07:00
}

var lastSecond atomic.Pointer[secondText]

func secondOf(t time.Time) *secondText {
	sec := t.Unix()
	if c := lastSecond.Load(); c != nil && c.unix == sec && c.loc == t.Location() {
		return c
	}
	c := &secondText{unix: sec, loc: t.Location(),
		date: t.AppendFormat(nil, "2006-01-02T15:04:05"), zone: t.AppendFormat(nil, "Z07:00")}
	lastSecond.Store(c)
	return c
}

// appendTimeMillis is slog's text handler time: RFC 3339 with the
// milliseconds, truncated, always three digits.
func appendTimeMillis(b []byte, t time.Time) []byte {
	c := secondOf(t)
	ms := t.Nanosecond() / 1e6
	b = append(b, c.date...)
	b = append(b, '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10))
	return append(b, c.zone...)
}

// appendTimeNano is slog's JSON handler time: time.RFC3339Nano, the
// fraction's trailing zeros cut, no fraction for a whole second.
func appendTimeNano(b []byte, t time.Time) []byte {
	c := secondOf(t)
	b = append(b, c.date...)
	if ns := t.Nanosecond(); ns != 0 {
		var d [10]byte
		d[0] = '.'
		for i := 9; i >= 1; i-- {
			d[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := 10
		for d[n-1] == '0' {
			n--
		}
		b = append(b, d[:n]...)
	}
	return append(b, c.zone...)
}

// logAccess writes the access line of a request through s's logger.
func (s *Server) logAccess(ctx context.Context, f *accessFields) {
	if a := accessWriter(s.log); a != nil {
		if a.Enabled(ctx, slog.LevelInfo) {
			a.writeAccess(time.Now(), f)
		}
		return
	}
	if s.log.Enabled(ctx, slog.LevelInfo) {
		s.log.LogAttrs(ctx, slog.LevelInfo, "request", f.attrs()...)
	}
}
