package gateway

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"math/rand"
	"strings"
	"testing"
	"time"
)

// slogAccessLine is the access line as it was written before the direct
// writer, and still is for any other logger: the record "request" with
// the fields' attributes through the redacting handler into slog's own
// handler.
func slogAccessLine(t *testing.T, json bool, at time.Time, f *accessFields) []byte {
	t.Helper()
	var buf bytes.Buffer
	var h slog.Handler = slog.NewTextHandler(&buf, nil)
	if json {
		h = slog.NewJSONHandler(&buf, nil)
	}
	rec := slog.NewRecord(at, slog.LevelInfo, "request", 0)
	rec.AddAttrs(f.attrs()...)
	if err := RedactingHandler(h).Handle(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// hostileText: what a client can put in a blob name or an
// x-ms-client-request-id, and what the line's other strings hold.
var hostileText = []string{
	"", "b1", "0b4c6a0e-5d5e-4b8a-9e61-0d2c3f1f2a7b", "with space", `say "hi"`, `back\slash`, "a=b", "line\nbreak",
	"cr\rlf\n", "tab\there", "nul\x00", "bell\x07", "del\x7f", "esc\x1b[31m", "invalid \xff\xfe utf-8", "cut \xe2\x82",
	"\xc0\xaf", "U+FFFD \ufffd literal", "line sep \u2028 para sep \u2029", "nel \u0085", "nbsp \u00a0",
	"zero width \u200b", "bom \ufeff", "ключ", "日本語/名前.txt", "emoji 🎉", "<html>&amp;</html>", "'single'",
	"dir/sub/file.txt", "%2F%20encoded", "?sig=abc%2Bdef%3D", "sv=2020&sig=secret&se=x", "x&SIG=secret",
	"https%3A%2F%2Fh%2Fb%3Fsp%3Dr%26sig%3Dsecret%26se%3D1", `"sig=quoted"`, "sig=", "ſig=folded", "signature",
	"SharedKey devstoreaccount1:c2lnbmF0dXJl+/=", "AccountName=a;AccountKey=Zm9v+/==;", "monkey key",
	strings.Repeat("long/", 205), strings.Repeat("a", 1024), strings.Repeat("x", 9000) + "?sp=r&sig=tail",
	"?sig=head" + strings.Repeat("&x=y", 2000), strings.Repeat("\"\n\xff", 300),
}

var accessTimes = []time.Time{
	time.Date(2026, 12, 1, 23, 5, 34, 0, time.UTC),
	time.Date(2026, 12, 1, 23, 5, 34, 1, time.UTC),
	time.Date(2026, 12, 1, 23, 5, 34, 999999999, time.UTC),
	time.Date(2026, 12, 1, 23, 5, 34, 1000000, time.UTC),
	time.Date(2026, 12, 1, 23, 5, 34, 120000000, time.FixedZone("IST", 5*3600+1800)),
	time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.FixedZone("PST", -8*3600)),
	time.Date(1969, 12, 31, 23, 59, 59, 900000000, time.UTC),
	time.Date(2026, 3, 29, 1, 59, 59, 999000000, time.Local),
	time.Now(),
}

var accessDurations = []time.Duration{0, 1, 999, time.Microsecond, 1500, 12345678, time.Second,
	time.Hour + 2*time.Minute + 3400*time.Millisecond, -time.Millisecond, 1<<63 - 1}

func checkAccessLine(t *testing.T, at time.Time, f *accessFields) {
	t.Helper()
	for _, json := range []bool{false, true} {
		want := slogAccessLine(t, json, at, f)
		got := (&logHandler{json: json}).appendAccess(nil, at, f)
		if !bytes.Equal(got, want) {
			t.Fatalf("json %v, fields %+v at %v:\n got %q\nwant %q", json, *f, at, got, want)
		}
	}
}

// TestAccessLineMatchesSlog: the directly written access line is, byte for
// byte, what slog's text and JSON handlers wrote through the redacting
// handler, over hostile strings in every string field, times with and
// without a fraction and in other zones, and durations of every unit.
func TestAccessLineMatchesSlog(t *testing.T) {
	base := accessFields{requestID: "5e3d3d3a-1c1b-4f4e-9a9a-0a0b0c0d0e0f", clientRequestID: "0b4c6a0e",
		method: "PUT", account: "devstoreaccount1", operation: "PutBlob", container: "cnt", blob: "b1",
		status: 201, bytesIn: 4096, duration: 1234567, client: "127.0.0.1"}
	for _, at := range accessTimes {
		for _, d := range accessDurations {
			f := base
			f.duration, f.https, f.status, f.bytesOut = d, d%2 == 0, int(d%600), int64(d)
			checkAccessLine(t, at, &f)
		}
	}
	for _, s := range hostileText {
		for i := 0; i < 9; i++ {
			f := base
			*[]*string{&f.requestID, &f.clientRequestID, &f.method, &f.account, &f.operation, &f.container,
				&f.blob, &f.errorCode, &f.client}[i] = s
			checkAccessLine(t, accessTimes[i], &f)
		}
	}
	// Random strings from the pieces above and random bytes.
	rng := rand.New(rand.NewSource(1))
	piece := func() string {
		var sb strings.Builder
		for n := rng.Intn(6); n > 0; n-- {
			if rng.Intn(3) == 0 {
				sb.WriteByte(byte(rng.Intn(256)))
			} else {
				h := hostileText[rng.Intn(len(hostileText))]
				sb.WriteString(h[:min(len(h), 40)])
			}
		}
		return sb.String()
	}
	for i := 0; i < 2000; i++ {
		f := accessFields{requestID: piece(), clientRequestID: piece(), method: piece(), account: piece(),
			operation: piece(), container: piece(), blob: piece(), status: rng.Intn(600), errorCode: piece(),
			bytesIn: rng.Int63(), bytesOut: -rng.Int63n(10), duration: time.Duration(rng.Int63() >> rng.Intn(63)),
			client: piece(), https: rng.Intn(2) == 0}
		checkAccessLine(t, time.Unix(rng.Int63n(4e9), rng.Int63n(1e9)), &f)
	}
}

// TestAccessLineAllocs: a request's access line and metrics through
// NewLogHandler's handler, as blobgw serve logs, allocate nothing (3
// allocations through slog, and about 11 µs on the idle machine).
func TestAccessLineAllocs(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		s := &Server{log: slog.New(RedactingHandler(NewLogHandler(io.Discard, format, nil))), metrics: newMetrics()}
		r, req, w := benchRequest()
		in := &countingBody{n: 4096}
		s.finish(w, r, req, in)
		if n := testing.AllocsPerRun(200, func() { s.finish(w, r, req, in) }); n != 0 {
			t.Errorf("%s: the access line: %.0f allocations, want 0", format, n)
		}
	}
}

