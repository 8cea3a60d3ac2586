package gateway_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/blobgw/blobgw/backends/disk"
	"github.com/blobgw/blobgw/gateway"
	"github.com/blobgw/blobgw/gateway/auth"
	"github.com/blobgw/blobgw/internal/config"
	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/dbopen"
	"github.com/blobgw/blobgw/leasedb/pgtest"
)

// The per-request machinery of small operations, measured through
// Server.ServeHTTP with an httptest recorder (no sockets), so that the
// gateway's own CPU and allocations per request are pinned:
//
//	go test ./gateway -run '^$' -bench 'Hot' -benchmem -benchtime 2000x
//
// The access log is on (info level, to io.Discard through
// NewLogHandler's text handler), as `blobgw serve` runs it.

// hotServer is a gateway on a fresh store of kind ("sqlite" or
// "postgres") and a disk backend, with container "cnt" created.
func hotServer(b testing.TB, kind string) *gateway.Server {
	b.Helper()
	return hotServerOpt(b, kind, gateway.Options{})
}

// hotServerOpt is hotServer with the gateway's options (InlineMaxBytes).
func hotServerOpt(b testing.TB, kind string, opt gateway.Options) *gateway.Server {
	b.Helper()
	var dsn string
	switch kind {
	case "sqlite":
		dsn = filepath.Join(b.TempDir(), "meta.db")
	case "postgres":
		dsn = pgtest.Start(b)
	}
	store, err := dbopen.Open(context.Background(), dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	be, err := disk.New(filepath.Join(b.TempDir(), "blobs"))
	if err != nil {
		b.Fatal(err)
	}
	acct, err := auth.NewAccount(config.DevAccountName, config.DevAccountKey)
	if err != nil {
		b.Fatal(err)
	}
	log := slog.New(gateway.NewLogHandler(io.Discard, "text", nil))
	gw := gateway.New(&leasedb.DB{Store: store}, be, auth.MapAccounts{config.DevAccountName: acct}, log, opt)
	b.Cleanup(func() { gw.Close(context.Background()) })
	if rec := hotDo(b, gw, http.MethodPut, "/cnt?restype=container", nil, nil); rec.Code != http.StatusCreated {
		b.Fatalf("create container: %d %s", rec.Code, rec.Body)
	}
	return gw
}

var hotKey, _ = auth.DecodeKey(config.DevAccountKey)

// hotDo sends one Shared Key request, signed as the azblob SDK signs it,
// with the headers the SDK sends. In a benchmark, building and signing the
// request (the client's work) is outside the timer and the allocation
// count.
func hotDo(b testing.TB, gw http.Handler, method, path string, body []byte, hdr map[string]string) *httptest.ResponseRecorder {
	if bb, ok := b.(*testing.B); ok {
		bb.StopTimer()
		defer bb.StartTimer()
	}
	r, rec := hotRequest(method, path, body, hdr)
	if bb, ok := b.(*testing.B); ok {
		bb.StartTimer()
		defer bb.StopTimer()
	}
	gw.ServeHTTP(rec, r)
	return rec
}

func hotRequest(method, path string, body []byte, hdr map[string]string) (*http.Request, *httptest.ResponseRecorder) {
	var rd io.Reader = http.NoBody
	if body != nil {
		rd = bytes.NewReader(body)
	}
	r := httptest.NewRequest(method, "http://127.0.0.1:10000/"+config.DevAccountName+path, rd)
	r.RemoteAddr = "127.0.0.1:40000"
	r.ContentLength = int64(len(body))
	if body != nil {
		r.Header.Set("Content-Length", strconv.Itoa(len(body)))
	}
	r.Header.Set("User-Agent", "azsdk-go-azblob/v1.6.0 (go1.24; linux)")
	r.Header.Set("Accept", "application/xml")
	r.Header.Set("X-Ms-Client-Request-Id", "0b4c6a0e-5d5e-4b8a-9e61-0d2c3f1f2a7b")
	r.Header.Set("X-Ms-Version", "2025-11-05")
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	r.Header.Set("X-Ms-Date", time.Now().UTC().Format(http.TimeFormat))
	r.Header.Set("Authorization", "SharedKey "+config.DevAccountName+":"+auth.Sign(hotKey, auth.StringToSign(r, config.DevAccountName)))
	return r, httptest.NewRecorder()
}

func benchKinds(b *testing.B, fn func(b *testing.B, kind string)) {
	for _, kind := range []string{"sqlite", "postgres"} {
		b.Run(kind, func(b *testing.B) { fn(b, kind) })
	}
}

// benchWhere runs fn with the bytes of a 4 KiB body staged in the backend
// (InlineMaxBytes 0) and kept in the row (blobgw serve's default,
// config.DefaultInlineMaxBytes), on each store.
func benchWhere(b *testing.B, fn func(b *testing.B, kind string, opt gateway.Options)) {
	for _, where := range []struct {
		name   string
		inline int64
	}{{"staged", 0}, {"inline", config.DefaultInlineMaxBytes}} {
		b.Run(where.name, func(b *testing.B) {
			benchKinds(b, func(b *testing.B, kind string) { fn(b, kind, gateway.Options{InlineMaxBytes: where.inline}) })
		})
	}
}

// BenchmarkHotPutBlob: a 4 KiB Put Blob (put-small), one blob name per
// iteration.
func BenchmarkHotPutBlob(b *testing.B) {
	benchWhere(b, func(b *testing.B, kind string, opt gateway.Options) {
		gw := hotServerOpt(b, kind, opt)
		body := bytes.Repeat([]byte("x"), 4096)
		hdr := map[string]string{"X-Ms-Blob-Type": "BlockBlob", "Content-Type": "application/octet-stream"}
		b.ReportAllocs()
		b.ResetTimer()
		cpu0 := processCPU()
		for i := 0; i < b.N; i++ {
			if rec := hotDo(b, gw, http.MethodPut, "/cnt/b"+strconv.Itoa(i%64), body, hdr); rec.Code != http.StatusCreated {
				b.Fatalf("put: %d %s", rec.Code, rec.Body)
			}
		}
		b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
	})
}

// BenchmarkHotPutBlobIfMatch: put-small-ifmatch, a 4 KiB Put Blob over
// the blob's current ETag.
func BenchmarkHotPutBlobIfMatch(b *testing.B) {
	benchWhere(b, func(b *testing.B, kind string, opt gateway.Options) {
		gw := hotServerOpt(b, kind, opt)
		body := bytes.Repeat([]byte("x"), 4096)
		hdr := map[string]string{"X-Ms-Blob-Type": "BlockBlob", "Content-Type": "application/octet-stream"}
		rec := hotDo(b, gw, http.MethodPut, "/cnt/hot", body, hdr)
		if rec.Code != http.StatusCreated {
			b.Fatalf("put: %d %s", rec.Code, rec.Body)
		}
		etag := rec.Header().Get("ETag")
		b.ReportAllocs()
		b.ResetTimer()
		cpu0 := processCPU()
		for i := 0; i < b.N; i++ {
			hdr["If-Match"] = etag
			rec := hotDo(b, gw, http.MethodPut, "/cnt/hot", body, hdr)
			if rec.Code != http.StatusCreated {
				b.Fatalf("put: %d %s", rec.Code, rec.Body)
			}
			etag = rec.Header().Get("ETag")
		}
		b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
	})
}

// BenchmarkHotGetBlob: get-small, a 4 KiB Get Blob and Get Blob
// Properties (HEAD), of a blob in the backend (staged) and of one kept in
// its row (inline, Options.InlineMaxBytes), side by side.
func BenchmarkHotGetBlob(b *testing.B) {
	for _, where := range []struct {
		name   string
		inline int64
	}{{"staged", 0}, {"inline", 64 << 10}} {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			b.Run(where.name+"/"+method, func(b *testing.B) {
				benchKinds(b, func(b *testing.B, kind string) {
					gw := hotServerOpt(b, kind, gateway.Options{InlineMaxBytes: where.inline})
					body := bytes.Repeat([]byte("x"), 4096)
					if rec := hotDo(b, gw, http.MethodPut, "/cnt/g", body, map[string]string{"X-Ms-Blob-Type": "BlockBlob"}); rec.Code != http.StatusCreated {
						b.Fatalf("put: %d %s", rec.Code, rec.Body)
					}
					want := len(body)
					if method == http.MethodHead {
						want = 0
					}
					b.ReportAllocs()
					b.ResetTimer()
					cpu0 := processCPU()
					for i := 0; i < b.N; i++ {
						if rec := hotDo(b, gw, method, "/cnt/g", nil, nil); rec.Code != http.StatusOK || rec.Body.Len() != want {
							b.Fatalf("%s: %d %d bytes", method, rec.Code, rec.Body.Len())
						}
					}
					// Process CPU (user + system, request building included)
					// is steadier than wall time on a loaded machine.
					b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
				})
			})
		}
	}
}

