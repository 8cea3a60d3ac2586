package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

// StaleBlockNames implements leasedb.Tx. The names with a block staged
// before the cutoff come from a range scan of blocks_staged_at; each is
// then kept only if the primary key (prefixed by the name) holds no block
// staged since.
func (t *tx) StaleBlockNames(ctx context.Context, before time.Time, limit int) ([]leasedb.BlobRef, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := t.tx.Query(ctx, `SELECT o.account, o.container, o.blob
		FROM (SELECT DISTINCT account, container, blob FROM blocks WHERE staged_at < $1) o
		WHERE NOT EXISTS (SELECT 1 FROM blocks n
			WHERE n.account = o.account AND n.container = o.container AND n.blob = o.blob AND n.staged_at >= $1)
		LIMIT $2`, before.UTC(), limit)
	if err != nil {
		return nil, fmt.Errorf("leasedb/postgres: stale block names: %w", sqlq.CtxErr(ctx, err))
	}
	var (
		out []leasedb.BlobRef
		r   leasedb.BlobRef
	)
	_, err = pgx.ForEachRow(rows, []any{&r.Account, &r.Container, &r.Name}, func() error {
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("leasedb/postgres: stale block names: %w", sqlq.CtxErr(ctx, err))
	}
	return out, nil
}
