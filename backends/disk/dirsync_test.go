package disk_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/blobgw/blobgw/backends/disk"
)

// storeAndObjects is a new store and the path of its objects/.
func storeAndObjects(t *testing.T) (*disk.Store, string) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "store")
	s, err := disk.New(root)
	if err != nil {
		t.Fatal(err)
	}
	return s, filepath.Join(root, "objects")
}

// watchSyncs records every directory fsync (relative to the store's
// objects/) while the test runs; disturb, when set, runs before each.
func watchSyncs(t *testing.T, objects string, disturb func(dir string)) func() []string {
	t.Helper()
	var mu sync.Mutex
	var got []string
	orig := *disk.SyncDir
	*disk.SyncDir = func(dir string) error {
		if disturb != nil {
			disturb(dir)
		}
		rel, err := filepath.Rel(objects, dir)
		if err != nil || strings.HasPrefix(rel, "..") {
			rel = dir
		}
		mu.Lock()
		got = append(got, filepath.ToSlash(rel))
		mu.Unlock()
		return orig(dir)
	}
	t.Cleanup(func() { *disk.SyncDir = orig })
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := slices.Clone(got)
		got = got[:0]
		slices.Sort(out)
		return out
	}
}

// TestPutSyncsNewDirectoryChain: a Put that links its object into a
// directory it did not create (another Put made it and may not have
// fsynced its parent yet, or an earlier process did) fsyncs the entries of
// the whole chain up to objects/ before it answers, the first time this
// store uses the directory; later Puts into it fsync the directory alone,
// and a directory pruned and made again is new again.
func TestPutSyncsNewDirectoryChain(t *testing.T) {
	s, objects := storeAndObjects(t)
	// As a concurrent Put between its mkdir and its parent's fsync.
	if err := os.MkdirAll(filepath.Join(objects, "b", "aa", "bb"), 0o750); err != nil {
		t.Fatal(err)
	}
	syncs := watchSyncs(t, objects, nil)
	ctx := context.Background()
	put := func(key string) {
		t.Helper()
		if err := s.Put(ctx, key, strings.NewReader("x"), 1); err != nil {
			t.Fatal(err)
		}
	}
	put("b/aa/bb/one")
	if got, want := syncs(), []string{".", "b", "b/aa", "b/aa/bb"}; !slices.Equal(got, want) {
		t.Fatalf("first Put into a directory it did not make fsynced %q, want %q", got, want)
	}
	put("b/aa/bb/two")
	if got, want := syncs(), []string{"b/aa/bb"}; !slices.Equal(got, want) {
		t.Fatalf("second Put fsynced %q, want %q", got, want)
	}
	for _, k := range []string{"b/aa/bb/one", "b/aa/bb/two"} {
		if err := s.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	syncs()
	if _, err := os.Stat(filepath.Join(objects, "b")); !os.IsNotExist(err) {
		t.Fatalf("directories not pruned: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(objects, "b", "aa", "bb"), 0o750); err != nil {
		t.Fatal(err)
	}
	put("b/aa/bb/three")
	if got, want := syncs(), []string{".", "b", "b/aa", "b/aa/bb"}; !slices.Equal(got, want) {
		t.Fatalf("Put into a directory made again after pruning fsynced %q, want %q", got, want)
	}
}

// TestDeleteSyncsPrunedParent: a Delete whose directory a concurrent
// Delete pruned before this one's fsync (the fsync meets ENOENT) makes
// the removal of that directory durable instead, by fsyncing the nearest
// directory still there; otherwise nothing it did is known durable.
func TestDeleteSyncsPrunedParent(t *testing.T) {
	s, objects := storeAndObjects(t)
	ctx := context.Background()
	for _, k := range []string{"b/aa/keep", "b/aa/bb/gone"} {
		if err := s.Put(ctx, k, strings.NewReader("x"), 1); err != nil {
			t.Fatal(err)
		}
	}
	leaf := filepath.Join(objects, "b", "aa", "bb")
	syncs := watchSyncs(t, objects, func(dir string) {
		if dir == leaf {
			os.Remove(leaf) // the concurrent Delete's prune
		}
	})
	if err := s.Delete(ctx, "b/aa/bb/gone"); err != nil {
		t.Fatal(err)
	}
	if got, want := syncs(), []string{"b/aa", "b/aa/bb"}; !slices.Equal(got, want) {
		t.Fatalf("Delete whose directory was pruned fsynced %q, want %q", got, want)
	}
}