// processCPU is the CPU time this process has used (user + system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkHotLeaseCycle: lease-cycle, Lease Blob acquire, renew and
// release (three requests an iteration).
func BenchmarkHotLeaseCycle(b *testing.B) {
	benchKinds(b, func(b *testing.B, kind string) {
		gw := hotServer(b, kind)
		if rec := hotDo(b, gw, http.MethodPut, "/cnt/l", []byte("x"), map[string]string{"X-Ms-Blob-Type": "BlockBlob"}); rec.Code != http.StatusCreated {
			b.Fatalf("put: %d %s", rec.Code, rec.Body)
		}
		id := "5e3d3d3a-1c1b-4f4e-9a9a-0a0b0c0d0e0f"
		b.ReportAllocs()
		b.ResetTimer()
		cpu0 := processCPU()
		for i := 0; i < b.N; i++ {
			for _, step := range []struct {
				action string
				want   int
			}{{"acquire", http.StatusCreated}, {"renew", http.StatusOK}, {"release", http.StatusOK}} {
				hdr := map[string]string{"X-Ms-Lease-Action": step.action, "X-Ms-Lease-Id": id}
				if step.action == "acquire" {
					hdr = map[string]string{"X-Ms-Lease-Action": "acquire", "X-Ms-Proposed-Lease-Id": id, "X-Ms-Lease-Duration": "15"}
				}
				if rec := hotDo(b, gw, http.MethodPut, "/cnt/l?comp=lease", nil, hdr); rec.Code != step.want {
					b.Fatalf("%s: %d %s", step.action, rec.Code, rec.Body)
				}
			}
		}
		// Per cycle: three requests.
		b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
	})
}

