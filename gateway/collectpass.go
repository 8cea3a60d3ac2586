package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/blobgw/blobgw/backends"
	"github.com/blobgw/blobgw/leasedb"
)

// CollectOptions are the parts of a collection pass beyond the queue.
type CollectOptions struct {
	// TempAge: a backend with temporary storage of its own
	// (backends.TempSweeper: the disk backend's tmp directory) has what
	// was last written more than TempAge ago removed; crashed uploads
	// leave it there. 0: no sweep. TempSweepAge gives the bound.
	TempAge time.Duration
	// BlockExpiry: the staged (uncommitted) blocks of a blob name with no
	// Put Block for this long are discarded, at most expireBlocksBatch
	// names per pass (leasedb.DB.ExpireBlocks). 0: kept for ever.
	BlockExpiry time.Duration
	// Grace is how long the objects of soft-deleted containers and blobs
	// whose retention passed stay after their purge, as after any delete
	// (leasedb.DB.Grace).
	Grace time.Duration
}

// purgeContainersBatch bounds the expired soft-deleted containers one
// pass purges.
const purgeContainersBatch = 100

// purgeBlobsBatch bounds the expired soft-deleted blob rows one pass
// purges.
const purgeBlobsBatch = 1000

// expireBlocksBatch bounds the names whose blocks one pass discards.
const expireBlocksBatch = 1000

// MinTempAge is the least TempSweepAge returns.
const MinTempAge = 15 * time.Minute

// TempSweepAge is the age past which a temporary file cannot belong to a
// live upload: a live upload writes whenever its body delivers bytes, and
// a body that delivers nothing for the body idle timeout is failed. Twice
// that timeout, and never less than MinTempAge (a final fsync or a replica
// with a longer timeout sharing the directory get a wide margin).
func TempSweepAge(bodyIdleTimeout time.Duration) time.Duration {
	return max(MinTempAge, 2*bodyIdleTimeout)
}

// CollectPass is one whole collection pass, as every serve runs it and
// `blobgw gc` runs it once: expired uncommitted blocks
// (CollectOptions.BlockExpiry) and soft-deleted containers and blobs past
// their retention go into the queue, the collection queue is drained (Collect), then the backend's temporary leftovers go
// (CollectOptions.TempAge). It returns the
// number of backend objects deleted from the queue; a failing part does
// not stop the others, and their errors are joined.
func CollectPass(ctx context.Context, store leasedb.Store, backend backends.Backend, log *slog.Logger, o CollectOptions) (int, error) {
	var errs []error
	if o.BlockExpiry > 0 {
		db := &leasedb.DB{Store: store}
		names, err := db.ExpireBlocks(ctx, o.BlockExpiry, expireBlocksBatch)
		if err != nil {
			errs = append(errs, fmt.Errorf("expire blocks: %w", err))
		}
		if names > 0 {
			log.Info("collector: discarded expired uncommitted blocks", "blobs", names, "expiry", o.BlockExpiry)
		}
	}
	// Soft-deleted containers past their retention (database clock) go
	// with everything in them; their objects join the queue.
	purged, err := (&leasedb.DB{Store: store, Grace: o.Grace}).PurgeExpiredContainers(ctx, purgeContainersBatch)
	if err != nil {
		errs = append(errs, fmt.Errorf("purge deleted containers: %w", err))
	}
	if purged > 0 {
		log.Info("collector: purged soft-deleted containers past their retention", "containers", purged)
	}
	// Soft-deleted blobs past their retention (database clock) go the
	// same way, the objects no other row of the name holds into the queue.
	blobs, err := (&leasedb.DB{Store: store, Grace: o.Grace}).PurgeExpiredBlobs(ctx, purgeBlobsBatch)
	if err != nil {
		errs = append(errs, fmt.Errorf("purge deleted blobs: %w", err))
	}
	if blobs > 0 {
		log.Info("collector: purged soft-deleted blobs past their retention", "rows", blobs)
	}
	n, err := Collect(ctx, store, backend, log)
	if err != nil {
		errs = append(errs, err)
	}
	if ts := backends.FeaturesOf(backend).TempSweeper; ts != nil && o.TempAge > 0 && ctx.Err() == nil {
		removed, err := ts.SweepTemp(ctx, o.TempAge)
		if err != nil {
			errs = append(errs, fmt.Errorf("sweep temp: %w", err))
		}
		if removed > 0 {
			log.Info("collector: removed stale temporary files", "count", removed, "older_than", o.TempAge)
		}
	}
	return n, errors.Join(errs...)
}

// collectOptions are the Server's pass options.
func (s *Server) collectOptions() CollectOptions {
	return CollectOptions{TempAge: TempSweepAge(s.opt.BodyIdleTimeout), BlockExpiry: s.opt.BlockExpiry, Grace: s.db.Grace}
}
