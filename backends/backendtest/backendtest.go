// Package backendtest is the conformance suite every backends.Backend must
// pass. It turns the doc comments of backends.Backend into tests: atomic,
// durable-on-success Put that never overwrites and never leaves a partial
// object, streaming with bounded memory, ranged reads, idempotent Delete,
// ErrNotFound and ErrExists, prefix listing, and key validation; then, under
// Features, one sub-suite per optional ability the backend declares
// (backends.FeaturesOf: batch delete, adopted keys, temp sweep).
//
// A backend's tests call Run with a constructor returning a fresh, empty
// backend (one per subtest):
//
//	func TestConformance(t *testing.T) {
//		backendtest.Run(t, func(t *testing.T) backends.Backend {
//			s, err := disk.New(t.TempDir())
//			if err != nil {
//				t.Fatal(err)
//			}
//			return s
//		})
//	}
//
// Subtests run sequentially (the streaming subtest measures allocations, so
// nothing else may run in the process meanwhile; do not call Run from a
// parallel test).
package backendtest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/blobgw/blobgw/backends"
)

// Option adjusts Run.
type Option func(*config)

type config struct {
	skipDeleteWhileReading bool
	largeSize              int64
	afterFailedPut         func(t *testing.T, b backends.Backend)
	adoptedObject          func(t *testing.T, b backends.Backend, data []byte) string
}

// SkipDeleteWhileReading skips the subtest requiring that a reader opened
// before Delete still returns the complete old bytes. Use it only for a
// backend that cannot guarantee this, and say why at the call site: the
// gateway then has to delay deletes past the longest read.
func SkipDeleteWhileReading() Option {
	return func(c *config) { c.skipDeleteWhileReading = true }
}

// LargeObjectSize sets the size of the streamed-object subtest (default
// 64 MiB). The allocation budget is a quarter of it, at most 16 MiB.
func LargeObjectSize(n int64) Option {
	return func(c *config) { c.largeSize = n }
}

// AfterFailedPut registers fn to run after every failed or rejected Put in
// the suite, once the call has returned, to check backend-specific
// leftovers. The disk backend uses it to check that its temp directory is
// empty and that nothing was written outside its root.
func AfterFailedPut(fn func(t *testing.T, b backends.Backend)) Option {
	return func(c *config) { c.afterFailedPut = fn }
}

// Run runs the conformance suite. newBackend must return a new, empty
// backend each time; it may register cleanups with t.
func Run(t *testing.T, newBackend func(t *testing.T) backends.Backend, opts ...Option) {
	t.Helper()
	c := &config{largeSize: 64 << 20}
	for _, o := range opts {
		o(c)
	}
	s := &suite{cfg: c, newBackend: newBackend}
	tests := []struct {
		name string
		fn   func(t *testing.T)
	}{
		{"RoundTrip", s.testRoundTrip},
		{"RangedOpen", s.testRangedOpen},
		{"InvalidRange", s.testInvalidRange},
		{"SizeMismatch", s.testSizeMismatch},
		{"ReaderError", s.testReaderError},
		{"ContextCancelled", s.testContextCancelled},
		{"ExistingKey", s.testExistingKey},
		{"ConcurrentPutSameKey", s.testConcurrentPutSameKey},
		{"DeleteIdempotent", s.testDeleteIdempotent},
		{"Missing", s.testMissing},
		{"List", s.testList},
		{"ListCallbackError", s.testListCallbackError},
		{"NestedKeys", s.testNestedKeys},
		{"UnusualValidKeys", s.testUnusualValidKeys},
		{"InvalidKeys", s.testInvalidKeys},
		{"LargeStreamed", s.testLargeStreamed},
		{"DeleteWhileReading", s.testDeleteWhileReading},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.fn)
	}
	t.Run("Features", s.runFeatures)
}

type suite struct {
	cfg        *config
	newBackend func(t *testing.T) backends.Backend
}

// ---------------------------------------------------------------------------
// Test data.