// TestLogHandlerLines: through NewLogHandler, the access line and slog's
// other lines arrive whole, one line each, in one writer; a handler with
// attributes, a group, ReplaceAttr or AddSource writes the access line
// through slog, with them.
func TestLogHandlerLines(t *testing.T) {
	var out bytes.Buffer
	s := &Server{log: slog.New(RedactingHandler(NewLogHandler(&out, "text", nil))), metrics: newMetrics()}
	if accessWriter(s.log) == nil {
		t.Fatal("NewLogHandler's handler: the access line goes through slog")
	}
	r, req, w := benchRequest()
	s.finish(w, r, req, &countingBody{})
	s.log.Info("other", "uri", "/a?sig=secret")
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], " msg=request request_id=5e3d3d3a-") ||
		!strings.HasSuffix(lines[1], " msg=other uri=\"/a?sig=REDACTED\"") {
		t.Errorf("lines:\n%s", out.String())
	}
	for name, h := range map[string]slog.Handler{
		"WithAttrs": NewLogHandler(io.Discard, "text", nil).WithAttrs([]slog.Attr{slog.String("replica", "r1")}),
		"WithGroup": NewLogHandler(io.Discard, "json", nil).WithGroup("g"),
		"ReplaceAttr": NewLogHandler(io.Discard, "text", &slog.HandlerOptions{
			ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr { return a }}),
		"AddSource": NewLogHandler(io.Discard, "json", &slog.HandlerOptions{AddSource: true}),
		"slog":      slog.NewTextHandler(io.Discard, nil),
	} {
		if accessWriter(slog.New(RedactingHandler(h))) != nil {
			t.Errorf("%s: the access line bypasses slog", name)
		}
	}
	// The level still applies.
	out.Reset()
	s.log = slog.New(RedactingHandler(NewLogHandler(&out, "json", &slog.HandlerOptions{Level: slog.LevelWarn})))
	s.finish(w, r, req, &countingBody{})
	if out.Len() != 0 {
		t.Errorf("access line at level warn: %q", out.String())
	}
}

