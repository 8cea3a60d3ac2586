// Package disk is a backends.Backend that keeps every object as one file on
// a local POSIX filesystem. It is the backend for single-node deployments and
// the reference implementation the conformance suite (backendtest) is
// written against.
//
// Layout under the root directory given to New:
//
//	root/objects/<key>   committed objects; each '/' in a key is a directory
//	root/tmp/put-*       bodies being written by Put, or left by a crash
//
// Put streams the body into a fresh file in root/tmp, hard-links it to its
// final name with link(2) — which fails when the name exists — once the
// whole body is written, then fsyncs the file and the directories it
// changed, and returns only when body and name are durable. (The file is
// synced after the link because on journaling filesystems that one fsync
// commits the new directory entry too, which leaves the directory fsyncs
// little to do: one flush fewer per object.) That upholds the two rules
// this package must never break:
//
//   - It never overwrites an object. A Put of an existing key fails with
//     backends.ErrExists, and of two concurrent Puts of one key exactly one
//     wins; the loser's bytes never reach objects/.
//   - It never exposes a partial object. A key appears under objects/ only
//     once its complete body is written, it is durable when Put returns, and
//     a Put that fails (short or long body, reader error, cancelled context,
//     full disk, failed fsync) leaves nothing under objects/ and removes its
//     temporary file. A crash while a Put is still running may leave its
//     key under objects/ with less than the body: the caller never learnt
//     that the key holds anything (Put had not returned), so it references
//     nothing there; the gateway records every key as an upload intent
//     before Put and the collector deletes what the intent names.
//
// A reader returned by Open holds an open file descriptor, so deleting an
// object while it is being read does not disturb the reader (the inode lives
// until the last descriptor is closed).
//
// A crash can leave temporary files in root/tmp; they are never visible as
// objects, and CleanTemp removes them (call it at startup and from the
// collector).
//
// Requirements and limits:
//
//   - root/tmp and root/objects must be on one filesystem that supports hard
//     links; New checks this.
//   - Use a case-sensitive filesystem: keys differing only in case would
//     otherwise share a file.
//   - Each key segment becomes a file name, so a segment longer than the
//     filesystem's NAME_MAX (255 bytes on ext4, xfs, btrfs) cannot be
//     stored; Put fails with an error.
//   - A key cannot be both an object and a directory of other keys ("a" and
//     "a/b"): the second Put fails with ErrKeyConflict. Gateway keys never
//     do this.
//   - One Store per root directory: CleanTemp protects only the in-flight
//     Puts of its own Store. (A foreign CleanTemp can only make a Put fail;
//     it can never corrupt or expose an object.)
package disk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/blobgw/blobgw/backends"
)

var (
	_ backends.Backend     = (*Store)(nil)
	_ backends.TempSweeper = (*Store)(nil)
)

// Errors specific to this backend, always returned wrapped with the
// operation and key ("disk: put k: invalid key"); test with errors.Is.
var (
	// ErrInvalidKey: the key is rejected by backends.ValidKey.
	ErrInvalidKey = errors.New("invalid key")
	// ErrSizeMismatch: Put's body is shorter or longer than the declared
	// size.
	ErrSizeMismatch = errors.New("body length does not match declared size")
	// ErrKeyConflict: Put cannot store the key because another key occupies
	// its path: the key names a directory holding other keys, or one of its
	// leading segments is itself an object.
	ErrKeyConflict = errors.New("key conflicts with the path of another key")
)

const (
	objectsDir  = "objects"
	tmpDir      = "tmp"
	tempPrefix  = "put-"
	probePrefix = "~link-probe-" // '~' is not a key character
	copyBufSize = 256 << 10
	dirPerm     = 0o750
	filePerm    = 0o600
	// maxLinkAttempts bounds how often Put recreates parent directories that
	// a concurrent Delete pruned between mkdir and link.
	maxLinkAttempts = 16
)

var bufPool = sync.Pool{New: func() any {
	b := make([]byte, copyBufSize)
	return &b
}}

// Store is a backends.Backend on a local directory. It is safe for
// concurrent use.
type Store struct {
	root    string
	objects string
	tmp     string

	mu     sync.Mutex
	active map[string]struct{} // base names of temp files of in-flight Puts

	// dirsMu guards synced, the directories under objects/ whose entry,
	// and each ancestor's, this process has fsynced: a Put into one of
	// them fsyncs only the directory itself. A Put into any other (made by
	// a concurrent Put that has not fsynced its parent yet, or by an
	// earlier process) fsyncs the whole chain up to objects/ first. prune
	// forgets a directory as it removes it, under dirsMu.
	dirsMu sync.Mutex
	synced map[string]struct{}
}

