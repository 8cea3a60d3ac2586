package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/blobgw/blobgw/backends"
	"github.com/blobgw/blobgw/internal/failpoint"
	"github.com/blobgw/blobgw/leasedb"
)

// Collect deletes every backend object whose collection entry is due:
// replaced or deleted blobs past the grace period, and upload intents past
// their deadline. Entries are claimed first (a claimed intent can no longer
// be committed), the objects deleted, then the entries forgotten; a
// collector that dies in between leaves claims that another run reclaims.
// Safe to run in every replica at once.
func Collect(ctx context.Context, store leasedb.Store, backend backends.Backend, log *slog.Logger) (int, error) {
	const batch = 256
	total := 0
	for {
		keys, err := store.ClaimDue(ctx, batch, reclaimAfter)
		if err != nil {
			return total, fmt.Errorf("claim: %w", err)
		}
		if len(keys) == 0 {
			return total, nil
		}
		// Crash tests: claimed, nothing deleted yet.
		failpoint.Inject("collector-claim")
		done := deleteObjects(ctx, backend, keys, log)
		// Counted by the entries this Forget removed: a collector that
		// re-claimed an entry after reclaimAfter may delete the object
		// too, and only the one whose removal commits counts it.
		forgotten, err := store.Forget(ctx, done)
		if err != nil {
			return total, fmt.Errorf("forget: %w", err)
		}
		total += forgotten
		if len(done) < len(keys) || len(keys) < batch {
			return total, ctx.Err()
		}
	}
}

// deleteObjects deletes keys and returns the ones known to be gone.
func deleteObjects(ctx context.Context, backend backends.Backend, keys []string, log *slog.Logger) []string {
	if bd := backends.FeaturesOf(backend).BatchDeleter; bd != nil {
		if err := bd.DeleteMany(ctx, keys); err != nil {
			log.Warn("collector: delete batch", "keys", len(keys), "err", err)
			return nil
		}
		return keys
	}
	const workers = 8
	done := make([]string, 0, len(keys))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, workers)
	for _, k := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func(k string) {
			defer wg.Done()
			defer func() { <-sem }()
			if err := backend.Delete(ctx, k); err != nil {
				log.Warn("collector: delete", "key", k, "err", err)
				return
			}
			mu.Lock()
			done = append(done, k)
			mu.Unlock()
		}(k)
	}
	wg.Wait()
	return done
}

// reclaimAfter is how long a claim may sit before another collector takes
// the entry over (its first collector presumably died).
const reclaimAfter = 10 * time.Minute

// Collect runs one collection pass (CollectPass) with the server's store,
// backend and options.
func (s *Server) Collect(ctx context.Context) (int, error) {
	n, err := CollectPass(ctx, s.db.Store, s.backend, s.log, s.collectOptions())
	s.metrics.collected.Add(float64(n))
	return n, err
}
