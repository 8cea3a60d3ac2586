package gateway

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// redactCorpus: text the access log and error lines carry, with and
// without credentials, and the non-ASCII spellings (?i) folds.
var redactCorpus = []string{
	"", "request", "0b4c6a0e-5d5e-4b8a-9e61-0d2c3f1f2a7b", "PutBlob", "devstoreaccount1", "cnt", "b1", "127.0.0.1:40000",
	"/acct/c/b?sv=2020-02-10&sig=abc%2Bdef%3D&se=x", "?SIG=abc", "?Sig=abc",
	"copy=https%3A%2F%2Fh%2Fb%3Fsp%3Dr%26sig%3Dsecret%26se%3D1",
	"Authorization: SharedKey devstoreaccount1:c2lnbmF0dXJl+/=", "sharedkey a:Zm9v", "SharedKeyLite a:Zm9v",
	"AccountName=a;AccountKey=Zm9v+/==;BlobEndpoint=x", "accountkey=Zm9v",
	"?ſig=abc", "SharedKey a:Zm9v", "AccountKey=Zm9v", "x-ms-meta-ключ", "a signature", "monkey",
}

// TestRedactFastPath: Redact's early return for text no expression can
// match changes nothing, and costs no allocation (the three expressions
// allocated on every access log attribute before).
func TestRedactFastPath(t *testing.T) {
	for _, s := range redactCorpus {
		if got, want := Redact(s), redactAll(s); got != want {
			t.Errorf("Redact(%q) = %q, want %q", s, got, want)
		}
	}
	clean := "0b4c6a0e-5d5e-4b8a-9e61-0d2c3f1f2a7b PutBlob devstoreaccount1 cnt b1"
	if n := testing.AllocsPerRun(100, func() { Redact(clean) }); n != 0 {
		t.Errorf("Redact of text without a credential: %.0f allocations, want 0", n)
	}
}

// TestObserveRequestAllocs: a request's metrics, once its operation and
// status were seen, are recorded without looking the label values up
// again (and so without allocating).
func TestObserveRequestAllocs(t *testing.T) {
	m := newMetrics()
	m.observeRequest("PutBlob", 201, "", time.Millisecond, 4096, 0)
	if n := testing.AllocsPerRun(100, func() { m.observeRequest("PutBlob", 201, "", time.Millisecond, 4096, 0) }); n != 0 {
		t.Errorf("observeRequest: %.0f allocations, want 0", n)
	}
	b := m.forTx("update")
	if m.forTx("update") != b {
		t.Error("forTx: a second lookup gave another child")
	}
}

// fakeConn is a net.Conn that only carries an address.
type fakeConn struct{ net.Conn }

// TestHeaderRecordReused: a keep-alive connection records each request's
// header into the buffer the previous request used, instead of growing a
// new one per request.
func TestHeaderRecordReused(t *testing.T) {
	c := &recordingConn{Conn: fakeConn{}, on: true}
	ctx := context.WithValue(context.Background(), recordingConnKey{}, c)
	head := []byte("GET /devstoreaccount1/cnt/b1 HTTP/1.1\r\nHost: h\r\nX-Ms-Version: 2025-11-05\r\n\r\n")
	r := httptest.NewRequest(http.MethodGet, "/devstoreaccount1/cnt/b1", nil).WithContext(ctx)
	r.Body = http.NoBody
	round := func() {
		c.mu.Lock()
		c.record(head)
		c.mu.Unlock()
		_, resume := rawHeaderNames(r)
		resume()
	}
	round()
	if n := testing.AllocsPerRun(100, round); n != 0 {
		t.Errorf("one request's header record: %.0f allocations, want 0", n)
	}
	if len(c.buf) != 0 {
		t.Errorf("record after a request: %d bytes, want empty", len(c.buf))
	}
}

// benchRequest is a signed-looking SDK Put Blob that reached the access
// log: the request, its parsed addressing and the recorder.
func benchRequest() (*http.Request, *request, *statusWriter) {
	r := httptest.NewRequest(http.MethodPut, "http://127.0.0.1:10000/devstoreaccount1/cnt/b1", strings.NewReader("x"))
	r.Header.Set("X-Ms-Client-Request-Id", "0b4c6a0e-5d5e-4b8a-9e61-0d2c3f1f2a7b")
	req := &request{id: "5e3d3d3a-1c1b-4f4e-9a9a-0a0b0c0d0e0f", account: "devstoreaccount1", container: "cnt", blob: "b1",
		start: time.Now(), peer: peer{addr: "127.0.0.1"}}
	w := &statusWriter{ResponseWriter: httptest.NewRecorder(), status: 201, wrote: true}
	return r, req, w
}

// BenchmarkAccessLogLine: finish, the access log line (info, through the
// redacting handler, to NewLogHandler's text handler as blobgw serve logs)
// and the request metrics. BenchmarkAccessLogLineSlog: the same through
// slog's text handler, as for a logger that is not NewLogHandler's.
func BenchmarkAccessLogLine(b *testing.B) {
	benchAccessLogLine(b, NewLogHandler(io.Discard, "text", nil))
}

func BenchmarkAccessLogLineSlog(b *testing.B) {
	benchAccessLogLine(b, slog.NewTextHandler(io.Discard, nil))
}

func benchAccessLogLine(b *testing.B, h slog.Handler) {
	s := &Server{log: slog.New(RedactingHandler(h)), metrics: newMetrics()}
	r, req, w := benchRequest()
	in := &countingBody{n: 4096}
	b.ReportAllocs()
	for b.Loop() {
		s.finish(w, r, req, in)
	}
}

// BenchmarkResolve: the operation table lookup of a Put Blob.
func BenchmarkResolve(b *testing.B) {
	r, req, _ := benchRequest()
	r.Header.Set("X-Ms-Blob-Type", "BlockBlob")
	req.query = map[string]string{}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := resolve(r, req); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDateHeader: the Date cached per second is what formatting each time
// gives, also when the clock steps back.
func TestDateHeader(t *testing.T) {
	base := time.Date(2026, 12, 1, 15, 4, 5, 0, time.FixedZone("X", 3600))
	for _, d := range []time.Duration{0, 999 * time.Millisecond, time.Second, 1500 * time.Millisecond, -time.Hour, 0, 48 * time.Hour} {
		now := base.Add(d)
		if got, want := dateHeader(now), now.UTC().Format(http.TimeFormat); got != want {
			t.Errorf("dateHeader(%v) = %q, want %q", now, got, want)
		}
	}
}

// TestResolveAllocs: the operation table names its headers canonically,
// so resolving a Put Blob allocates nothing (2 before).
func TestResolveAllocs(t *testing.T) {
	for _, o := range operations {
		for _, h := range o.headers {
			if c := http.CanonicalHeaderKey(h.name); c != h.name {
				t.Errorf("%s: header %q, want the canonical %q", o.name, h.name, c)
			}
		}
	}
	r, req, _ := benchRequest()
	r.Header.Set("X-Ms-Blob-Type", "BlockBlob")
	req.query = map[string]string{}
	if op, err := resolve(r, req); err != nil || op.name != "PutBlob" {
		t.Fatalf("resolve: %v %v", op, err)
	}
	if n := testing.AllocsPerRun(100, func() { resolve(r, req) }); n != 0 {
		t.Errorf("resolve: %.0f allocations, want 0", n)
	}
}