// mix is splitmix64 of seed and block index: the 8 bytes at offset 8*blk of
// the stream with that seed.
func mix(seed, blk uint64) uint64 {
	z := seed*0x9e3779b97f4a7c15 + blk + 0x632be59bd9b4e019
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// fill writes bytes [off, off+len(p)) of the stream seed into p.
func fill(p []byte, seed uint64, off int64) {
	var w [8]byte
	for len(p) > 0 {
		binary.LittleEndian.PutUint64(w[:], mix(seed, uint64(off>>3)))
		n := copy(p, w[off&7:])
		p = p[n:]
		off += int64(n)
	}
}

// Data returns n deterministic pseudo-random bytes; different seeds give
// different bytes. Data(n, s)[i] equals byte i of NewReader(m, s) for any
// m > i.
func Data(n int, seed uint64) []byte {
	p := make([]byte, n)
	fill(p, seed, 0)
	return p
}

// NewReader returns a reader of size deterministic bytes (see Data) that
// generates them on the fly, so arbitrarily large bodies cost no memory. It
// implements only io.Reader, so a backend must pull the bytes itself.
func NewReader(size int64, seed uint64) io.Reader {
	return &genReader{seed: seed, size: size}
}

type genReader struct {
	seed      uint64
	off, size int64
}

func (g *genReader) Read(p []byte) (int, error) {
	if g.off >= g.size {
		return 0, io.EOF
	}
	if rem := g.size - g.off; int64(len(p)) > rem {
		p = p[:rem]
	}
	fill(p, g.seed, g.off)
	g.off += int64(len(p))
	return len(p), nil
}

// verifyWriter checks that what is written equals the stream seed, with a
// fixed scratch buffer.
type verifyWriter struct {
	seed     uint64
	off      int64
	scratch  []byte
	mismatch int64 // first bad offset, or -1
}

func newVerifyWriter(seed uint64) *verifyWriter {
	return &verifyWriter{seed: seed, scratch: make([]byte, 64<<10), mismatch: -1}
}

func (v *verifyWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		c := min(len(p), len(v.scratch))
		fill(v.scratch[:c], v.seed, v.off)
		if v.mismatch < 0 && !bytes.Equal(v.scratch[:c], p[:c]) {
			for i := range c {
				if v.scratch[i] != p[i] {
					v.mismatch = v.off + int64(i)
					break
				}
			}
		}
		v.off += int64(c)
		p = p[c:]
	}
	return n, nil
}

// onlyReader hides every method but Read (bytes.Reader has WriterTo, Len...).
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// errReader yields data[:failAt] and then fails with err (in the same call
// as the last bytes when together is set).
type errReader struct {
	data     []byte
	failAt   int
	err      error
	together bool
	off      int
}

func (r *errReader) Read(p []byte) (int, error) {
	if r.off >= r.failAt {
		return 0, r.err
	}
	n := copy(p, r.data[r.off:r.failAt])
	r.off += n
	if r.together && r.off >= r.failAt {
		return n, r.err
	}
	return n, nil
}

// blockingReader yields src, but once blockAt bytes have been read it
// signals blocked and waits for release before yielding the rest normally.
// A Put that ignores its context therefore completes successfully.
type blockingReader struct {
	src     io.Reader
	blockAt int64
	release <-chan struct{}
	blocked chan struct{}
	read    int64
	done    bool
}

var errNeverReleased = errors.New("backendtest: blocking reader was never released")

func (r *blockingReader) Read(p []byte) (int, error) {
	if !r.done && r.read >= r.blockAt {
		r.done = true
		close(r.blocked)
		select {
		case <-r.release:
		case <-time.After(30 * time.Second):
			return 0, errNeverReleased
		}
	}
	if !r.done && int64(len(p)) > r.blockAt-r.read {
		p = p[:r.blockAt-r.read]
	}
	n, err := r.src.Read(p)
	r.read += int64(n)
	return n, err
}

// ---------------------------------------------------------------------------
// Helpers.

func (s *suite) afterFailedPut(t *testing.T, b backends.Backend) {
	t.Helper()
	if s.cfg.afterFailedPut != nil {
		s.cfg.afterFailedPut(t, b)
	}
}

func mustPut(t *testing.T, b backends.Backend, key string, data []byte, size int64) {
	t.Helper()
	if err := b.Put(context.Background(), key, bytes.NewReader(data), size); err != nil {
		t.Fatalf("Put(%q, %d bytes, size %d) = %v", key, len(data), size, err)
	}
}

func read(t *testing.T, b backends.Backend, key string, offset, length int64) []byte {
	t.Helper()
	rc, err := b.Open(context.Background(), key, offset, length)
	if err != nil {
		t.Fatalf("Open(%q, %d, %d) = %v", key, offset, length, err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading %q [%d,+%d): %v", key, offset, length, err)
	}
	if err := rc.Close(); err != nil {
		t.Fatalf("Close of %q reader: %v", key, err)
	}
	return got
}

func checkContent(t *testing.T, b backends.Backend, key string, want []byte) {
	t.Helper()
	got := read(t, b, key, 0, -1)
	if !bytes.Equal(got, want) {
		t.Fatalf("%q: read %d bytes that differ from the %d put (%s)", key, len(got), len(want), diffAt(got, want))
	}
	info, err := b.Stat(context.Background(), key)
	if err != nil {
		t.Fatalf("Stat(%q) = %v", key, err)
	}
	if info.Key != key || info.Size != int64(len(want)) {
		t.Fatalf("Stat(%q) = key %q size %d, want key %q size %d", key, info.Key, info.Size, key, len(want))
	}
	if d := time.Since(info.ModTime); info.ModTime.IsZero() || d > time.Hour || d < -time.Hour {
		t.Fatalf("Stat(%q).ModTime = %v, not close to now", key, info.ModTime)
	}
}

func diffAt(got, want []byte) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("first difference at byte %d", i)
		}
	}
	if len(got) != len(want) {
		return fmt.Sprintf("lengths %d and %d", len(got), len(want))
	}
	return "equal"
}

