package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
	sqlite3 "modernc.org/sqlite/lib"
)

var (
	putDeletedBlobSQL    = sqlq.PutDeletedBlob(dialect.Placeholder)
	deletedBlobsSQL      = sqlq.DeletedBlobsOf(dialect.Placeholder)
	removeDeletedBlobSQL = sqlq.RemoveDeletedBlob(dialect.Placeholder)
	expiredBlobsSQL      = sqlq.ExpiredBlobs(dialect.Placeholder)
)

// SetClockOffset implements leasedb.ClockOffsetter: transactions begun
// from now on read the clock plus d.
func (s *Store) SetClockOffset(d time.Duration) { s.clockOffset.Store(int64(d)) }

// PutDeletedBlob implements leasedb.Tx.
func (t *tx) PutDeletedBlob(ctx context.Context, b *leasedb.Blob) error {
	if err := checkText(b.Account, b.Container, b.Name, b.Snapshot); err != nil {
		return err
	}
	vals, err := sqlq.DeletedBlobValues(b, micros)
	if err != nil {
		return err
	}
	res, err := t.tx.ExecContext(ctx, putDeletedBlobSQL, vals...)
	if err != nil {
		if code(err) == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY {
			return fmt.Errorf("leasedb/sqlite: put deleted blob %s/%s/%s: container: %w", b.Account, b.Container, b.Name, leasedb.ErrNotFound)
		}
		return fmt.Errorf("leasedb/sqlite: put deleted blob %s/%s/%s: %w", b.Account, b.Container, b.Name, sqlq.CtxErr(ctx, err))
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("leasedb/sqlite: put deleted blob %s/%s/%s: %w", b.Account, b.Container, b.Name, err)
	} else if n == 0 {
		return fmt.Errorf("leasedb/sqlite: put deleted blob %s/%s/%s@%q: %w", b.Account, b.Container, b.Name, b.Snapshot, leasedb.ErrExists)
	}
	return nil
}

// DeletedBlobs implements leasedb.Tx.
func (t *tx) DeletedBlobs(ctx context.Context, account, container, blob string) ([]*leasedb.Blob, error) {
	if err := checkText(account, container, blob); err != nil {
		return nil, err
	}
	rows, err := t.tx.QueryContext(ctx, deletedBlobsSQL, account, container, blob)
	if err != nil {
		return nil, fmt.Errorf("leasedb/sqlite: deleted blobs %s/%s/%s: %w", account, container, blob, sqlq.CtxErr(ctx, err))
	}
	defer rows.Close()
	bs, err := sqlq.ScanDeletedBlobs(rows, fromMicros)
	if err != nil {
		return nil, fmt.Errorf("leasedb/sqlite: deleted blobs %s/%s/%s: %w", account, container, blob, err)
	}
	return bs, nil
}

// RemoveDeletedBlob implements leasedb.Tx.
func (t *tx) RemoveDeletedBlob(ctx context.Context, account, container, blob, snapshot string) error {
	if err := checkText(account, container, blob, snapshot); err != nil {
		return err
	}
	res, err := t.tx.ExecContext(ctx, removeDeletedBlobSQL, account, container, blob, snapshot)
	if err != nil {
		return fmt.Errorf("leasedb/sqlite: remove deleted blob %s/%s/%s: %w", account, container, blob, sqlq.CtxErr(ctx, err))
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("leasedb/sqlite: remove deleted blob %s/%s/%s: %w", account, container, blob, err)
	} else if n == 0 {
		return fmt.Errorf("leasedb/sqlite: remove deleted blob %s/%s/%s@%q: %w", account, container, blob, snapshot, leasedb.ErrNotFound)
	}
	return nil
}

// ExpiredBlobs implements leasedb.Tx.
func (t *tx) ExpiredBlobs(ctx context.Context, before time.Time, limit int) ([]leasedb.DeletedRef, error) {
	rows, err := t.tx.QueryContext(ctx, expiredBlobsSQL, before.UnixMicro(), limit)
	if err != nil {
		return nil, fmt.Errorf("leasedb/sqlite: expired blobs: %w", sqlq.CtxErr(ctx, err))
	}
	defer rows.Close()
	out, err := sqlq.ScanBlobRefs(rows)
	if err != nil {
		return nil, fmt.Errorf("leasedb/sqlite: expired blobs: %w", err)
	}
	return out, nil
}
