package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

var _ leasedb.QueueStatser = (*Store)(nil)

// QueueStats implements leasedb.QueueStatser.
func (s *Store) QueueStats(ctx context.Context) (leasedb.QueueStats, error) {
	var st leasedb.QueueStats
	var oldest *time.Time
	err := s.pool.QueryRow(ctx, `
		SELECT clock_timestamp(),
		       count(*) FILTER (WHERE NOT is_intent), count(*) FILTER (WHERE is_intent),
		       (SELECT min(due_at) FROM gc_queue WHERE claimed_at IS NULL AND due_at <= clock_timestamp())
		FROM gc_queue`).Scan(&st.Now, &st.Pending, &st.Intents, &oldest)
	if err != nil {
		return st, fmt.Errorf("leasedb/postgres: queue stats: %w", sqlq.CtxErr(ctx, err))
	}
	if oldest != nil {
		st.OldestDue = oldest.UTC()
	}
	return st, nil
}
