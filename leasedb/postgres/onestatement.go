package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

var _ leasedb.BlobReader = (*Store)(nil)

// readBlobSQL is ReadBlob's statement: the row, the container check and
// clock_timestamp() in one snapshot.
var readBlobSQL = sqlq.OneBlob(dialect.Placeholder, "", "blobs", "clock_timestamp()")

func skipColumn() any { return nil }

// ReadBlob implements leasedb.BlobReader: one statement on the pool, no
// BEGIN or ROLLBACK. A failure that pgx says never reached the server is
// retried, as View retries a BEGIN that did not.
func (s *Store) ReadBlob(ctx context.Context, account, container, name string) (*leasedb.Blob, bool, time.Time, error) {
	if err := checkText(account, container, name); err != nil {
		return nil, false, time.Time{}, err
	}
	var (
		b   *leasedb.Blob
		ok  bool
		now time.Time
	)
	err := retryRead(ctx, func() (err error) {
		b, ok, now, err = s.readBlob(ctx, account, container, name)
		return err
	})
	if err != nil {
		return nil, false, time.Time{}, fmt.Errorf("leasedb/postgres: read blob %s/%s/%s: %w", account, container, name, err)
	}
	return b, ok, now, nil
}

// retryRead runs read, a one-statement read on the pool, again when it
// failed before reaching the server (as View retries a BEGIN that did
// not) or on a statement the schema changed under (planChanged: pgx
// forgot it, the next run prepares it afresh). A failure that ends the attempts is marked as the store being
// unavailable where it is (markUnavailable); a wait cut short by ctx is
// "retry: " and ctx's error.
func retryRead(ctx context.Context, read func() error) error {
	for attempt := 1; ; attempt++ {
		err := read()
		if err == nil {
			return nil
		}
		if !(pgconn.SafeToRetry(err) || planChanged(err)) || attempt >= maxAttempts || ctx.Err() != nil {
			return markUnavailable(ctx, sqlq.CtxErr(ctx, err))
		}
		if err := sqlq.Sleep(ctx, sqlq.Backoff(attempt)); err != nil {
			return fmt.Errorf("retry: %w", err)
		}
	}
}

func (s *Store) readBlob(ctx context.Context, account, container, name string) (*leasedb.Blob, bool, time.Time, error) {
	b, ok, now, err := queryOneBlob(ctx, s.pool, readBlobSQL, account, container, name)
	if err != nil {
		return nil, false, time.Time{}, err
	}
	return b, ok, s.offsetNow(now), nil
}

// queryOneBlob runs q, a sqlq.OneBlob statement whose extra column is the
// clock, on the pool or in a transaction.
func queryOneBlob(ctx context.Context, db interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}, q, account, container, name string) (*leasedb.Blob, bool, time.Time, error) {
	rows, err := db.Query(ctx, q, account, container, name)
	if err != nil {
		return nil, false, time.Time{}, err
	}
	defer rows.Close()
	var now time.Time
	b, ok, err := scanOneBlob(rows, leasedb.BlobRef{Account: account, Container: container, Name: name}, &now)
	if err != nil {
		return nil, false, time.Time{}, err
	}
	rows.Close()
	return b, ok, now, rows.Err()
}

var _ leasedb.ContainerReader = (*Store)(nil)

// readContainerSQL is ReadContainer's statement: the row and
// clock_timestamp() in one snapshot.
const readContainerSQL = `SELECT ` + containerCols + `, clock_timestamp() FROM containers WHERE account = $1 AND name = $2`

// ReadContainer implements leasedb.ContainerReader: one statement on the
// pool, retried like ReadBlob.
func (s *Store) ReadContainer(ctx context.Context, account, name string) (*leasedb.Container, time.Time, error) {
	if err := checkText(account, name); err != nil {
		return nil, time.Time{}, err
	}
	var (
		c   *leasedb.Container
		now time.Time
	)
	err := retryRead(ctx, func() (err error) {
		c, now, err = s.readContainer(ctx, account, name)
		return err
	})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("leasedb/postgres: read container %s/%s: %w", account, name, err)
	}
	return c, now, nil
}

func (s *Store) readContainer(ctx context.Context, account, name string) (*leasedb.Container, time.Time, error) {
	rows, err := s.pool.Query(ctx, readContainerSQL, account, name)
	if err != nil {
		return nil, time.Time{}, err
	}
	var now time.Time
	cs, err := scanContainers(withTail{Rows: rows, tail: []any{&now}})
	if err != nil {
		return nil, time.Time{}, err
	}
	if len(cs) == 0 {
		// No row, no clock: a missing container needs none.
		return nil, time.Time{}, nil
	}
	return cs[0], s.offsetNow(now), nil
}

// withTail scans the columns after those the caller names into tail.
type withTail struct {
	pgx.Rows
	tail []any
}

func (r withTail) Scan(dest ...any) error { return r.Rows.Scan(append(dest, r.tail...)...) }
