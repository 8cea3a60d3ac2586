package sqlite

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

// syncLog is a fake fsync that records when each round started and ended
// on one event clock shared with the callers.
type syncLog struct {
	clock  atomic.Int64
	mu     sync.Mutex
	rounds [][2]int64 // start, end
	fail   func(n int) error
	delay  time.Duration
}

func (l *syncLog) sync() error {
	start := l.clock.Add(1)
	time.Sleep(l.delay)
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.rounds)
	l.rounds = append(l.rounds, [2]int64{start, l.clock.Add(1)})
	if l.fail != nil {
		return l.fail(n)
	}
	return nil
}

// covered reports whether a round started after called and ended before
// returned.
func (l *syncLog) covered(called, returned int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.rounds {
		if r[0] > called && r[1] < returned {
			return true
		}
	}
	return false
}

func TestGroupSyncSequential(t *testing.T) {
	l := &syncLog{}
	g := newGroupSync(l.sync)
	for i := range 5 {
		called := l.clock.Add(1)
		if err := g.wait(); err != nil {
			t.Fatal(err)
		}
		if !l.covered(called, l.clock.Add(1)) {
			t.Fatalf("call %d returned without an fsync that started after it", i)
		}
	}
	if len(l.rounds) != 5 {
		t.Fatalf("%d rounds for 5 sequential commits", len(l.rounds))
	}
}