// TestPlainText: a string the one-pass check lets through as it is needs
// no redaction, no quoting in text and no escaping in JSON; the line's
// usual strings are let through.
func TestPlainText(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	corpus := append(append([]string{"sig", "SiG", "xkey", "KEY", "ke", "si", "s", "k", "sIgnal", "turkey1"}, hostileText...), redactCorpus...)
	for i := 0; i < 5000; i++ {
		b := make([]byte, rng.Intn(8))
		for j := range b {
			b[j] = "sSiIgGkKeEyY=\" \\\x7fa1-"[rng.Intn(20)]
		}
		corpus = append(corpus, string(b))
	}
	for _, s := range corpus {
		if plainText(s) && (Redact(s) != s || textNeedsQuote(s) || string(appendJSONEscaped(nil, s)) != s) {
			t.Errorf("plainText(%q) but it needs redacting, quoting or escaping", s)
		}
	}
	for _, s := range []string{"5e3d3d3a-1c1b-4f4e-9a9a-0a0b0c0d0e0f", "PUT", "devstoreaccount1", "PutBlob", "cnt", "b1",
		"dir/sub/file.txt", "127.0.0.1", "[::1]:443", "ConditionNotMet"} {
		if !plainText(s) {
			t.Errorf("plainText(%q) = false", s)
		}
	}
}

var attrSink slog.Attr

// TestRedactedURIOnce: a URI redactURI masked reaches the line as it is,
// without the redacting handler masking it again (which ran the
// expressions and built the URI's text a second time); Redact is
// idempotent, so the lines are what they were.
func TestRedactedURIOnce(t *testing.T) {
	for _, s := range append(append([]string{}, hostileText...), redactCorpus...) {
		want := Redact(s)
		if again := Redact(want); again != want {
			t.Errorf("Redact(Redact(%q)) = %q, not %q", s, again, want)
		}
		if got := redactAttr(slog.Any("uri", redactURI(s))); got.Value.Kind() != slog.KindString || got.Value.String() != want {
			t.Errorf("redactURI(%q) through the handler: %v, want %q", s, got.Value, want)
		}
	}
	uri := "/devstoreaccount1/cnt/b1?sv=2020-02-10&ss=b&srt=sco&sp=rwdlac&se=2026-12-31T00:00:00Z&sig=abc%2Bdef%3D"
	mask := testing.AllocsPerRun(100, func() { attrSink = slog.Any("uri", redactURI(uri)) })
	logged := testing.AllocsPerRun(100, func() { attrSink = redactAttr(slog.Any("uri", redactURI(uri))) })
	if logged > mask {
		t.Errorf("a redacted URI through the handler: %.0f allocations, %.0f to mask it: masked twice", logged, mask)
	}
}

// TestLogHandlerConcurrent: access lines and slog's other lines written
// from many goroutines to one writer that is not safe for concurrent use
// arrive whole, one Write each (run with -race).
func TestLogHandlerConcurrent(t *testing.T) {
	var out bytes.Buffer
	s := &Server{log: slog.New(RedactingHandler(NewLogHandler(&out, "json", nil))), metrics: newMetrics()}
	const goroutines, lines = 8, 200
	done := make(chan struct{})
	for g := range goroutines {
		go func() {
			defer func() { done <- struct{}{} }()
			r, req, w := benchRequest()
			for range lines {
				if g%2 == 0 {
					s.finish(w, r, req, &countingBody{})
				} else {
					s.log.Info("other", "n", g)
				}
			}
		}()
	}
	for range goroutines {
		<-done
	}
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(got) != goroutines*lines {
		t.Fatalf("%d lines, want %d", len(got), goroutines*lines)
	}
	for _, l := range got {
		if !strings.HasPrefix(l, `{"time":"`) || !strings.HasSuffix(l, "}") ||
			!strings.Contains(l, `"msg":"request","request_id":"5e3d3d3a-`) && !strings.Contains(l, `"msg":"other","n":`) {
			t.Fatalf("line %q", l)
		}
	}
}
