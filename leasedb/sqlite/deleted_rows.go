package sqlite

import (
	"context"
	"fmt"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

// ListDeletedContainerRows implements leasedb.Tx: one statement
// (sqlq.ListDeletedRows).
func (t *tx) ListDeletedContainerRows(ctx context.Context, account, prefix, after, afterVersion string, limit int) ([]leasedb.ListedContainer, error) {
	if err := checkText(account, prefix, after, afterVersion); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	q, args := sqlq.ListDeletedRows(dialect.Placeholder, account, prefix, after, afterVersion, limit)
	rows, err := t.tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("leasedb/sqlite: deleted containers of %s: %w", account, sqlq.CtxErr(ctx, err))
	}
	defer rows.Close()
	out, err := sqlq.ScanDeletedRows(rows, fromMicros)
	if err != nil {
		return nil, fmt.Errorf("leasedb/sqlite: deleted containers of %s: %w", account, sqlq.CtxErr(ctx, err))
	}
	return out, nil
}