// Concurrent callers share rounds, and every one of them still waits for a
// round that started after it called.
func TestGroupSyncConcurrent(t *testing.T) {
	l := &syncLog{delay: 5 * time.Millisecond}
	g := newGroupSync(l.sync)
	const callers = 32
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range 3 {
				called := l.clock.Add(1)
				if err := g.wait(); err != nil {
					t.Error(err)
					return
				}
				if !l.covered(called, l.clock.Add(1)) {
					t.Error("returned without an fsync that started after the call")
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	if n := len(l.rounds); n >= callers*3/2 {
		t.Fatalf("%d fsync rounds for %d commits: no grouping", n, callers*3)
	}
}

// A failed fsync fails the callers that counted on that round, and only
// them.
func TestGroupSyncError(t *testing.T) {
	boom := errors.New("boom")
	l := &syncLog{fail: func(n int) error {
		if n == 1 {
			return boom
		}
		return nil
	}}
	g := newGroupSync(l.sync)
	for i, want := range []error{nil, boom, nil} {
		if err := g.wait(); !errors.Is(err, want) {
			t.Fatalf("wait %d: %v, want %v", i, err, want)
		}
	}
	if len(g.errs) != 0 || len(g.waiters) != 0 {
		t.Fatalf("bookkeeping left: %v %v", g.errs, g.waiters)
	}
}

// A failed flush is final: Linux reports a writeback error once and a
// later flush of the file may succeed without the pages it could not
// write, so no round after it may report the commits it covers durable,
// and none runs. A failure to open the file flushed nothing and lost
// nothing: the next round flushes as before.
func TestGroupSyncFlushFailureIsFinal(t *testing.T) {
	eio := &fs.PathError{Op: "fdatasync", Path: "db-wal", Err: syscall.EIO}
	emfile := &fs.PathError{Op: "open", Path: "db-wal", Err: syscall.EMFILE}
	l := &syncLog{fail: func(n int) error {
		switch n {
		case 1:
			return emfile
		case 3:
			return eio
		}
		return nil
	}}
	g := newGroupSync(l.sync)
	for i, want := range []error{nil, emfile, nil, eio, eio, eio} {
		err := g.wait()
		if !errors.Is(err, want) || (want == nil) != (err == nil) {
			t.Fatalf("wait %d: %v, want %v", i, err, want)
		}
	}
	if len(l.rounds) != 4 {
		t.Fatalf("%d flush rounds, want 4 (none after the failed flush)", len(l.rounds))
	}
}

// Once a WAL flush failed, Update refuses a new write before it begins:
// it is certainly not committed (not MayHaveCommitted, and not visible),
// where it would otherwise commit and be reported durable by a later
// flush that succeeded without the lost frames before it.
func TestUpdateAfterFailedWALFlush(t *testing.T) {
	ctx := context.Background()
	s := migratedStore(t, filepath.Join(t.TempDir(), "g.db"))
	eio := &fs.PathError{Op: "fdatasync", Path: s.Path() + "-wal", Err: syscall.EIO}
	var flushes atomic.Int64
	s.wal = newGroupSync(func() error {
		if flushes.Add(1) == 1 {
			return fmt.Errorf("leasedb/sqlite: sync WAL: %w", eio)
		}
		return nil
	})
	if err := leasedb.WritesRefused(s); err != nil {
		t.Fatalf("WritesRefused before any flush failed: %v", err)
	}
	err := addIntentUpdate(ctx, s, "k/first")
	if err := leasedb.WritesRefused(s); !errors.Is(err, eio) {
		t.Fatalf("WritesRefused after the flush failed: %v, want the flush error", err)
	}
	if !errors.Is(err, eio) || !leasedb.MayHaveCommitted(err) {
		t.Fatalf("Update whose flush failed: %v; want the flush error, commit-unknown", err)
	}
	err = addIntentUpdate(ctx, s, "k/second")
	if err == nil || !errors.Is(err, eio) || !errors.Is(err, leasedb.ErrUnavailable) || leasedb.MayHaveCommitted(err) {
		t.Fatalf("Update after a failed flush: %v; want the flush error, unavailable, certainly not committed", err)
	}
	wantOnlyCollectionKey(t, s, "k/first", "the refused write committed nothing")
	if n := flushes.Load(); n != 1 {
		t.Fatalf("%d flushes, want 1", n)
	}
}

// Every write transaction of a Store waits for its own WAL fsync round, on
// a write connection that does not sync inside COMMIT.
func TestUpdateSyncsWAL(t *testing.T) {
	ctx := context.Background()
	s := migratedStore(t, filepath.Join(t.TempDir(), "g.db"))
	var mode int
	if err := s.w.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&mode); err != nil || mode != 1 {
		t.Fatalf("write connection synchronous = %d (%v), want 1 (NORMAL)", mode, err)
	}
	before := s.wal.doneRound
	for i := range 3 {
		err := s.Update(ctx, func(tx leasedb.Tx) error {
			return tx.AddIntent(ctx, fmt.Sprintf("k/%d", i), time.Now().Add(time.Hour))
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.wal.doneRound; got != before+uint64(i)+1 {
			t.Fatalf("after %d updates: %d fsync rounds", i+1, got-before)
		}
	}
}

// A WAL fsync that fails after COMMIT leaves a transaction that other
// connections already read: Update reports it as a commit whose outcome is
// unknown (and the store as unavailable), never as one that did not happen,
// so a caller keeps the bytes the row may point at.
func TestUpdateSyncFailureMayHaveCommitted(t *testing.T) {
	ctx := context.Background()
	s := migratedStore(t, filepath.Join(t.TempDir(), "g.db"))
	boom := errors.New("sync WAL: too many open files")
	s.wal = newGroupSync(func() error { return boom })
	err := addIntentUpdate(ctx, s, "k/synced-or-not")
	if !errors.Is(err, boom) || !leasedb.MayHaveCommitted(err) || !errors.Is(err, leasedb.ErrUnavailable) {
		t.Fatalf("Update after a failed WAL fsync: %v; want the fsync error, marked commit-unknown and unavailable", err)
	}
	wantOnlyCollectionKey(t, s, "k/synced-or-not", "the transaction is visible, so the test's premise holds")
	// A refusal by fn is a certain non-commit.
	refused := errors.New("refused")
	err = s.Update(ctx, func(tx leasedb.Tx) error { return refused })
	if !errors.Is(err, refused) || leasedb.MayHaveCommitted(err) {
		t.Fatalf("refused Update: %v", err)
	}
}

// addIntentUpdate is an Update that records an upload intent for key.
func addIntentUpdate(ctx context.Context, s *Store, key string) error {
	return s.Update(ctx, func(tx leasedb.Tx) error {
		return tx.AddIntent(ctx, key, time.Now().Add(time.Hour))
	})
}

// wantOnlyCollectionKey fails tb unless key is s's one collection key
// (why says what that shows).
func wantOnlyCollectionKey(tb testing.TB, s *Store, key, why string) {
	tb.Helper()
	keys, err := s.CollectionKeys(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	if len(keys) != 1 || keys[0] != key {
		tb.Fatalf("collection keys %v, want only %s: %s", keys, key, why)
	}
}

// migratedStore opens a Store on a new file at path with the newest
// schema, closed when tb ends.
func migratedStore(tb testing.TB, path string) *Store {
	tb.Helper()
	ctx := context.Background()
	s, err := Open(ctx, path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	if _, _, err := s.MigrateTo(ctx, 0); err != nil {
		tb.Fatal(err)
	}
	return s
}

// TestSyncFile: the WAL's flush (datasyncPath) succeeds on a file, treats
// a WAL SQLite removed as nothing to flush, and reports any other failure
// (a path under a regular file cannot be opened).
func TestSyncFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "db-wal")
	if err := os.WriteFile(p, []byte("frames"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syncFile(p); err != nil {
		t.Errorf("sync of a file: %v", err)
	}
	if err := syncFile(filepath.Join(dir, "gone-wal")); err != nil {
		t.Errorf("sync of a removed WAL: %v, want nil", err)
	}
	if err := syncFile(filepath.Join(p, "x")); err == nil {
		t.Error("sync of a path under a file: nil error")
	}
}