func listInfos(t *testing.T, b backends.Backend, prefix string) map[string]backends.ObjectInfo {
	t.Helper()
	out := make(map[string]backends.ObjectInfo)
	err := b.List(context.Background(), prefix, func(info backends.ObjectInfo) error {
		if _, dup := out[info.Key]; dup {
			t.Errorf("List(%q) reported %q twice", prefix, info.Key)
		}
		out[info.Key] = info
		return nil
	})
	if err != nil {
		t.Fatalf("List(%q) = %v", prefix, err)
	}
	return out
}

func listKeys(t *testing.T, b backends.Backend, prefix string) []string {
	t.Helper()
	var keys []string
	for k := range listInfos(t, b, prefix) {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// checkAbsent asserts that key is not visible through any method.
func checkAbsent(t *testing.T, b backends.Backend, key string) {
	t.Helper()
	ctx := context.Background()
	if _, err := b.Stat(ctx, key); !errors.Is(err, backends.ErrNotFound) {
		t.Fatalf("Stat(%q) = %v, want ErrNotFound", key, err)
	}
	rc, err := b.Open(ctx, key, 0, -1)
	if err == nil {
		rc.Close()
	}
	if !errors.Is(err, backends.ErrNotFound) {
		t.Fatalf("Open(%q) = %v, want ErrNotFound", key, err)
	}
	if _, ok := listInfos(t, b, "")[key]; ok {
		t.Fatalf("List shows %q", key)
	}
}

// ---------------------------------------------------------------------------
// Subtests.

func (s *suite) testRoundTrip(t *testing.T) {
	b := s.newBackend(t)
	for _, n := range []int{0, 1, 1<<20 + 7} {
		for _, known := range []bool{true, false} {
			key := fmt.Sprintf("rt/%d-%t", n, known)
			data := Data(n, uint64(n)+1)
			size := int64(n)
			if !known {
				size = -1
			}
			// onlyReader: a backend must not depend on Len/WriterTo.
			if err := b.Put(context.Background(), key, onlyReader{bytes.NewReader(data)}, size); err != nil {
				t.Fatalf("Put(%q, size %d) = %v", key, size, err)
			}
			checkContent(t, b, key, data)
			if info := listInfos(t, b, "rt/")[key]; info.Key != key || info.Size != int64(n) {
				t.Fatalf("List: %q reported as %+v, want size %d", key, info, n)
			}
		}
	}
	if got := listKeys(t, b, ""); len(got) != 6 {
		t.Fatalf("List(\"\") = %q, want 6 keys", got)
	}
}

func (s *suite) testRangedOpen(t *testing.T) {
	b := s.newBackend(t)
	const n = 1<<20 + 7
	data := Data(n, 42)
	mustPut(t, b, "ranged", data, n)
	mustPut(t, b, "empty", nil, 0)

	cases := []struct{ off, length int64 }{
		{0, 10}, {0, 1}, {0, -1}, {0, n},
		{500000, 1000}, {12345, 0}, {1, n - 2},
		{n - 10, 10}, {n - 10, -1}, {n - 1, 1}, {n - 1, -1},
		{n, 0}, {n, -1},
	}
	ctx := context.Background()
	for _, c := range cases {
		end := int64(n)
		if c.length >= 0 {
			end = c.off + c.length
		}
		want := data[c.off:end]
		if got := read(t, b, "ranged", c.off, c.length); !bytes.Equal(got, want) {
			t.Fatalf("Open(%d, %d) via Read: %d bytes, want %d (%s)", c.off, c.length, len(got), len(want), diffAt(got, want))
		}
		// io.Copy uses WriterTo when the reader has it.
		rc, err := b.Open(ctx, "ranged", c.off, c.length)
		if err != nil {
			t.Fatalf("Open(%d, %d) = %v", c.off, c.length, err)
		}
		var buf bytes.Buffer
		if _, err := io.Copy(&buf, rc); err != nil || !bytes.Equal(buf.Bytes(), want) {
			t.Fatalf("Open(%d, %d) via io.Copy: err %v, %d bytes, want %d (%s)", c.off, c.length, err, buf.Len(), len(want), diffAt(buf.Bytes(), want))
		}
		rc.Close()
		// A few reads first, then io.Copy for the rest.
		rc, err = b.Open(ctx, "ranged", c.off, c.length)
		if err != nil {
			t.Fatalf("Open(%d, %d) = %v", c.off, c.length, err)
		}
		head := make([]byte, min(3, len(want)))
		if _, err := io.ReadFull(rc, head); err != nil {
			t.Fatalf("Open(%d, %d): reading head: %v", c.off, c.length, err)
		}
		buf.Reset()
		buf.Write(head)
		if _, err := io.Copy(&buf, rc); err != nil || !bytes.Equal(buf.Bytes(), want) {
			t.Fatalf("Open(%d, %d) via Read then io.Copy: err %v (%s)", c.off, c.length, err, diffAt(buf.Bytes(), want))
		}
		rc.Close()
	}
	// The standard reader checks (odd read sizes, EOF behaviour, and
	// ReadAt/Seek if the reader offers them) on a few ranges.
	for _, c := range []struct{ off, length int64 }{{0, 10}, {500000, 1000}, {12345, 0}, {n - 10, -1}, {1000, 100000}, {n, -1}} {
		rc, err := b.Open(ctx, "ranged", c.off, c.length)
		if err != nil {
			t.Fatal(err)
		}
		end := int64(n)
		if c.length >= 0 {
			end = c.off + c.length
		}
		if err := iotest.TestReader(rc, data[c.off:end]); err != nil {
			t.Fatalf("Open(%d, %d): %v", c.off, c.length, err)
		}
		rc.Close()
	}
	for _, length := range []int64{0, -1} {
		if got := read(t, b, "empty", 0, length); len(got) != 0 {
			t.Fatalf("empty object Open(0, %d) returned %d bytes", length, len(got))
		}
	}
}

func (s *suite) testInvalidRange(t *testing.T) {
	b := s.newBackend(t)
	mustPut(t, b, "k", Data(100, 1), 100)
	mustPut(t, b, "empty", nil, 0)
	ctx := context.Background()
	for _, c := range []struct {
		key         string
		off, length int64
	}{
		{"k", 101, -1}, {"k", 101, 0}, {"k", 1 << 40, 1},
		{"k", -1, 10}, {"k", -1, -1}, {"k", 0, -2},
		{"empty", 1, -1}, {"empty", 1, 0},
	} {
		rc, err := b.Open(ctx, c.key, c.off, c.length)
		if err == nil {
			rc.Close()
			t.Fatalf("Open(%q, %d, %d) succeeded, want an error", c.key, c.off, c.length)
		}
		if errors.Is(err, backends.ErrNotFound) {
			t.Fatalf("Open(%q, %d, %d) = %v: an existing object is not ErrNotFound", c.key, c.off, c.length, err)
		}
	}
}

func (s *suite) testSizeMismatch(t *testing.T) {
	b := s.newBackend(t)
	const m = 1 << 20
	for i, c := range []struct {
		name string
		body int
		size int64
	}{
		{"short", 5, 10},
		{"long", 10, 5},
		{"empty body", 0, 1},
		{"nonempty body size 0", 1, 0},
		{"one byte short", m, m + 1},
		{"one byte long", m + 1, m},
	} {
		key := fmt.Sprintf("mismatch/%d", i)
		data := Data(c.body, uint64(i))
		err := b.Put(context.Background(), key, onlyReader{bytes.NewReader(data)}, c.size)
		if err == nil {
			t.Fatalf("%s: Put(%d bytes, size %d) succeeded", c.name, c.body, c.size)
		}
		checkAbsent(t, b, key)
		s.afterFailedPut(t, b)
		// A failed Put leaves nothing behind, not even a claim on the key.
		good := Data(int(c.size), uint64(i)+100)
		mustPut(t, b, key, good, c.size)
		checkContent(t, b, key, good)
	}
}

func (s *suite) testReaderError(t *testing.T) {
	b := s.newBackend(t)
	errBoom := errors.New("backendtest: boom")
	data := Data(1<<20, 7)
	for i, c := range []struct {
		name     string
		failAt   int
		together bool
		known    bool
	}{
		{"mid-stream, known size", 100 << 10, false, true},
		{"mid-stream, unknown size", 100 << 10, false, false},
		{"with last bytes", 300 << 10, true, true},
		{"at once", 0, false, true},
		{"at the very end", len(data), false, true},
		{"at the very end, unknown size", len(data), false, false},
	} {
		key := fmt.Sprintf("readerr/%d", i)
		size := int64(len(data))
		if !c.known {
			size = -1
		}
		r := &errReader{data: data, failAt: c.failAt, err: errBoom, together: c.together}
		err := b.Put(context.Background(), key, r, size)
		if !errors.Is(err, errBoom) {
			t.Fatalf("%s: Put = %v, want an error wrapping the reader's", c.name, err)
		}
		checkAbsent(t, b, key)
		s.afterFailedPut(t, b)
	}
}

func (s *suite) testContextCancelled(t *testing.T) {
	b := s.newBackend(t)
	const n = 1 << 20
	data := Data(n, 9)

	t.Run("before Put", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := b.Put(ctx, "cancel/before", bytes.NewReader(data), n)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Put with a cancelled context = %v, want context.Canceled", err)
		}
		checkAbsent(t, b, "cancel/before")
		s.afterFailedPut(t, b)
	})
	for _, known := range []bool{true, false} {
		t.Run(fmt.Sprintf("mid-stream known size %t", known), func(t *testing.T) {
			key := fmt.Sprintf("cancel/mid-%t", known)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r := &blockingReader{src: bytes.NewReader(data), blockAt: 256 << 10, release: ctx.Done(), blocked: make(chan struct{})}
			go func() {
				<-r.blocked
				cancel()
			}()
			size := int64(n)
			if !known {
				size = -1
			}
			// The reader goes on yielding the full, correct body after the
			// cancellation: only the backend's own check can fail the Put.
			err := b.Put(ctx, key, r, size)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Put cancelled mid-stream = %v, want context.Canceled", err)
			}
			checkAbsent(t, b, key)
			s.afterFailedPut(t, b)
		})
	}
	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		r := &blockingReader{src: bytes.NewReader(data), blockAt: 64 << 10, release: ctx.Done(), blocked: make(chan struct{})}
		err := b.Put(ctx, "cancel/deadline", r, n)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Put past its deadline = %v, want context.DeadlineExceeded", err)
		}
		checkAbsent(t, b, "cancel/deadline")
		s.afterFailedPut(t, b)
	})
}

