package gateway_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blobgw/blobgw/backends"
)

// faultyBackend fails reads on demand: once armed, the failOpen-th Open
// from then on fails (failOpen) or returns a reader that fails or ends
// after cut bytes; it counts the readers it handed out and closed.
type faultyBackend struct {
	backends.Backend
	mu     sync.Mutex
	left   int    // Opens to let through before the faulty one; -1: none
	mode   string // "open", "error" or "eof"
	cut    int64
	opened atomic.Int64
	closed atomic.Int64
}

func (f *faultyBackend) arm(nth int, mode string, cut int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.left, f.mode, f.cut = nth-1, mode, cut
}

var errInjected = errors.New("injected backend fault")

func (f *faultyBackend) Open(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	f.mu.Lock()
	mode := ""
	if f.left == 0 {
		mode, f.left = f.mode, -1
	} else if f.left > 0 {
		f.left--
	}
	cut := f.cut
	f.mu.Unlock()
	if mode == "open" {
		return nil, errInjected
	}
	rc, err := f.Backend.Open(ctx, key, offset, length)
	if err != nil {
		return nil, err
	}
	f.opened.Add(1)
	if mode != "" {
		rc = &cutReader{rc: rc, left: cut, eof: mode == "eof"}
	}
	return &countedReader{ReadCloser: rc, f: f}, nil
}

type countedReader struct {
	io.ReadCloser
	f    *faultyBackend
	once sync.Once
}

func (c *countedReader) Close() error {
	c.once.Do(func() { c.f.closed.Add(1) })
	return c.ReadCloser.Close()
}

// cutReader ends after left bytes: with errInjected, or with a clean
// io.EOF (a backend that hands back fewer bytes than asked).
type cutReader struct {
	rc   io.ReadCloser
	left int64
	eof  bool
}

func (c *cutReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		if c.eof {
			return 0, io.EOF
		}
		return 0, errInjected
	}
	n, err := c.rc.Read(p[:min(int64(len(p)), c.left)])
	c.left -= int64(n)
	return n, err
}

func (c *cutReader) Close() error { return c.rc.Close() }

// TestReadFaultMidStream: a backend that fails once Get Blob's headers
// are out (the second block's object cannot be opened, or its reader
// fails or ends early) cuts the connection: the client reads a prefix of
// the blob and an error, never a clean answer shorter than its
// Content-Length or other bytes; every reader the read opened is closed.
func TestReadFaultMidStream(t *testing.T) {
	forKinds(t, []string{"sqlite+disk", "sqlite+s3"}, func(t *testing.T, kind string) {
		fb := &faultyBackend{left: -1}
		b := setup(t, kind, setupOpts{wrapBackend: func(be backends.Backend) backends.Backend { fb.Backend = be; return fb }})
		ctx := context.Background()
		createContainers(t, b.client, "faults")
		data := randBytes(3<<20, 7)
		bc := putBlocks(t, b.client, "faults", "x", data, 1<<20)
		for _, c := range []struct {
			mode string
			cut  int64
		}{{"open", 0}, {"error", 100 << 10}, {"eof", 100 << 10}, {"error", 0}} {
			t.Run(c.mode, func(t *testing.T) {
				fb.arm(2, c.mode, c.cut)
				resp, err := bc.DownloadStream(ctx, nil)
				if err != nil {
					// Nothing was sent: only a first extent's failure may
					// answer an error instead of a cut.
					t.Fatalf("Get Blob: %v", err)
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err == nil {
					t.Fatalf("read %d of %d bytes and a clean end, want an error", len(got), len(data))
				}
				if len(got) >= len(data) || !bytes.Equal(got, data[:len(got)]) {
					t.Fatalf("read %d bytes before the error, want a prefix of the %d", len(got), len(data))
				}
				deadline := time.Now().Add(5 * time.Second)
				for fb.opened.Load() != fb.closed.Load() && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				if o, cl := fb.opened.Load(), fb.closed.Load(); o != cl {
					t.Fatalf("%d readers opened, %d closed", o, cl)
				}
			})
		}
		// The blob still reads whole once the backend is well.
		if got := download(t, b.client, "faults", "x"); !bytes.Equal(got, data) {
			t.Fatalf("read back %d bytes, not the blob", len(got))
		}
	})
}

// gatedBackend holds every Open after the first until open is closed, so
// a test can change the blob between a read's first object and the next.
type gatedBackend struct {
	backends.Backend
	opens   atomic.Int64
	waiting chan struct{} // closed when an Open is held
	open    chan struct{}
}

func (g *gatedBackend) Open(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	if g.opens.Add(1) == 2 {
		close(g.waiting)
		<-g.open
	}
	return g.Backend.Open(ctx, key, offset, length)
}

// TestReadAcrossCollection: a read of a blob of several objects that
// started before the blob was overwritten and deleted finishes on the old
// bytes, whole, while the replaced objects are within gc_grace, also for
// the objects it opens after the collector ran. The objects are protected
// for the grace only, not until the read ends: a read that opens one once
// it is collected is cut (the client sees an error), never finished on
// other bytes nor ended short and clean.
func TestReadAcrossCollection(t *testing.T) {
	forKinds(t, []string{"sqlite+disk", "sqlite+s3"}, func(t *testing.T, kind string) {
		for _, c := range []struct {
			name  string
			grace time.Duration
		}{{"within grace", time.Hour}, {"grace passed", 0}} {
			t.Run(c.name, func(t *testing.T) {
				gb := &gatedBackend{waiting: make(chan struct{}), open: make(chan struct{})}
				b := setup(t, kind, setupOpts{grace: c.grace, wrapBackend: func(be backends.Backend) backends.Backend { gb.Backend = be; return gb }})
				ctx := context.Background()
				createContainers(t, b.client, "across")
				old := randBytes(3<<20, 11)
				bc := putBlocks(t, b.client, "across", "x", old, 1<<20)
				gb.opens.Store(0)
				resp, err := bc.DownloadStream(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				<-gb.waiting // the first object sent, the second not yet opened
				putBlocks(t, b.client, "across", "x", randBytes(3<<20, 12), 1<<20)
				if _, err := bc.Delete(ctx, nil); err != nil {
					t.Fatal(err)
				}
				b.collectAll(t)
				close(gb.open)
				got, err := io.ReadAll(resp.Body)
				if !bytes.Equal(got, old[:min(len(got), len(old))]) {
					t.Fatal("the reader saw bytes other than the old blob's")
				}
				if c.grace > 0 && (err != nil || len(got) != len(old)) {
					t.Fatalf("within the grace: %d of %d bytes, %v", len(got), len(old), err)
				}
				if c.grace == 0 && (err == nil || len(got) >= len(old)) {
					t.Fatalf("past the grace: %d of %d bytes and %v, want a prefix and an error", len(got), len(old), err)
				}
			})
		}
	})
}
