package disk_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blobgw/blobgw/backends"
	"github.com/blobgw/blobgw/backends/backendtest"
	"github.com/blobgw/blobgw/backends/disk"
)

// newStore returns a store at <tempdir>/store, so tests can check that
// nothing is ever written next to the root.
func newStore(t testing.TB) *disk.Store {
	t.Helper()
	s, err := disk.New(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	backendtest.Run(t,
		func(t *testing.T) backends.Backend { return newStore(t) },
		backendtest.AfterFailedPut(checkNoResidue))
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// checkNoResidue asserts that root/tmp is empty, that nothing exists next to
// root or in root besides objects/ and tmp/, and that every file under
// objects/ is named by a valid key.
func checkNoResidue(t *testing.T, b backends.Backend) {
	t.Helper()
	s := b.(*disk.Store)
	root := s.Root()
	if got := names(t, filepath.Join(root, "tmp")); len(got) != 0 {
		t.Fatalf("temporary files left behind: %q", got)
	}
	if got := names(t, filepath.Dir(root)); !slices.Equal(got, []string{"store"}) {
		t.Fatalf("files next to the root: %q", got)
	}
	if got := names(t, root); !slices.Equal(got, []string{"objects", "tmp"}) {
		t.Fatalf("unexpected files in the root: %q", got)
	}
	objects := filepath.Join(root, "objects")
	err := filepath.WalkDir(objects, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(objects, p)
		if !d.Type().IsRegular() || !backends.ValidKey(filepath.ToSlash(rel)) {
			t.Errorf("stray entry under objects/: %s (%v)", rel, d.Type())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// objectFiles lists the regular files under root/objects.
func objectFiles(t *testing.T, s *disk.Store) []string {
	t.Helper()
	objects := filepath.Join(s.Root(), "objects")
	var out []string
	err := filepath.WalkDir(objects, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(objects, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// gate is a reader that yields blockAt bytes of src, then closes blocked and
// waits for release before yielding the rest.
type gate struct {
	src     io.Reader
	blockAt int64
	blocked chan struct{}
	release chan struct{}
	n       int64
	passed  bool
}

func newGate(src io.Reader, blockAt int64) *gate {
	return &gate{src: src, blockAt: blockAt, blocked: make(chan struct{}), release: make(chan struct{})}
}

func (g *gate) Read(p []byte) (int, error) {
	if !g.passed && g.n >= g.blockAt {
		g.passed = true
		close(g.blocked)
		<-g.release
	}
	if !g.passed && int64(len(p)) > g.blockAt-g.n {
		p = p[:g.blockAt-g.n]
	}
	n, err := g.src.Read(p)
	g.n += int64(n)
	return n, err
}

func TestNoPartialObjectWhileStreaming(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	const size = 4 << 20
	data := backendtest.Data(size, 3)
	g := newGate(bytes.NewReader(data), size/2)
	done := make(chan error, 1)
	go func() { done <- s.Put(ctx, "partial/k", g, size) }()
	<-g.blocked

	// Half the body is written, to a temporary file only.
	if got := objectFiles(t, s); len(got) != 0 {
		t.Fatalf("files under objects/ while the body is incomplete: %q", got)
	}
	tmp := names(t, filepath.Join(s.Root(), "tmp"))
	if len(tmp) != 1 {
		t.Fatalf("tmp/ holds %q, want one temporary file", tmp)
	}
	fi, err := os.Stat(filepath.Join(s.Root(), "tmp", tmp[0]))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() == 0 || fi.Size() > size/2 {
		t.Fatalf("temporary file has %d bytes, want (0, %d]", fi.Size(), size/2)
	}
	if _, err := s.Stat(ctx, "partial/k"); !errors.Is(err, backends.ErrNotFound) {
		t.Fatalf("Stat of an object being put = %v, want ErrNotFound", err)
	}

	close(g.release)
	if err := <-done; err != nil {
		t.Fatalf("Put = %v", err)
	}
	if got := objectFiles(t, s); !slices.Equal(got, []string{"partial/k"}) {
		t.Fatalf("objects/ = %q after Put", got)
	}
	checkNoResidue(t, s)
	rc, err := s.Open(ctx, "partial/k", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if got, _ := io.ReadAll(rc); !bytes.Equal(got, data) {
		t.Fatal("content differs")
	}
}

func TestFailedPutLeavesNoTemp(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	errBoom := errors.New("boom")

	err := s.Put(ctx, "f/short", bytes.NewReader(make([]byte, 10)), 11)
	if !errors.Is(err, disk.ErrSizeMismatch) {
		t.Fatalf("short body: %v, want ErrSizeMismatch", err)
	}
	checkNoResidue(t, s)
	err = s.Put(ctx, "f/long", bytes.NewReader(make([]byte, 12)), 11)
	if !errors.Is(err, disk.ErrSizeMismatch) {
		t.Fatalf("long body: %v, want ErrSizeMismatch", err)
	}
	checkNoResidue(t, s)
	err = s.Put(ctx, "f/err", io.MultiReader(bytes.NewReader(make([]byte, 1<<20)), errOnly{errBoom}), -1)
	if !errors.Is(err, errBoom) || !strings.Contains(err.Error(), "f/err") {
		t.Fatalf("failing reader: %v, want the reader's error with the key", err)
	}
	checkNoResidue(t, s)
	err = s.Put(ctx, "../x", bytes.NewReader(nil), 0)
	if !errors.Is(err, disk.ErrInvalidKey) {
		t.Fatalf("invalid key: %v, want ErrInvalidKey", err)
	}
	err = s.Put(ctx, "f/k", bytes.NewReader(nil), -2)
	if err == nil {
		t.Fatal("size -2 accepted")
	}
	checkNoResidue(t, s)
	if got := objectFiles(t, s); len(got) != 0 {
		t.Fatalf("objects/ = %q", got)
	}
}

// errOnly is a reader that always fails.
type errOnly struct{ err error }

func (e errOnly) Read([]byte) (int, error) { return 0, e.err }

func TestCleanTemp(t *testing.T) {
	s := newStore(t)
	tmp := filepath.Join(s.Root(), "tmp")
	old := time.Now().Add(-2 * time.Hour)
	for i := range 3 {
		p := filepath.Join(tmp, fmt.Sprintf("put-old%d", i))
		if err := os.WriteFile(p, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, "put-fresh"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(tmp, "somedir"), 0o750); err != nil {
		t.Fatal(err)
	}

	n, err := s.CleanTemp(time.Hour)
	if err != nil || n != 3 {
		t.Fatalf("CleanTemp(1h) = %d, %v; want 3", n, err)
	}
	if got := names(t, tmp); !slices.Equal(got, []string{"put-fresh", "somedir"}) {
		t.Fatalf("tmp/ = %q after CleanTemp(1h)", got)
	}
	n, err = s.CleanTemp(0)
	if err != nil || n != 1 {
		t.Fatalf("CleanTemp(0) = %d, %v; want 1", n, err)
	}
	if got := names(t, tmp); !slices.Equal(got, []string{"somedir"}) {
		t.Fatalf("tmp/ = %q after CleanTemp(0)", got)
	}
	// Objects are never touched.
	ctx := context.Background()
	if err := s.Put(ctx, "kept", bytes.NewReader([]byte("abc")), 3); err != nil {
		t.Fatal(err)
	}
	if n, err := s.CleanTemp(0); err != nil || n != 0 {
		t.Fatalf("CleanTemp(0) = %d, %v; want 0", n, err)
	}
	if _, err := s.Stat(ctx, "kept"); err != nil {
		t.Fatal(err)
	}
}

func TestCleanTempSparesInFlightPut(t *testing.T) {
	s := newStore(t)
	// Made to look ancient: the in-flight registry, not the age, protects it.
	finish := stalledPut(t, s)
	if n, err := s.CleanTemp(0); err != nil || n != 0 {
		t.Fatalf("CleanTemp(0) during a Put = %d, %v; want 0", n, err)
	}
	finish()
}

// stalledPut starts a 1 MiB Put of key "inflight" on s that stops half-way
// for the rest of its body, its temporary file made to look two days old;
// finish lets it complete and fails t unless it did, the object whole.
func stalledPut(t *testing.T, s *disk.Store) (finish func()) {
	t.Helper()
	ctx := context.Background()
	const size = 1 << 20
	data := backendtest.Data(size, 5)
	g := newGate(bytes.NewReader(data), size/2)
	done := make(chan error, 1)
	go func() { done <- s.Put(ctx, "inflight", g, size) }()
	<-g.blocked

	tmp := filepath.Join(s.Root(), "tmp")
	got := names(t, tmp)
	if len(got) != 1 {
		t.Fatalf("tmp/ = %q", got)
	}
	old := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(filepath.Join(tmp, got[0]), old, old); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		close(g.release)
		if err := <-done; err != nil {
			t.Fatalf("Put = %v", err)
		}
		checkNoResidue(t, s)
		if info, err := s.Stat(ctx, "inflight"); err != nil || info.Size != size {
			t.Fatalf("Stat = %+v, %v", info, err)
		}
	}
}

// A replica sharing the root (another Store, another process) does not
// have this Store's in-flight registry: it judges a temporary file by its
// modification time. That time can say nothing about a live Put: an
// O_DIRECT body is written only when 512 KiB have arrived (a client
// trickling bytes within the body idle timeout leaves the file untouched
// for hours), and a clock stepped forward on the sweeper, or back on the
// writer, ages every file at once. The sweep must still spare the file of
// a Put in flight: here it is made to look two days old while its Put
// waits for the rest of its body, and the other Store's sweep leaves it;
// the Put then completes.
func TestCleanTempSparesPutOfAnotherStore(t *testing.T) {
	s := newStore(t)
	other, err := disk.New(s.Root())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	finish := stalledPut(t, s)
	if n, err := other.SweepTemp(ctx, time.Hour); err != nil || n != 0 {
		t.Errorf("another Store's SweepTemp(1h) during a Put = %d, %v; want 0", n, err)
	}
	finish()
	// A file no Put holds (its process gone) is still swept by age.
	old := time.Now().Add(-48 * time.Hour)
	orphan := filepath.Join(s.Root(), "tmp", "put-orphan")
	if err := os.WriteFile(orphan, []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(orphan, old, old); err != nil {
		t.Fatal(err)
	}
	if n, err := other.SweepTemp(ctx, time.Hour); err != nil || n != 1 {
		t.Errorf("SweepTemp(1h) of an orphan = %d, %v; want 1", n, err)
	}
}

func TestKeyConflict(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	put := func(key string) error { return s.Put(ctx, key, bytes.NewReader([]byte("data")), 4) }

	if err := put("c"); err != nil {
		t.Fatal(err)
	}
	if err := put("c/d"); !errors.Is(err, disk.ErrKeyConflict) {
		t.Fatalf("Put below an object = %v, want ErrKeyConflict", err)
	}
	if err := put("e/f"); err != nil {
		t.Fatal(err)
	}
	err := put("e")
	if !errors.Is(err, disk.ErrKeyConflict) || errors.Is(err, backends.ErrExists) {
		t.Fatalf("Put of a key that is a directory = %v, want ErrKeyConflict (not ErrExists)", err)
	}
	checkNoResidue(t, s)
	if got := objectFiles(t, s); !slices.Equal(got, []string{"c", "e/f"}) {
		t.Fatalf("objects/ = %q", got)
	}
}

func TestPutExistingKeyDoesNotReadBody(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if err := s.Put(ctx, "k", bytes.NewReader([]byte("x")), 1); err != nil {
		t.Fatal(err)
	}
	r := &countingReader{r: backendtest.NewReader(1<<30, 1)}
	if err := s.Put(ctx, "k", r, 1<<30); !errors.Is(err, backends.ErrExists) {
		t.Fatalf("Put = %v, want ErrExists", err)
	}
	if r.n != 0 {
		t.Fatalf("Put of an existing key read %d bytes of the body", r.n)
	}
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func TestReopen(t *testing.T) {
	root := filepath.Join(t.TempDir(), "store")
	ctx := context.Background()
	s1, err := disk.New(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := s1.Put(ctx, "a/b", bytes.NewReader([]byte("hello")), 5); err != nil {
		t.Fatal(err)
	}
	s2, err := disk.New(root + "/") // same root, different spelling
	if err != nil {
		t.Fatal(err)
	}
	if s2.Root() != s1.Root() {
		t.Fatalf("Root %q vs %q", s2.Root(), s1.Root())
	}
	rc, err := s2.Open(ctx, "a/b", 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if got, _ := io.ReadAll(rc); string(got) != "ell" {
		t.Fatalf("read %q", got)
	}
	if err := s2.Put(ctx, "a/b", bytes.NewReader([]byte("other")), 5); !errors.Is(err, backends.ErrExists) {
		t.Fatalf("Put through a second Store = %v, want ErrExists", err)
	}
}

func TestNewErrors(t *testing.T) {
	if _, err := disk.New(""); err == nil {
		t.Fatal("New(\"\") succeeded")
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := disk.New(file); err == nil {
		t.Fatal("New on a regular file succeeded")
	}
	// New leaves no probe file behind.
	s := newStore(t)
	checkNoResidue(t, s)
	if got := objectFiles(t, s); len(got) != 0 {
		t.Fatalf("objects/ = %q after New", got)
	}
}

func TestOpenRangePastEnd(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if err := s.Put(ctx, "k", bytes.NewReader([]byte("0123456789")), 10); err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]int64{{0, 11}, {5, 6}, {10, 1}, {11, 0}} {
		if rc, err := s.Open(ctx, "k", r[0], r[1]); err == nil {
			rc.Close()
			t.Fatalf("Open(%d, %d) of a 10-byte object succeeded", r[0], r[1])
		}
	}
	for _, r := range [][2]int64{{0, 10}, {5, 5}, {10, 0}, {9, -1}} {
		rc, err := s.Open(ctx, "k", r[0], r[1])
		if err != nil {
			t.Fatalf("Open(%d, %d) = %v", r[0], r[1], err)
		}
		rc.Close()
	}
}

func TestListIgnoresStrayFiles(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if err := s.Put(ctx, "d/real", bytes.NewReader([]byte("x")), 1); err != nil {
		t.Fatal(err)
	}
	objects := filepath.Join(s.Root(), "objects")
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"bad name", "d/~probe", "d/x y"} {
		if err := os.WriteFile(filepath.Join(objects, filepath.FromSlash(p)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(objects, "d", "link")); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := s.List(ctx, "", func(info backends.ObjectInfo) error {
		got = append(got, info.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"d/real"}) {
		t.Fatalf("List = %q, want [d/real]", got)
	}
	if _, err := s.Stat(ctx, "d/link"); !errors.Is(err, backends.ErrNotFound) {
		t.Fatalf("Stat of a symlink = %v, want ErrNotFound", err)
	}
}

// TestInvalidKeysStayInRoot checks the filesystem, not just the errors: no
// file appears where a path-traversing key would point.
func TestInvalidKeysStayInRoot(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "a", "b", "store")
	s, err := disk.New(root)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	objects := filepath.Join(root, "objects")
	keys := []string{
		"../escape", "../../escape", "../../../escape", "../../../../escape",
		"a/../../escape", "/escape", "./escape", `..\escape`, "escape/..", "x/../../tmp/escape",
	}
	for _, k := range keys {
		if err := s.Put(ctx, k, bytes.NewReader([]byte("pwned")), 5); !errors.Is(err, disk.ErrInvalidKey) {
			t.Fatalf("Put(%q) = %v, want ErrInvalidKey", k, err)
		}
	}
	err = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			t.Errorf("file created: %s", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		// (Some of these point at existing directories such as objects/.)
		if fi, err := os.Lstat(filepath.Join(objects, filepath.FromSlash(k))); err == nil && !fi.IsDir() {
			t.Errorf("%q: a file exists where it points", k)
		}
	}
}

// TestConcurrentPutDeleteSharedDirs races Puts that create directories
// against Deletes that prune them.
func TestConcurrentPutDeleteSharedDirs(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	const workers, iters = 6, 150
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range iters {
				key := fmt.Sprintf("s/%d/d/w%d-%d", i%2, w, i)
				if err := s.Put(ctx, key, bytes.NewReader([]byte(key)), int64(len(key))); err != nil {
					errs <- err
					return
				}
				if _, err := s.Stat(ctx, key); err != nil {
					errs <- err
					return
				}
				if err := s.Delete(ctx, key); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	checkNoResidue(t, s)
	if got := objectFiles(t, s); len(got) != 0 {
		t.Fatalf("objects left: %q", got)
	}
	// Pruning removed every directory the deletes emptied.
	if got := names(t, filepath.Join(s.Root(), "objects")); len(got) != 0 {
		t.Fatalf("directories left under objects/: %q", got)
	}
}

func TestDeletePrunesButKeepsObjectsDir(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	for _, k := range []string{"p/q/r/s", "p/q/t"} {
		if err := s.Put(ctx, k, bytes.NewReader(nil), 0); err != nil {
			t.Fatal(err)
		}
	}
	objects := filepath.Join(s.Root(), "objects")
	if err := s.Delete(ctx, "p/q/r/s"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(objects, "p", "q", "r")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("empty directory p/q/r not pruned: %v", err)
	}
	if _, err := os.Stat(filepath.Join(objects, "p", "q", "t")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "p/q/t"); err != nil {
		t.Fatal(err)
	}
	if got := names(t, objects); len(got) != 0 {
		t.Fatalf("objects/ = %q, want empty", got)
	}
	if fi, err := os.Stat(objects); err != nil || !fi.IsDir() {
		t.Fatalf("objects/ itself removed: %v", err)
	}
}

func TestNewRemovesStaleProbe(t *testing.T) {
	s := newStore(t)
	stale := filepath.Join(s.Root(), "objects", "~link-probe-0123456789abcdef")
	if err := os.WriteFile(stale, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := disk.New(s.Root()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stale probe survived New: %v", err)
	}
	checkNoResidue(t, s)
}