// New opens the store rooted at root, creating root, root/objects and
// root/tmp as needed. It verifies that a temporary file can be hard-linked
// into root/objects. New does not remove leftover temporary files; call
// CleanTemp for that.
func New(root string) (*Store, error) {
	if root == "" {
		return nil, errors.New("disk: new: empty root directory")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("disk: new %s: %w", root, err)
	}
	s := &Store{
		root:    abs,
		objects: filepath.Join(abs, objectsDir),
		tmp:     filepath.Join(abs, tmpDir),
		active:  make(map[string]struct{}),
		synced:  make(map[string]struct{}),
	}
	for _, d := range []string{s.objects, s.tmp} {
		if err := os.MkdirAll(d, dirPerm); err != nil {
			return nil, fmt.Errorf("disk: new %s: %w", abs, err)
		}
	}
	// Make the two directories durable. The root's parent is best effort:
	// we may not be allowed to open it, and it normally pre-exists.
	if err := syncDir(abs); err != nil {
		return nil, fmt.Errorf("disk: new %s: %w", abs, err)
	}
	_ = syncDir(filepath.Dir(abs))
	if err := s.probeLink(); err != nil {
		return nil, fmt.Errorf("disk: new %s: root/tmp and root/objects must be on one filesystem that supports hard links: %w", abs, err)
	}
	return s, nil
}

// probeLink links an empty temp file into objects/ under a name no valid key
// can have (so List never reports it) and removes both again. It first
// removes probes a crash may have left.
func (s *Store) probeLink() error {
	if stale, err := filepath.Glob(filepath.Join(s.objects, probePrefix+"*")); err == nil {
		for _, p := range stale {
			os.Remove(p)
		}
	}
	tmp, f, err := s.createTemp()
	if err != nil {
		return err
	}
	defer s.release(tmp)
	defer os.Remove(tmp)
	if err := f.Close(); err != nil {
		return err
	}
	probe := filepath.Join(s.objects, fmt.Sprintf("%s%016x", probePrefix, rand.Uint64()))
	if err := os.Link(tmp, probe); err != nil {
		return err
	}
	return os.Remove(probe)
}

// Root returns the absolute root directory of the store.
func (s *Store) Root() string { return s.root }

// path maps a key to its file name under objects/.
func (s *Store) path(key string) (string, error) {
	if !backends.ValidKey(key) {
		return "", ErrInvalidKey
	}
	return filepath.Join(s.objects, filepath.FromSlash(key)), nil
}

// Put implements backends.Backend. The body is copied through one pooled
// 256 KiB buffer, so memory does not grow with the object size. The context
// is checked before every read of r and once more before the object is
// committed; a Read that blocks must itself return when the context is
// cancelled (HTTP request bodies do).
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64) (err error) {
	defer func() {
		// A full filesystem (or quota) is the store's outage, as S3's
		// XMinioStorageFull is: 503 ServerBusy, not a 500.
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
			err = fmt.Errorf("%w: %w", err, backends.ErrUnavailable)
		}
	}()
	final, err := s.path(key)
	if err != nil {
		return fmt.Errorf("disk: put %q: %w", key, err)
	}
	if size < -1 {
		return fmt.Errorf("disk: put %s: invalid size %d", key, size)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("disk: put %s: %w", key, err)
	}
	// Cheap early refusal so we do not stream a body we cannot commit. The
	// link below is what actually guarantees no overwrite.
	if err := s.checkVacant(final); err != nil {
		return fmt.Errorf("disk: put %s: %w", key, err)
	}

	tmp, f, err := s.createTemp()
	if err != nil {
		return fmt.Errorf("disk: put %s: %w", key, err)
	}
	defer func() {
		if f != nil {
			f.Close()
		}
		// After a successful commit the temp name is just a second link
		// to the object's inode; removing it never touches the object. A
		// failed removal leaves garbage for CleanTemp, not a visible object,
		// so it does not fail the Put.
		os.Remove(tmp)
		s.release(tmp)
	}()

	n, err := copyBody(ctx, f, r, size)
	if err != nil {
		return fmt.Errorf("disk: put %s: %w", key, err)
	}
	if size >= 0 && n != size {
		if n > size {
			return fmt.Errorf("disk: put %s: %w: body has more than the declared %d bytes", key, ErrSizeMismatch, size)
		}
		return fmt.Errorf("disk: put %s: %w: body has %d bytes, declared %d", key, ErrSizeMismatch, n, size)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("disk: put %s: %w", key, err)
	}
	dirty, err := s.link(tmp, final)
	if err != nil {
		return fmt.Errorf("disk: put %s: %w", key, err)
	}
	leaf := filepath.Dir(final)
	chain := !s.dirSynced(leaf)
	if chain {
		// The directory may be new and its entry not yet durable (another
		// Put created it and has not fsynced the parent yet): the object's
		// own fsyncs would not make it reachable after a crash.
		for d := leaf; len(d) > len(s.objects); {
			d = filepath.Dir(d)
			dirty[d] = struct{}{}
		}
	}
	// The complete body is under its final name; now make body and name
	// durable. The file first: on journaling filesystems its fsync also
	// commits the new directory entry, so the directory fsyncs after it
	// usually find nothing left to write.
	err = f.Sync()
	if err == nil {
		err = f.Close()
		f = nil
	}
	for d := range dirty {
		if err != nil {
			break
		}
		err = syncDir(d)
	}
	if err != nil {
		// The object must not stay visible when Put fails.
		os.Remove(final)
		return fmt.Errorf("disk: put %s: %w", key, err)
	}
	if chain {
		s.markSynced(leaf, final)
	}
	return nil
}

