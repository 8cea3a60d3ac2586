package backendtest

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/blobgw/blobgw/backends"
)

// AdoptedObject registers fn, which creates an object in b's storage
// the way an adoption finds one (outside Put) holding data, and returns
// the key under which b reaches it. A backend declaring
// backends.AdoptedKeys must pass it: the AdoptedKeys sub-suite needs such
// an object and fails without one.
func AdoptedObject(fn func(t *testing.T, b backends.Backend, data []byte) string) Option {
	return func(c *config) { c.adoptedObject = fn }
}

// runFeatures runs one sub-suite per ability the backend declares
// (backends.FeaturesOf), so that declaring an ability is a promise the
// suite checks.
func (s *suite) runFeatures(t *testing.T) {
	f := backends.FeaturesOf(s.newBackend(t))
	t.Logf("declared abilities: %q", f.Names())
	if f.BatchDeleter != nil {
		t.Run("BatchDelete", s.testBatchDelete)
	}
	if f.AdoptedKeys != nil {
		t.Run("AdoptedKeys", s.testAdoptedKeys)
	}
	if f.TempSweeper != nil {
		t.Run("TempSweep", s.testTempSweep)
	}
}

func (s *suite) testBatchDelete(t *testing.T) {
	b := s.newBackend(t)
	bd := backends.FeaturesOf(b).BatchDeleter
	ctx := context.Background()
	keys := []string{"bd/a", "bd/b", "bd/c/d", "bd/e", "bd/f"}
	for i, k := range keys {
		mustPut(t, b, k, Data(10+i, uint64(i)), int64(10+i))
	}
	if err := bd.DeleteMany(ctx, nil); err != nil {
		t.Fatalf("DeleteMany(nil) = %v", err)
	}
	// Missing keys are not an error, and a repeat deletes nothing more.
	for i := range 2 {
		if err := bd.DeleteMany(ctx, []string{keys[0], keys[2], "bd/never-put"}); err != nil {
			t.Fatalf("DeleteMany #%d = %v", i+1, err)
		}
		checkAbsent(t, b, keys[0])
		checkAbsent(t, b, keys[2])
	}
	// One invalid key fails the call before anything is deleted.
	if err := bd.DeleteMany(ctx, []string{keys[1], "../bad"}); err == nil {
		t.Fatal("DeleteMany with an invalid key succeeded")
	}
	for _, i := range []int{1, 3, 4} {
		checkContent(t, b, keys[i], Data(10+i, uint64(i)))
	}
	if err := bd.DeleteMany(ctx, []string{keys[1], keys[3], keys[4]}); err != nil {
		t.Fatalf("DeleteMany = %v", err)
	}
	if got := listKeys(t, b, ""); len(got) != 0 {
		t.Fatalf("after deleting every key List = %q", got)
	}
}

func (s *suite) testAdoptedKeys(t *testing.T) {
	if s.cfg.adoptedObject == nil {
		t.Fatal("the backend declares backends.AdoptedKeys: pass backendtest.AdoptedObject so the suite can make an adopted object")
	}
	b := s.newBackend(t)
	ak := backends.FeaturesOf(b).AdoptedKeys
	ctx := context.Background()
	mustPut(t, b, "own/k", Data(5, 1), 5)
	if ak.IsAdopted("own/k") {
		t.Fatal(`IsAdopted("own/k") of a key written by Put = true`)
	}
	data := Data(1000, 2)
	key := s.cfg.adoptedObject(t, b, data)
	if !ak.IsAdopted(key) {
		t.Fatalf("IsAdopted(%q) of an adopted object = false", key)
	}
	if got := read(t, b, key, 0, -1); !bytes.Equal(got, data) {
		t.Fatalf("Open(adopted): %s", diffAt(got, data))
	}
	if got := read(t, b, key, 100, 50); !bytes.Equal(got, data[100:150]) {
		t.Fatalf("ranged Open(adopted): %s", diffAt(got, data[100:150]))
	}
	if info, err := b.Stat(ctx, key); err != nil || info.Key != key || info.Size != int64(len(data)) {
		t.Fatalf("Stat(adopted) = %+v, %v", info, err)
	}
	// Put never writes an adopted key, and List shows only what Put wrote.
	if err := b.Put(ctx, key, bytes.NewReader(Data(10, 3)), 10); err == nil {
		t.Fatal("Put over an adopted key succeeded")
	}
	s.afterFailedPut(t, b)
	if got := read(t, b, key, 0, -1); !bytes.Equal(got, data) {
		t.Fatalf("adopted object after a refused Put: %s", diffAt(got, data))
	}
	if got := listKeys(t, b, ""); !slices.Equal(got, []string{"own/k"}) {
		t.Fatalf("List = %q, want only own/k", got)
	}
	if err := b.Delete(ctx, key); err != nil {
		t.Fatalf("Delete(adopted) = %v", err)
	}
	if _, err := b.Stat(ctx, key); !errors.Is(err, backends.ErrNotFound) {
		t.Fatalf("Stat(adopted) after Delete = %v, want ErrNotFound", err)
	}
	if bd := backends.FeaturesOf(b).BatchDeleter; bd != nil {
		key := s.cfg.adoptedObject(t, b, Data(10, 4))
		if err := bd.DeleteMany(ctx, []string{key, "own/k"}); err != nil {
			t.Fatalf("DeleteMany(adopted, own) = %v", err)
		}
		if _, err := b.Stat(ctx, key); !errors.Is(err, backends.ErrNotFound) {
			t.Fatalf("Stat(adopted) after DeleteMany = %v, want ErrNotFound", err)
		}
		checkAbsent(t, b, "own/k")
	}
}

func (s *suite) testTempSweep(t *testing.T) {
	b := s.newBackend(t)
	ts := backends.FeaturesOf(b).TempSweeper
	ctx := context.Background()
	mustPut(t, b, "sweep/k", Data(100, 1), 100)
	if n, err := ts.SweepTemp(ctx, time.Minute); err != nil || n != 0 {
		t.Fatalf("SweepTemp with nothing stale = %d, %v; want 0, nil", n, err)
	}
	checkContent(t, b, "sweep/k", Data(100, 1))

	// A Put in flight is never swept, however short olderThan.
	const n = 1 << 20
	release := make(chan struct{})
	r := &blockingReader{src: NewReader(n, 2), blockAt: 256 << 10, release: release, blocked: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- b.Put(ctx, "sweep/inflight", r, -1) }()
	select {
	case <-r.blocked:
	case err := <-done:
		t.Fatalf("Put returned before reading its body: %v", err)
	}
	if _, err := ts.SweepTemp(ctx, time.Nanosecond); err != nil {
		t.Fatalf("SweepTemp during a Put = %v", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("Put after a SweepTemp in its middle = %v", err)
	}
	checkContent(t, b, "sweep/inflight", Data(n, 2))
	checkContent(t, b, "sweep/k", Data(100, 1))

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := ts.SweepTemp(cctx, time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("SweepTemp with a cancelled context = %v, want context.Canceled", err)
	}
	if got := listKeys(t, b, ""); !slices.Equal(got, []string{"sweep/inflight", "sweep/k"}) {
		t.Fatalf("List after sweeps = %q", got)
	}
}
