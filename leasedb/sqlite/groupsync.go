package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"sync/atomic"
)

// Group commit.
//
// With synchronous=FULL SQLite fsyncs the WAL inside every COMMIT while it
// holds the write lock, so concurrent writers queue behind each other's
// fsyncs: under a stream of uploads (each Put Block commits once) the lock
// is busy for the whole duration of the disk flushes, and a flush takes
// milliseconds when the disk is also absorbing the uploads' bytes.
//
// The write connection runs with synchronous=NORMAL instead: COMMIT appends
// the transaction's frames to the WAL without fsync and releases the lock.
// Update then waits, before it returns, for an fsync of the WAL file that
// started after its COMMIT returned. Such an fsync makes every frame written
// so far durable, the caller's among them, so commits that finish while one
// fsync runs share the next one. What Update's caller is promised is what
// FULL promised: when Update returns nil, the transaction survives a crash
// or power loss.
//
// Why the frames are safe until that fsync: NORMAL still fsyncs the WAL
// before each checkpoint and the database file after it, and a WAL is only
// reused (overwritten from its start) after a complete checkpoint, so a
// frame is never overwritten before it is durable in one of the two files.
//
// The one difference from FULL: other connections may read a transaction in
// the short window between its COMMIT and the fsync. A power loss in that
// window loses a write whose caller never got an answer, after a reader saw
// it; any write that depends on it (a conditional write with the ETag it
// read) commits later in the same WAL, and its own fsync covers both.
//
// A failed flush (fdatasync itself, not the open of the file) is final:
// Linux reports a writeback error once, may have dropped or marked clean
// the pages it could not write, and a later flush of the file then
// succeeds without them. The WAL is valid only as a prefix (its frames
// carry cumulative checksums), so a commit after the lost frames would be
// lost with them on a crash although its own flush succeeded. So every
// later round fails too, without flushing (broken), and Update refuses
// new writes; a restart opens the database afresh.
type groupSync struct {
	sync func() error // fsync of the WAL file

	mu        sync.Mutex
	cond      *sync.Cond
	nextRound uint64 // the number the next round to start will get (first: 1)
	doneRound uint64 // the last round that finished
	running   bool
	errs      map[uint64]error // failed rounds still awaited (by number)
	waiters   map[uint64]int   // how many callers wait on each round
	// broken is the first failed flush (flushFailed) and brokenRound its
	// round: every round after it fails with it.
	broken      error
	brokenRound uint64
	isBroken    atomic.Bool // broken != nil, read without mu by failed
}

func newGroupSync(syncFn func() error) *groupSync {
	g := &groupSync{sync: syncFn, nextRound: 1, errs: map[uint64]error{}, waiters: map[uint64]int{}}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// wait returns once an fsync that started after wait was called has
// completed, with that fsync's error.
func (g *groupSync) wait() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	// Any round numbered mine or later starts after this point.
	mine := g.nextRound
	g.waiters[mine]++
	for g.doneRound < mine && g.broken == nil {
		if g.running {
			g.cond.Wait()
			continue
		}
		// Start the next round (it covers every caller waiting so far).
		round := g.nextRound
		g.nextRound++
		g.running = true
		g.mu.Unlock()
		err := g.sync()
		g.mu.Lock()
		g.running = false
		g.doneRound = round
		if err != nil && g.waiters[round] > 0 {
			g.errs[round] = err
		}
		if err != nil && flushFailed(err) {
			g.broken, g.brokenRound = err, round
			g.isBroken.Store(true)
		}
		g.cond.Broadcast()
	}
	// Round numbers only grow and each covers all earlier commits, but a
	// failed round fails exactly the callers that counted on it, and a
	// failed flush every caller after it.
	err := g.errs[mine]
	if g.broken != nil && mine > g.brokenRound {
		err = g.brokenErr()
	}
	if g.waiters[mine]--; g.waiters[mine] == 0 {
		delete(g.waiters, mine)
		delete(g.errs, mine)
	}
	return err
}

// failed is the error of the flush that broke g (nil while none failed):
// a write begun now could not be made durable.
func (g *groupSync) failed() error {
	if !g.isBroken.Load() {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.broken == nil {
		return nil
	}
	return g.brokenErr()
}

// brokenErr is the error of every round after the failed flush (g.mu
// held).
func (g *groupSync) brokenErr() error {
	return fmt.Errorf("leasedb/sqlite: an earlier WAL flush failed, so no later commit is known durable (restart to reopen the database): %w", g.broken)
}

// flushFailed reports whether err is a failure of the flush itself
// (fdatasync, or fsync where there is none: datasyncPath), not of opening
// the file (too many open files, say), which leaves nothing unflushed
// behind it.
func flushFailed(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && (pe.Op == "fdatasync" || pe.Op == "sync")
}

// syncFile flushes the file at path (the WAL) with fdatasync where there is
// one, as SQLite itself syncs its WAL: the frames and the file size, not
// the timestamps (once the WAL is reused from its start, a flush then needs
// no journal commit). It opens the file each time:
// SQLite may remove and recreate the WAL, and a descriptor kept open across
// that would sync a file nobody writes any more.
func syncFile(path string) error {
	err := datasyncPath(path)
	if errors.Is(err, fs.ErrNotExist) {
		// SQLite removes the WAL only after checkpointing all of it into
		// the database file and syncing that: nothing is left to sync.
		return nil
	}
	if err != nil {
		return fmt.Errorf("leasedb/sqlite: sync WAL: %w", err)
	}
	return nil
}