// dirSynced reports whether dir's chain of entries is known durable.
func (s *Store) dirSynced(dir string) bool {
	s.dirsMu.Lock()
	defer s.dirsMu.Unlock()
	_, ok := s.synced[dir]
	return ok
}

// markSynced records dir, whose chain the caller fsynced, while the
// caller's object final still holds it: prune cannot remove dir before
// forgetting it.
func (s *Store) markSynced(dir, final string) {
	s.dirsMu.Lock()
	defer s.dirsMu.Unlock()
	if _, err := os.Lstat(final); err == nil {
		s.synced[dir] = struct{}{}
	}
}

// checkVacant reports ErrExists or ErrKeyConflict when final is taken.
func (s *Store) checkVacant(final string) error {
	fi, err := os.Lstat(final)
	switch {
	case err == nil && fi.IsDir():
		return ErrKeyConflict
	case err == nil:
		return backends.ErrExists
	case errors.Is(err, syscall.ENOTDIR):
		return ErrKeyConflict
	case errors.Is(err, fs.ErrNotExist):
		return nil
	default:
		return err
	}
}

// createTemp creates a new empty temporary file in tmp/ and registers it as
// in flight (before it exists, so CleanTemp can never see it unregistered).
// The caller must os.Remove the file and then call release.
func (s *Store) createTemp() (string, *os.File, error) {
	for range 10 {
		name := fmt.Sprintf("%s%016x", tempPrefix, rand.Uint64())
		s.mu.Lock()
		s.active[name] = struct{}{}
		s.mu.Unlock()
		p := filepath.Join(s.tmp, name)
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, filePerm)
		if err == nil {
			holdTemp(f)
			return p, f, nil
		}
		s.release(p)
		if !errors.Is(err, fs.ErrExist) {
			return "", nil, fmt.Errorf("create temporary file: %w", err)
		}
	}
	return "", nil, errors.New("create temporary file: too many name collisions")
}

// release unregisters a temporary file created by createTemp.
func (s *Store) release(tmp string) {
	s.mu.Lock()
	delete(s.active, filepath.Base(tmp))
	s.mu.Unlock()
}

// ctxReader checks ctx before every Read and remembers the read error, so
// copyBody can tell read errors from write errors.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
	err error
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		c.err = err
		return 0, err
	}
	n, err := c.r.Read(p)
	if err != nil && err != io.EOF {
		c.err = err
	}
	return n, err
}