// TestGetBlobHeapBytes: a small Get Blob from a disk extent goes to the
// client without a copy buffer of its own (it took a fresh 256 KiB each
// before; sendfile or the pooled buffer now).
func TestGetBlobHeapBytes(t *testing.T) {
	gw := hotServer(t, "sqlite")
	body := bytes.Repeat([]byte("x"), 4096)
	if rec := hotDo(t, gw, http.MethodPut, "/cnt/g", body, map[string]string{"X-Ms-Blob-Type": "BlockBlob"}); rec.Code != http.StatusCreated {
		t.Fatalf("put: %d %s", rec.Code, rec.Body)
	}
	const n = 50
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for range n {
		if rec := hotDo(t, gw, http.MethodGet, "/cnt/g", nil, nil); rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), body) {
			t.Fatalf("get: %d, %d bytes", rec.Code, rec.Body.Len())
		}
	}
	runtime.ReadMemStats(&m1)
	if per := (m1.TotalAlloc - m0.TotalAlloc) / n; per > 128<<10 {
		t.Errorf("Get Blob of 4 KiB: %d heap bytes per request, want at most %d", per, 128<<10)
	}
}

// TestGetBlobInlineHeapBytes: a Get Blob of a 4 KiB inline blob allocates
// little more than one of a blob in a disk object, measured side by side:
// the row's text (the base64 of the bytes, as the driver returns it) and
// the decoded bytes, not copies of the text besides (about 9.6 KiB more
// before, 3 KiB now).
func TestGetBlobInlineHeapBytes(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 4096)
	perGet := func(inline int64) uint64 {
		gw := hotServerOpt(t, "sqlite", gateway.Options{InlineMaxBytes: inline})
		if rec := hotDo(t, gw, http.MethodPut, "/cnt/g", body, map[string]string{"X-Ms-Blob-Type": "BlockBlob"}); rec.Code != http.StatusCreated {
			t.Fatalf("put: %d %s", rec.Code, rec.Body)
		}
		get := func() {
			if rec := hotDo(t, gw, http.MethodGet, "/cnt/g", nil, nil); rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), body) {
				t.Fatalf("get: %d, %d bytes", rec.Code, rec.Body.Len())
			}
		}
		get()
		const n = 100
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		for range n {
			get()
		}
		runtime.ReadMemStats(&m1)
		return (m1.TotalAlloc - m0.TotalAlloc) / n
	}
	staged, inline := perGet(0), perGet(64<<10)
	t.Logf("heap bytes per Get Blob (request building included): %d inline, %d from a disk object", inline, staged)
	if inline > staged+7<<10 {
		t.Errorf("Get Blob of 4 KiB: %d heap bytes per request inline, %d from a disk object; want at most %d more", inline, staged, 7<<10)
	}
}
