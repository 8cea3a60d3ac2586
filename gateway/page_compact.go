package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

// Compaction of page maps. Every Put Page adds a run, and a blob written in
// many small pieces ends up with a long map in its row, read and rewritten
// by every write. Past Options.PageCompactRuns runs, the replica that
// committed the write rewrites the blob's written ranges into one new
// object in the background, without blocking writers: the commit re-checks
// that the map is still the one it read, so a write racing the compaction
// wins and the compaction's object is deleted.

// DefaultPageCompactRuns is the run count past which a page blob is
// compacted.
const DefaultPageCompactRuns = 1024

// compactTimeout bounds one background compaction.
const compactTimeout = time.Hour

// pageCompactor tracks this replica's background compactions: at most one
// per blob; Close cancels them (a cancelled one changes nothing: its
// object is deleted, or left to its intent) and waits for them.
type pageCompactor struct {
	wg      sync.WaitGroup
	mu      sync.Mutex
	running map[leasedb.BlobRef]bool
	ctx     context.Context
	cancel  context.CancelFunc
}

// maybeCompact starts a compaction of ref when a write left it with more
// runs than the threshold and none of it runs here already.
func (s *Server) maybeCompact(ref leasedb.BlobRef, runs int) {
	if s.opt.PageCompactRuns < 0 || runs <= s.opt.PageCompactRuns {
		return
	}
	c := &s.pages
	c.mu.Lock()
	if c.running[ref] {
		c.mu.Unlock()
		return
	}
	if c.running == nil {
		c.running = map[leasedb.BlobRef]bool{}
		c.ctx, c.cancel = context.WithCancel(context.Background())
	}
	base := c.ctx
	c.running[ref] = true
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer func() {
			c.mu.Lock()
			delete(c.running, ref)
			c.mu.Unlock()
			c.wg.Done()
		}()
		ctx, cancel := context.WithTimeout(base, compactTimeout)
		defer cancel()
		if _, err := s.CompactPageBlob(ctx, ref); err != nil {
			s.log.Warn("page blob compaction failed", "blob", ref.String(), "err", err)
		}
	}()
}

// wait waits for the background compactions; with stop it cancels them
// first (Close).
func (c *pageCompactor) wait(ctx context.Context, stop bool) error {
	c.mu.Lock()
	if stop && c.cancel != nil {
		c.cancel()
	}
	c.mu.Unlock()
	done := make(chan struct{})
	go func() {
		c.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// CompactPageBlob rewrites the written ranges of the page blob ref into
// one new object (one run per range) and reports whether it swapped the
// map; false when there is nothing to gain (a run per range already) or a
// write changed the map meanwhile. Reads see the same bytes before and
// after; the replaced objects are collected after the grace period, so a
// read that started on them finishes.
func (s *Server) CompactPageBlob(ctx context.Context, ref leasedb.BlobRef) (bool, error) {
	b, _, err := s.db.GetBlob(ctx, ref, "", leasedb.Conditions{})
	if err != nil {
		return false, err
	}
	if b.Type != "PageBlob" {
		return false, nil
	}
	runs := b.Extents
	compacted, total := leasedb.CompactRuns(runs, "")
	if len(compacted) >= len(runs) || total == 0 {
		return false, nil
	}
	// The runs in blob order, read one after the other, are the ranges'
	// bytes with the holes left out: the new object's bytes.
	body := &extentReader{ctx: ctx, be: s.backend, ext: runs, start: 0, end: total}
	ext, _, err := s.stage(ctx, body, total, false, false)
	if err != nil {
		return false, err
	}
	var done bool
	err = s.commit(ctx, []leasedb.Extent{ext}, func(ctx context.Context) (err error) {
		done, err = s.db.CompactPages(ctx, ref, runs, ext.Key)
		return err
	})
	if err != nil {
		return false, err
	}
	if !done {
		s.discard(ext.Key)
	}
	return done, nil
}
