package sqlite

import (
	"context"
	"fmt"

	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

var moveContainerSQL = sqlq.MoveContainer(dialect.Placeholder)

// MoveContainer implements leasedb.Tx. The other soft-delete methods are
// sqlq.Tx's.
func (t *tx) MoveContainer(ctx context.Context, from, name, to string) error {
	if err := checkText(from, name, to); err != nil {
		return err
	}
	for i, q := range moveContainerSQL {
		res, err := t.tx.ExecContext(ctx, q.SQL, q.Args(from, name, to)...)
		if err != nil {
			return fmt.Errorf("leasedb/sqlite: move container %s/%s to %s: %w", from, name, to, sqlq.CtxErr(ctx, err))
		}
		if i > 0 {
			continue
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("leasedb/sqlite: move container %s/%s to %s: %w", from, name, to, err)
		} else if n == 0 {
			return t.MoveRefused(ctx, from, name, to)
		}
	}
	return nil
}