func (s *suite) testExistingKey(t *testing.T) {
	b := s.newBackend(t)
	ctx := context.Background()
	original := Data(1000, 1)
	mustPut(t, b, "exists/k", original, int64(len(original)))
	errBoom := errors.New("backendtest: boom")
	for _, c := range []struct {
		name string
		r    io.Reader
		size int64
	}{
		{"same size", bytes.NewReader(Data(1000, 2)), 1000},
		{"unknown size", onlyReader{bytes.NewReader(Data(1000, 3))}, -1},
		{"larger", NewReader(1<<20, 4), 1 << 20},
		{"empty", bytes.NewReader(nil), 0},
		{"failing reader", &errReader{data: Data(1000, 5), failAt: 500, err: errBoom}, 1000},
	} {
		err := b.Put(ctx, "exists/k", c.r, c.size)
		if err == nil {
			t.Fatalf("%s: second Put of an existing key succeeded", c.name)
		}
		if c.name != "failing reader" && !errors.Is(err, backends.ErrExists) {
			t.Fatalf("%s: second Put = %v, want ErrExists", c.name, err)
		}
		s.afterFailedPut(t, b)
		checkContent(t, b, "exists/k", original)
	}
	if got := listKeys(t, b, ""); !slices.Equal(got, []string{"exists/k"}) {
		t.Fatalf("List = %q, want only exists/k", got)
	}
}

