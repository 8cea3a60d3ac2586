package sqlite

import (
	"context"
	"fmt"
	"time"

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
	cutoff := before.UnixMicro()
	rows, err := t.tx.QueryContext(ctx, `SELECT o.account, o.container, o.blob
		FROM (SELECT DISTINCT account, container, blob FROM blocks WHERE staged_at < ?) o
		WHERE NOT EXISTS (SELECT 1 FROM blocks n
			WHERE n.account = o.account AND n.container = o.container AND n.blob = o.blob AND n.staged_at >= ?)
		LIMIT ?`, cutoff, cutoff, limit)
	if err != nil {
		return nil, fmt.Errorf("leasedb/sqlite: stale block names: %w", sqlq.CtxErr(ctx, err))
	}
	defer rows.Close()
	var out []leasedb.BlobRef
	for rows.Next() {
		var r leasedb.BlobRef
		if err := rows.Scan(&r.Account, &r.Container, &r.Name); err != nil {
			return nil, fmt.Errorf("leasedb/sqlite: stale block names: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("leasedb/sqlite: stale block names: %w", sqlq.CtxErr(ctx, err))
	}
	return out, nil
}
