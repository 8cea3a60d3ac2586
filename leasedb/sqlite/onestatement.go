package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

var (
	_ leasedb.BlobReader = (*Store)(nil)
	_ leasedb.BlobLocker = (*tx)(nil)
)

// oneBlobSQL reads the row and the container check in one statement. The
// clock is this process's (see Tx.Now), read after the statement.
var oneBlobSQL = sqlq.OneBlob(dialect.Placeholder, "", "blobs", "")

func skipColumn() any { return new(any) }

// ReadBlob implements leasedb.BlobReader: one statement on the read pool,
// in autocommit (its own snapshot), without BEGIN and ROLLBACK.
func (s *Store) ReadBlob(ctx context.Context, account, container, name string) (*leasedb.Blob, bool, time.Time, error) {
	if err := checkText(account, container, name); err != nil {
		return nil, false, time.Time{}, err
	}
	var (
		b      *leasedb.Blob
		exists bool
	)
	err := s.retry(ctx, func() error {
		var err error
		b, exists, err = queryOneBlob(ctx, s.r, account, container, name)
		return err
	})
	if err != nil {
		return nil, false, time.Time{}, fmt.Errorf("leasedb/sqlite: read blob %s/%s/%s: %w", account, container, name, sqlq.CtxErr(ctx, err))
	}
	return b, exists, time.Now().UTC().Truncate(time.Microsecond), nil
}

// LockBlob implements leasedb.BlobLocker. The write transaction already
// holds the database's write lock, which serializes every writer.
func (t *tx) LockBlob(ctx context.Context, account, container, name string) (*leasedb.Blob, bool, time.Time, error) {
	if err := checkText(account, container, name); err != nil {
		return nil, false, time.Time{}, err
	}
	b, exists, err := queryOneBlob(ctx, t.tx, account, container, name)
	if err != nil {
		return nil, false, time.Time{}, fmt.Errorf("leasedb/sqlite: lock blob %s/%s/%s: %w", account, container, name, err)
	}
	now, err := t.Now(ctx)
	return b, exists, now, err
}

type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func queryOneBlob(ctx context.Context, q queryer, account, container, name string) (*leasedb.Blob, bool, error) {
	rows, err := q.QueryContext(ctx, oneBlobSQL, account, container, name)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	b, exists, err := sqlq.ScanOneBlob(rows, fromMicros, skipColumn)
	if err != nil {
		return nil, false, err
	}
	return b, exists, rows.Close()
}