// copyBody copies r to f: with O_DIRECT where the filesystem takes it
// (direct_linux.go), else through a pooled buffer and the page cache. With
// size >= 0 it reads at most size+1 bytes, enough to detect a body that is
// too long.
func copyBody(ctx context.Context, f *os.File, r io.Reader, size int64) (int64, error) {
	cr := &ctxReader{ctx: ctx, r: r}
	var src io.Reader = cr
	if size >= 0 {
		src = &io.LimitedReader{R: cr, N: min(size, math.MaxInt64-1) + 1}
	}
	n, direct, err := copyDirect(f, src, size) // direct_linux.go
	if !direct {
		bp := bufPool.Get().(*[]byte)
		defer bufPool.Put(bp)
		// newWriter hides *os.File's ReadFrom so the bounded buffer is what is
		// used, and starts writeback as the body arrives (writeback_linux.go).
		n, err = io.CopyBuffer(newWriter(f), src, *bp)
	}
	switch {
	case err == nil:
		return n, nil
	case cr.err != nil && errors.Is(err, cr.err):
		return n, fmt.Errorf("read body: %w", err)
	default:
		return n, fmt.Errorf("write temporary file: %w", err)
	}
}

// link links the complete temp file to final and returns the directories
// it changed, which the caller must fsync. When link fails, final does not
// exist (unless it existed before: ErrExists).
func (s *Store) link(tmp, final string) (map[string]struct{}, error) {
	dirty := map[string]struct{}{filepath.Dir(final): {}}
	for attempt := 1; ; attempt++ {
		err := os.Link(tmp, final)
		if err == nil {
			break
		}
		switch {
		case errors.Is(err, fs.ErrExist):
			if fi, serr := os.Lstat(final); serr == nil && fi.IsDir() {
				return nil, ErrKeyConflict
			}
			return nil, backends.ErrExists
		case errors.Is(err, syscall.ENOTDIR):
			return nil, ErrKeyConflict
		case errors.Is(err, fs.ErrNotExist) && attempt < maxLinkAttempts:
			if _, serr := os.Lstat(tmp); serr != nil {
				return nil, fmt.Errorf("temporary file vanished before commit: %w", serr)
			}
			// Parent directories are missing: never created, or pruned
			// by a concurrent Delete. (Re)create them and retry.
			created, merr := s.mkdirs(filepath.Dir(final))
			if merr != nil {
				return nil, merr
			}
			for _, d := range created {
				dirty[d] = struct{}{}
			}
		default:
			return nil, fmt.Errorf("commit: %w", err)
		}
	}
	return dirty, nil
}

// mkdirs creates the directories from objects/ down to dir and returns the
// parents of the directories it created (their entries changed and need an
// fsync). A directory pruned concurrently stops it early without error; the
// caller's next link attempt fails and retries.
func (s *Store) mkdirs(dir string) ([]string, error) {
	rel, err := filepath.Rel(s.objects, dir)
	if err != nil || rel == "." {
		return nil, err
	}
	var changed []string
	cur := s.objects
	for _, seg := range strings.Split(rel, string(filepath.Separator)) {
		parent := cur
		cur = filepath.Join(cur, seg)
		err := os.Mkdir(cur, dirPerm)
		switch {
		case err == nil:
			changed = append(changed, parent)
		case errors.Is(err, fs.ErrExist):
			// A directory, or an object (the link then reports ENOTDIR).
		case errors.Is(err, syscall.ENOTDIR):
			return changed, ErrKeyConflict
		case errors.Is(err, fs.ErrNotExist):
			return changed, nil
		default:
			return changed, fmt.Errorf("create directory: %w", err)
		}
	}
	return changed, nil
}

// syncDir fsyncs a directory so entries added to or removed from it are
// durable (a variable for the tests that watch which directories a Put or
// Delete fsyncs).
var syncDir = fsyncDir

func fsyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// notFound reports whether err means the path does not exist, including a
// leading segment being a file.
func notFound(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// Open implements backends.Backend. The range must lie within the object:
// an offset beyond the size, or a length reaching past the end, is an
// error. The returned reader does not watch ctx; close it to stop.
func (s *Store) Open(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	p, err := s.path(key)
	if err != nil {
		return nil, fmt.Errorf("disk: open %q: %w", key, err)
	}
	if offset < 0 || length < -1 {
		return nil, fmt.Errorf("disk: open %s: invalid range offset %d length %d", key, offset, length)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("disk: open %s: %w", key, err)
	}
	f, err := os.Open(p)
	if err != nil {
		if notFound(err) {
			return nil, fmt.Errorf("disk: open %s: %w", key, backends.ErrNotFound)
		}
		return nil, fmt.Errorf("disk: open %s: %w", key, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("disk: open %s: %w", key, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("disk: open %s: %w", key, backends.ErrNotFound)
	}
	size := fi.Size()
	if offset > size {
		f.Close()
		return nil, fmt.Errorf("disk: open %s: offset %d beyond object size %d", key, offset, size)
	}
	if length == -1 {
		length = size - offset
	} else if length > size-offset {
		f.Close()
		return nil, fmt.Errorf("disk: open %s: range offset %d length %d beyond object size %d", key, offset, length, size)
	}
	return &objectReader{sr: io.NewSectionReader(f, offset, length), f: f, base: offset}, nil
}

// objectReader reads one range of an object file.
type objectReader struct {
	sr   *io.SectionReader
	f    *os.File
	base int64 // offset of the range in the file
}

var _ io.WriterTo = (*objectReader)(nil)

func (r *objectReader) Read(p []byte) (int, error) { return r.sr.Read(p) }

func (r *objectReader) Close() error { return r.f.Close() }

// WriteTo hands the rest of the range to w as an io.LimitedReader over the
// file, so io.Copy to a TCP connection or an http.ResponseWriter can use
// sendfile(2) instead of copying through user space.
func (r *objectReader) WriteTo(w io.Writer) (int64, error) {
	pos, _ := r.sr.Seek(0, io.SeekCurrent)
	remaining := r.sr.Size() - pos
	if remaining <= 0 {
		return 0, nil
	}
	if _, err := r.f.Seek(r.base+pos, io.SeekStart); err != nil {
		return 0, err
	}
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	n, err := io.CopyBuffer(w, &io.LimitedReader{R: r.f, N: remaining}, *bp)
	r.sr.Seek(pos+n, io.SeekStart)
	if err == nil && n < remaining {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// Delete implements backends.Backend. The removal is fsynced (a crash cannot
// resurrect the object); then parent directories left empty are removed,
// best effort, up to but never including root/objects.
func (s *Store) Delete(ctx context.Context, key string) error {
	p, err := s.path(key)
	if err != nil {
		return fmt.Errorf("disk: delete %q: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("disk: delete %s: %w", key, err)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		if notFound(err) {
			return nil
		}
		return fmt.Errorf("disk: delete %s: %w", key, err)
	}
	if fi.IsDir() {
		return nil // only a prefix of other keys: no such object
	}
	if err := os.Remove(p); err != nil && !notFound(err) {
		return fmt.Errorf("disk: delete %s: %w", key, err)
	}
	parent := filepath.Dir(p)
	if err := syncDir(parent); err != nil {
		if !notFound(err) {
			return fmt.Errorf("disk: delete %s: %w", key, err)
		}
		// A concurrent Delete pruned parent after the removal, perhaps
		// after its own fsync of parent: neither that fsync nor its
		// rmdir covers this removal. Make the rmdir durable instead, so
		// the object cannot come back with its directory.
		if err := s.syncNearest(filepath.Dir(parent)); err != nil {
			return fmt.Errorf("disk: delete %s: %w", key, err)
		}
	}
	s.prune(parent)
	return nil
}

// syncNearest fsyncs dir or, when it is gone too, its nearest ancestor
// that exists, up to objects/.
func (s *Store) syncNearest(dir string) error {
	for {
		err := syncDir(dir)
		if err == nil || !notFound(err) || len(dir) <= len(s.objects) {
			return err
		}
		dir = filepath.Dir(dir)
	}
}

// prune removes dir and its ancestors below objects/ while they are empty.
// It uses rmdir, never unlink, so it cannot remove an object that took a
// pruned directory's name meanwhile.
func (s *Store) prune(dir string) {
	prefix := s.objects + string(filepath.Separator)
	for strings.HasPrefix(dir, prefix) {
		s.dirsMu.Lock()
		err := syscall.Rmdir(dir)
		if err == nil {
			delete(s.synced, dir)
		}
		s.dirsMu.Unlock()
		if err != nil {
			return
		}
		dir = filepath.Dir(dir)
	}
}

// Stat implements backends.Backend.
func (s *Store) Stat(ctx context.Context, key string) (backends.ObjectInfo, error) {
	p, err := s.path(key)
	if err != nil {
		return backends.ObjectInfo{}, fmt.Errorf("disk: stat %q: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return backends.ObjectInfo{}, fmt.Errorf("disk: stat %s: %w", key, err)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		if notFound(err) {
			return backends.ObjectInfo{}, fmt.Errorf("disk: stat %s: %w", key, backends.ErrNotFound)
		}
		return backends.ObjectInfo{}, fmt.Errorf("disk: stat %s: %w", key, err)
	}
	if !fi.Mode().IsRegular() {
		return backends.ObjectInfo{}, fmt.Errorf("disk: stat %s: %w", key, backends.ErrNotFound)
	}
	return backends.ObjectInfo{Key: key, Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

// callbackError carries an error returned by List's fn through WalkDir
// untouched (fn might even return fs.SkipDir).
type callbackError struct{ err error }

func (e callbackError) Error() string { return e.err.Error() }

// List implements backends.Backend. It walks only the directory named by
// prefix up to its last '/', skips subtrees that cannot match, and ignores
// anything under objects/ that is not a regular file with a valid key name.
// Objects put or deleted during the walk may or may not be reported. An
// error returned by fn is returned unchanged.
func (s *Store) List(ctx context.Context, prefix string, fn func(backends.ObjectInfo) error) error {
	start := s.objects
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		// Every key having this prefix has prefix[:i] as its leading
		// segments, so an invalid one matches nothing (and this also keeps
		// the walk inside objects/).
		dir := prefix[:i]
		if !backends.ValidKey(dir) {
			return nil
		}
		start = filepath.Join(s.objects, filepath.FromSlash(dir))
	}
	err := filepath.WalkDir(start, func(path string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			if notFound(err) {
				return nil // removed while we walked
			}
			return err
		}
		if path == s.objects {
			return nil
		}
		rel, err := filepath.Rel(s.objects, path)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if d.IsDir() {
			if !strings.HasPrefix(key+"/", prefix) && !strings.HasPrefix(prefix, key+"/") {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasPrefix(key, prefix) || !backends.ValidKey(key) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			if notFound(err) {
				return nil
			}
			return err
		}
		if err := fn(backends.ObjectInfo{Key: key, Size: fi.Size(), ModTime: fi.ModTime()}); err != nil {
			return callbackError{err}
		}
		return nil
	})
	var cb callbackError
	if errors.As(err, &cb) {
		return cb.err
	}
	if err != nil {
		return fmt.Errorf("disk: list %q: %w", prefix, err)
	}
	return nil
}

// CleanTemp removes temporary files in root/tmp whose modification time is
// older than olderThan, and reports how many it removed. Such files are left
// by a process that crashed mid-Put; they are never visible as objects. Call
// it once at startup and periodically from the collector. Temporary files
// of Puts in flight on this Store are never removed, whatever their age, so
// olderThan = 0 is safe at startup.
func (s *Store) CleanTemp(olderThan time.Duration) (int, error) {
	// Read the directory before snapshotting the in-flight set: a file seen
	// here was registered before it was created, so it is either still
	// registered below, already removed by its Put, or an orphan.
	entries, err := os.ReadDir(s.tmp)
	if err != nil {
		return 0, fmt.Errorf("disk: clean temp: %w", err)
	}
	s.mu.Lock()
	active := make(map[string]struct{}, len(s.active))
	for name := range s.active {
		active[name] = struct{}{}
	}
	s.mu.Unlock()

	cutoff := time.Now().Add(-olderThan)
	removed := 0
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if _, ok := active[name]; ok || !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			if !notFound(err) {
				errs = append(errs, err)
			}
			continue
		}
		if olderThan > 0 && !fi.ModTime().Before(cutoff) {
			continue
		}
		// A Put of another process sharing the root holds its file
		// (holdTemp), whatever its age says.
		ok, err := removeUnheld(filepath.Join(s.tmp, name))
		if err != nil {
			if !notFound(err) {
				errs = append(errs, err)
			}
			continue
		}
		if ok {
			removed++
		}
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("disk: clean temp: %w", err)
	}
	return removed, nil
}

// SweepTemp implements backends.TempSweeper with CleanTemp. A Put in
// flight in another process sharing the root holds a lock on its file
// (holdTemp), which spares it whatever its age (an O_DIRECT body is
// written only when 512 KiB have arrived, so a trickling client leaves
// the modification time behind; a clock step ages every file); those of
// this Store are never removed. Where the filesystem takes no lock, the
// age alone decides: olderThan well above the gateway's body idle timeout.
func (s *Store) SweepTemp(ctx context.Context, olderThan time.Duration) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("disk: sweep temp: %w", err)
	}
	if olderThan <= 0 {
		return 0, fmt.Errorf("disk: sweep temp: olderThan %v must be > 0", olderThan)
	}
	return s.CleanTemp(olderThan)
}