func (s *suite) testConcurrentPutSameKey(t *testing.T) {
	b := s.newBackend(t)
	const writers, rounds = 8, 4
	for round := range rounds {
		key := fmt.Sprintf("race/%d", round)
		bodies := make([][]byte, writers)
		errs := make([]error, writers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for w := range writers {
			bodies[w] = Data(256<<10+w, uint64(round*writers+w))
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				size := int64(len(bodies[w]))
				if w%2 == 1 {
					size = -1
				}
				errs[w] = b.Put(context.Background(), key, onlyReader{bytes.NewReader(bodies[w])}, size)
			}()
		}
		close(start)
		wg.Wait()
		winner := -1
		for w, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("%s: writers %d and %d both succeeded", key, winner, w)
			case err == nil:
				winner = w
			case !errors.Is(err, backends.ErrExists):
				t.Fatalf("%s: writer %d: %v, want ErrExists", key, w, err)
			}
		}
		if winner < 0 {
			t.Fatalf("%s: no writer succeeded", key)
		}
		checkContent(t, b, key, bodies[winner])
		s.afterFailedPut(t, b)
	}
	if got := listKeys(t, b, "race/"); len(got) != rounds {
		t.Fatalf("List = %q, want %d keys", got, rounds)
	}
}

func (s *suite) testDeleteIdempotent(t *testing.T) {
	b := s.newBackend(t)
	ctx := context.Background()
	for _, key := range []string{"never-put", "never/put/nested"} {
		if err := b.Delete(ctx, key); err != nil {
			t.Fatalf("Delete(%q) of a missing key = %v", key, err)
		}
	}
	mustPut(t, b, "del/k", Data(10, 1), 10)
	mustPut(t, b, "del/other", Data(10, 2), 10)
	for i := range 3 {
		if err := b.Delete(ctx, "del/k"); err != nil {
			t.Fatalf("Delete #%d = %v", i+1, err)
		}
		checkAbsent(t, b, "del/k")
	}
	checkContent(t, b, "del/other", Data(10, 2))
	if got := listKeys(t, b, ""); !slices.Equal(got, []string{"del/other"}) {
		t.Fatalf("List = %q, want [del/other]", got)
	}
}

