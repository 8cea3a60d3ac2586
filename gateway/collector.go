package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/blobgw/blobgw/backends"
	"github.com/blobgw/blobgw/leasedb"
)

// Collect deletes every backend object whose collection entry is due:
// replaced or deleted blobs past the grace period, and upload intents past
// their deadline. Entries are claimed first (a claimed intent can no longer
// be committed), the objects deleted, then the entries forgotten; a
// collector that dies in between leaves claims that another run reclaims.
// Safe to run in every replica at once.
func Collect(ctx context.Context, store leasedb.Store, backend backends.Backend, log *slog.Logger) (int, error) {
	const batch, workers = 256, 8
	total := 0
	for {
		keys, err := store.ClaimDue(ctx, batch, reclaimAfter)
		if err != nil {
			return total, fmt.Errorf("claim: %w", err)
		}
		if len(keys) == 0 {
			return total, nil
		}
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
		if err := store.Forget(ctx, done); err != nil {
			return total, fmt.Errorf("forget: %w", err)
		}
		total += len(done)
		if len(done) < len(keys) || len(keys) < batch {
			return total, ctx.Err()
		}
	}
}

// reclaimAfter is how long a claim may sit before another collector takes
// the entry over (its first collector presumably died).
const reclaimAfter = 10 * time.Minute

// Collect runs one collection pass with the server's store and backend.
func (s *Server) Collect(ctx context.Context) (int, error) {
	return Collect(ctx, s.db.Store, s.backend, s.log)
}
