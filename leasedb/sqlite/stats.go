package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

var _ leasedb.QueueStatser = (*Store)(nil)

// QueueStats implements leasedb.QueueStatser.
func (s *Store) QueueStats(ctx context.Context) (leasedb.QueueStats, error) {
	var st leasedb.QueueStats
	err := s.View(ctx, func(ltx leasedb.Tx) error {
		t := ltx.(*tx)
		now, err := t.Now(ctx)
		if err != nil {
			return err
		}
		st = leasedb.QueueStats{Now: now}
		var oldest sql.NullInt64
		if err := t.tx.QueryRowContext(ctx, `
			SELECT COALESCE(SUM(1 - is_intent), 0), COALESCE(SUM(is_intent), 0),
			       (SELECT MIN(due_at) FROM gc_queue WHERE claimed_at IS NULL AND due_at <= ?1)
			FROM gc_queue`, now.UnixMicro()).Scan(&st.Pending, &st.Intents, &oldest); err != nil {
			return fmt.Errorf("leasedb/sqlite: queue stats: %w", err)
		}
		if oldest.Valid {
			st.OldestDue = time.UnixMicro(oldest.Int64).UTC()
		}
		return nil
	})
	return st, err
}
