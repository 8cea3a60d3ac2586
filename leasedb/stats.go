package leasedb

import (
	"context"
	"time"
)

// QueueStats describes the collection queue at one moment of the database
// clock, for monitoring.
type QueueStats struct {
	// Now is the database clock the figures were read at.
	Now time.Time
	// Pending counts queued replaced or deleted objects (not intents),
	// claimed or not.
	Pending int64
	// Intents counts upload intents: uploads in flight, keys pooled
	// ahead, and intents of uploads that died (until their deadline).
	Intents int64
	// OldestDue is the due time of the oldest unclaimed entry whose due
	// time has passed (zero when none is due): how far the collector is
	// behind.
	OldestDue time.Time
}

// QueueStatser is the optional ability of a Store to summarize its
// collection queue in one cheap query (a count over the queue and one
// probe of its due index).
type QueueStatser interface {
	QueueStats(ctx context.Context) (QueueStats, error)
}