func (s *suite) testMissing(t *testing.T) {
	b := s.newBackend(t)
	ctx := context.Background()
	checkAbsent(t, b, "missing")
	checkAbsent(t, b, "missing/nested/key")
	rc, err := b.Open(ctx, "missing", 5, 10)
	if err == nil {
		rc.Close()
	}
	if !errors.Is(err, backends.ErrNotFound) {
		t.Fatalf("ranged Open of a missing key = %v, want ErrNotFound", err)
	}
	// An object is not a directory, and a directory is not an object.
	mustPut(t, b, "obj", Data(10, 1), 10)
	mustPut(t, b, "dir/child", Data(10, 2), 10)
	checkAbsent(t, b, "obj/child")
	checkAbsent(t, b, "dir")
	if err := b.Delete(ctx, "dir"); err != nil {
		t.Fatalf("Delete of a key that is only a prefix = %v", err)
	}
	if err := b.Delete(ctx, "obj/child"); err != nil {
		t.Fatalf("Delete of a key below an object = %v", err)
	}
	checkContent(t, b, "obj", Data(10, 1))
	checkContent(t, b, "dir/child", Data(10, 2))
}

func (s *suite) testList(t *testing.T) {
	b := s.newBackend(t)
	keys := []string{
		"list/a", "list/b/c", "list/b/d", "list/b/cc/e", "list/bb",
		"listx", "other/x", "l", "z/y/x/w",
	}
	for i, k := range keys {
		mustPut(t, b, k, Data(i*10, uint64(i)), int64(i*10))
	}
	for _, prefix := range []string{
		"", "l", "list", "list/", "list/b", "list/b/", "list/b/c", "list/b/c/",
		"list/b/cc/", "list/a", "list/a/", "listx", "other/", "z/y/", "z/y/x/w",
		"nope", "nope/", "/", "//", "../", "list//", "list/../other/", "./list/",
		"list/b/cc/e/more",
	} {
		var want []string
		for _, k := range keys {
			if strings.HasPrefix(k, prefix) {
				want = append(want, k)
			}
		}
		slices.Sort(want)
		infos := listInfos(t, b, prefix)
		got := make([]string, 0, len(infos))
		for k, info := range infos {
			got = append(got, k)
			i := slices.Index(keys, k)
			if i < 0 || info.Size != int64(i*10) || info.ModTime.IsZero() {
				t.Fatalf("List(%q) reported %+v", prefix, info)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("List(%q) = %q, want %q", prefix, got, want)
		}
	}
}

func (s *suite) testListCallbackError(t *testing.T) {
	b := s.newBackend(t)
	for _, k := range []string{"a", "b/c", "b/d", "e"} {
		mustPut(t, b, k, nil, 0)
	}
	errStop := errors.New("backendtest: stop")
	// fs.SkipAll and fs.SkipDir too: a backend built on a directory walk
	// must not interpret the caller's error.
	for _, want := range []error{errStop, fs.SkipAll, fs.SkipDir} {
		calls := 0
		err := b.List(context.Background(), "", func(backends.ObjectInfo) error {
			calls++
			return want
		})
		if !errors.Is(err, want) {
			t.Fatalf("List whose fn fails with %v = %v", want, err)
		}
		if calls != 1 {
			t.Fatalf("List called fn %d times after it failed, want 1", calls)
		}
	}
}

func (s *suite) testNestedKeys(t *testing.T) {
	b := s.newBackend(t)
	ctx := context.Background()
	keys := []string{"n/a/b/c/d/e", "n/a/b/c/d/f", "n/a/b/x", "n/a/y", "n/z"}
	for i, k := range keys {
		mustPut(t, b, k, Data(100+i, uint64(i)), -1)
	}
	for i, k := range keys {
		checkContent(t, b, k, Data(100+i, uint64(i)))
	}
	for _, k := range keys[:2] {
		if err := b.Delete(ctx, k); err != nil {
			t.Fatalf("Delete(%q) = %v", k, err)
		}
		checkAbsent(t, b, k)
	}
	if got, want := listKeys(t, b, "n/"), keys[2:]; !slices.Equal(got, want) {
		t.Fatalf("after deletes List = %q, want %q", got, want)
	}
	for i, k := range keys[2:] {
		checkContent(t, b, k, Data(100+i+2, uint64(i+2)))
	}
	checkAbsent(t, b, "n/a/b/c/d")
	checkAbsent(t, b, "n/a/b/c")
	// New keys below emptied prefixes still work.
	mustPut(t, b, "n/a/b/c/d/g", Data(5, 50), 5)
	checkContent(t, b, "n/a/b/c/d/g", Data(5, 50))
	for _, k := range append(keys[2:], "n/a/b/c/d/g") {
		if err := b.Delete(ctx, k); err != nil {
			t.Fatalf("Delete(%q) = %v", k, err)
		}
	}
	if got := listKeys(t, b, ""); len(got) != 0 {
		t.Fatalf("after deleting everything List = %q", got)
	}
	mustPut(t, b, "n/a/b/c/d/h", Data(5, 51), 5)
	checkContent(t, b, "n/a/b/c/d/h", Data(5, 51))
}

// maxKey returns a 512-byte valid key of segments of segLen bytes.
func maxKey(segLen int) string {
	var sb strings.Builder
	for sb.Len() < 512 {
		if sb.Len() > 0 {
			sb.WriteByte('/')
		}
		n := min(segLen, 512-sb.Len())
		sb.WriteString(strings.Repeat(string(rune('a'+sb.Len()%26)), n))
	}
	k := sb.String()
	if k[len(k)-1] == '/' {
		k = k[:len(k)-1] + "z"
	}
	return k
}

func (s *suite) testUnusualValidKeys(t *testing.T) {
	b := s.newBackend(t)
	ctx := context.Background()
	keys := []string{
		"-", "_", "...", ".a", "a.", "a..b", "x/.../y", "x/.hidden", "UPPER/lower",
		"0", "a-b_c.d/E-F_G.H", maxKey(7), maxKey(100),
	}
	for i, k := range keys {
		if !backends.ValidKey(k) {
			t.Fatalf("test bug: %q is not valid", k)
		}
		mustPut(t, b, k, Data(i, uint64(i)), int64(i))
	}
	for i, k := range keys {
		checkContent(t, b, k, Data(i, uint64(i)))
	}
	want := slices.Clone(keys)
	slices.Sort(want)
	if got := listKeys(t, b, ""); !slices.Equal(got, want) {
		t.Fatalf("List = %q, want %q", got, want)
	}
	for _, k := range keys {
		if err := b.Delete(ctx, k); err != nil {
			t.Fatalf("Delete(%q) = %v", k, err)
		}
		checkAbsent(t, b, k)
	}
}

func (s *suite) testInvalidKeys(t *testing.T) {
	b := s.newBackend(t)
	ctx := context.Background()
	keys := []string{
		"", "/", "//", "/a", "a/", "a//b", ".", "..", "./a", "a/.", "a/..", "../a",
		"a/../b", "a/./b", "../escape", "../../escape", "../../../../../../tmp/escape",
		`a\b`, `..\escape`, "a\x00b", "\x00", "a b", "a\nb", "ä", "a:b", "~a", "a*",
		strings.Repeat("a", 513), maxKey(7) + "b",
	}
	for _, k := range keys {
		if backends.ValidKey(k) {
			t.Fatalf("test bug: %q is valid", k)
		}
		if err := b.Put(ctx, k, bytes.NewReader(Data(10, 1)), 10); err == nil {
			t.Fatalf("Put(%q) succeeded, want an error", k)
		}
		if err := b.Put(ctx, k, bytes.NewReader(Data(10, 1)), -1); err == nil {
			t.Fatalf("Put(%q, size -1) succeeded, want an error", k)
		}
		s.afterFailedPut(t, b)
		if _, err := b.Stat(ctx, k); err == nil {
			t.Fatalf("Stat(%q) succeeded, want an error", k)
		}
		if rc, err := b.Open(ctx, k, 0, -1); err == nil {
			rc.Close()
			t.Fatalf("Open(%q) succeeded, want an error", k)
		}
		if err := b.Delete(ctx, k); err == nil {
			t.Fatalf("Delete(%q) succeeded, want an error", k)
		}
	}
	if got := listKeys(t, b, ""); len(got) != 0 {
		t.Fatalf("after invalid Puts List = %q", got)
	}
}

func (s *suite) testLargeStreamed(t *testing.T) {
	b := s.newBackend(t)
	ctx := context.Background()
	size := s.cfg.largeSize
	budget := min(size/4, 16<<20)
	const seed = 64

	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	if err := b.Put(ctx, "large", NewReader(size, seed), size); err != nil {
		t.Fatalf("Put of %d bytes = %v", size, err)
	}
	runtime.ReadMemStats(&m1)
	checkAlloc(t, "Put", m0, m1, size, budget)

	info, err := b.Stat(ctx, "large")
	if err != nil || info.Size != size {
		t.Fatalf("Stat = %+v, %v, want size %d", info, err, size)
	}

	runtime.GC()
	runtime.ReadMemStats(&m0)
	rc, err := b.Open(ctx, "large", 0, -1)
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	v := newVerifyWriter(seed)
	n, err := io.Copy(v, rc)
	rc.Close()
	runtime.ReadMemStats(&m1)
	if err != nil || n != size {
		t.Fatalf("reading back: %d bytes, %v; want %d", n, err, size)
	}
	if v.mismatch >= 0 {
		t.Fatalf("read-back differs from the put bytes at offset %d", v.mismatch)
	}
	checkAlloc(t, "Open+read", m0, m1, size, budget)

	// A ranged read in the middle of the large object.
	off, length := size/2-3, int64(1<<20+5)
	want := make([]byte, length)
	fill(want, seed, off)
	if got := read(t, b, "large", off, length); !bytes.Equal(got, want) {
		t.Fatalf("ranged read of the large object: %s", diffAt(got, want))
	}

	// Of unknown size too (a copy source without a length): a backend
	// must not buffer the body to learn it. A fresh backend, so that
	// nothing the first Put pooled is reused.
	b = s.newBackend(t)
	runtime.GC()
	runtime.ReadMemStats(&m0)
	if err := b.Put(ctx, "large", NewReader(size, seed), -1); err != nil {
		t.Fatalf("Put of %d bytes, size -1 = %v", size, err)
	}
	runtime.ReadMemStats(&m1)
	checkAlloc(t, "Put of unknown size", m0, m1, size, budget)
	if got := read(t, b, "large", off, length); !bytes.Equal(got, want) {
		t.Fatalf("ranged read of the large object put with size -1: %s", diffAt(got, want))
	}
	if info, err := b.Stat(ctx, "large"); err != nil || info.Size != size {
		t.Fatalf("Stat = %+v, %v, want size %d", info, err, size)
	}
}

func checkAlloc(t *testing.T, what string, m0, m1 runtime.MemStats, size, budget int64) {
	t.Helper()
	total := int64(m1.TotalAlloc - m0.TotalAlloc)
	heap := int64(m1.HeapAlloc) - int64(m0.HeapAlloc)
	t.Logf("%s of %d MiB: allocated %d KiB in total, heap grew %d KiB", what, size>>20, total>>10, heap>>10)
	if total > budget || heap > budget {
		t.Fatalf("%s of %d bytes allocated %d bytes (heap grew %d); budget %d: the backend does not stream", what, size, total, heap, budget)
	}
}

func (s *suite) testDeleteWhileReading(t *testing.T) {
	if s.cfg.skipDeleteWhileReading {
		t.Skip("backend cannot keep serving an open reader after Delete (SkipDeleteWhileReading)")
	}
	b := s.newBackend(t)
	ctx := context.Background()
	const n = 1<<20 + 7
	data := Data(n, 77)
	mustPut(t, b, "dwr/k", data, n)

	full, err := b.Open(ctx, "dwr/k", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	ranged, err := b.Open(ctx, "dwr/k", 1000, 500000)
	if err != nil {
		t.Fatal(err)
	}
	defer ranged.Close()
	head := make([]byte, 4096)
	if _, err := io.ReadFull(full, head); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, "dwr/k"); err != nil {
		t.Fatalf("Delete = %v", err)
	}
	checkAbsent(t, b, "dwr/k")

	rest, err := io.ReadAll(full)
	if err != nil {
		t.Fatalf("reading on after Delete: %v", err)
	}
	if got := append(head, rest...); !bytes.Equal(got, data) {
		t.Fatalf("reader opened before Delete: %s", diffAt(got, data))
	}
	got, err := io.ReadAll(ranged)
	if err != nil {
		t.Fatalf("ranged reader after Delete: %v", err)
	}
	if want := data[1000 : 1000+500000]; !bytes.Equal(got, want) {
		t.Fatalf("ranged reader opened before Delete: %s", diffAt(got, want))
	}
}
