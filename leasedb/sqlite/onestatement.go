package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

var (
	_ leasedb.BlobReader = (*Store)(nil)
	_ leasedb.BlobLocker = (*tx)(nil)
)

// ReadBlob implements leasedb.BlobReader: the blob row in one statement on
// the read pool, in autocommit (its own snapshot), without BEGIN and
// ROLLBACK; the container is read only when the row is absent (a row
// never outlives its container, so the second read, in a later snapshot,
// answers for a moment when the row was absent too). The clock is this
// process's (see Tx.Now), read after the row. SQLite runs the plain
// primary key lookup faster than the LEFT JOIN that folds both into one
// statement (sqlq.OneBlob), and a second statement costs no round trip
// here.
//
// The read takes a connection of the read pool on ctx (a caller that goes
// away stops waiting for one) and runs its one or two point lookups on it
// detached from ctx once ctx was checked: database/sql would otherwise
// start a goroutine for the rows and modernc.org/sqlite one for the
// statement, each only to stop a lookup of a few µs when ctx ends.
func (s *Store) ReadBlob(ctx context.Context, account, container, name string) (*leasedb.Blob, bool, time.Time, error) {
	if err := checkText(account, container, name); err != nil {
		return nil, false, time.Time{}, err
	}
	var (
		b      *leasedb.Blob
		exists bool
	)
	err := s.readPoint(ctx, func(ctx context.Context, q queryer) (err error) {
		b, exists, err = queryOneBlob(ctx, q, account, container, name)
		return err
	})
	if err != nil {
		return nil, false, time.Time{}, fmt.Errorf("leasedb/sqlite: read blob %s/%s/%s: %w", account, container, name, sqlq.CtxErr(ctx, err))
	}
	return b, exists, s.now(), nil
}

// readPoint runs read, a few point lookups, on a connection of the read
// pool (ReadBlob's way: see there), retried while the database is busy.
func (s *Store) readPoint(ctx context.Context, read func(ctx context.Context, q queryer) error) error {
	return s.retry(ctx, func() error {
		if ctx.Done() == nil {
			// Nothing to watch: database/sql and the driver start no
			// goroutine, and the pool's own connection is cheaper.
			return read(ctx, s.r)
		}
		conn, err := s.r.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		if err := ctx.Err(); err != nil {
			return err
		}
		return read(context.WithoutCancel(ctx), conn)
	})
}

// LockBlob implements leasedb.BlobLocker: the row's head alone
// (sqlq.BlobHeadCols), so neither the extents' text nor a small blob's
// bytes are copied out of the row or decoded. The write transaction
// already holds the database's write lock (BEGIN IMMEDIATE), which
// serializes every writer.
func (t *tx) LockBlob(ctx context.Context, account, container, name string) (*leasedb.BlobHead, bool, time.Time, error) {
	if err := checkText(account, container, name); err != nil {
		return nil, false, time.Time{}, err
	}
	ref := leasedb.BlobRef{Account: account, Container: container, Name: name}
	h, exists, err := queryBlobHead(ctx, t.tx, ref)
	if err != nil {
		return nil, false, time.Time{}, fmt.Errorf("leasedb/sqlite: lock blob %s: %w", ref, err)
	}
	now, err := t.Now(ctx)
	return h, exists, now, err
}

// blobHeadSQL reads the head of one blob row by name, its columns named
// quietly (resultcols.go).
var blobHeadSQL = `SELECT ` + quiet(sqlq.BlobHeadCols) + ` FROM blobs WHERE account = ? AND container = ? AND name = ?`

// queryBlobHead reads the head of ref's row and, when there is none,
// whether its container exists.
func queryBlobHead(ctx context.Context, q queryer, ref leasedb.BlobRef) (*leasedb.BlobHead, bool, error) {
	return queryHead(ctx, q, ref, blobHeadSQL, sqlq.ScanBlobHead[sql.NullInt64])
}

// queryHead runs query, a read of ref's row by name, reads its row with
// scan and, when there is none, whether its container exists.
func queryHead[H any](ctx context.Context, q queryer, ref leasedb.BlobRef, query string,
	scan func(sqlq.Rows, leasedb.BlobRef, func(sql.NullInt64) time.Time) (*H, error)) (*H, bool, error) {
	rows, err := q.QueryContext(ctx, query, ref.Account, ref.Container, ref.Name)
	if err != nil {
		return nil, false, err
	}
	h, err := scan(rows, ref, fromMicros)
	rows.Close()
	if err != nil || h != nil {
		return h, h != nil, err
	}
	exists, err := containerExists(ctx, q, ref.Account, ref.Container)
	return nil, exists, err
}

var containerExistsSQL = sqlq.ContainerExists(dialect.Placeholder)

// blobRowSQL reads one blob row by name, its columns named quietly
// (resultcols.go).
var blobRowSQL = `SELECT ` + quiet(blobCols) + ` FROM blobs WHERE account = ? AND container = ? AND name = ?`

type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func queryOneBlob(ctx context.Context, q queryer, account, container, name string) (*leasedb.Blob, bool, error) {
	b, ext, exists, err := queryOneBlobText(ctx, q, account, container, name)
	if b != nil {
		if b.Extents, err = leasedb.DecodeExtents(ext); err != nil {
			return nil, false, err
		}
	}
	return b, exists, err
}

// queryOneBlobText is queryOneBlob with the row's extents left undecoded:
// ext is their text.
func queryOneBlobText(ctx context.Context, q queryer, account, container, name string) (b *leasedb.Blob, ext string, exists bool, err error) {
	b, ext, err = queryBlobText(ctx, q, account, container, name)
	if err != nil || b != nil {
		return b, ext, b != nil, err
	}
	exists, err = containerExists(ctx, q, account, container)
	return nil, "", exists, err
}

// containerExists reports whether the container exists.
func containerExists(ctx context.Context, q queryer, account, container string) (bool, error) {
	var one int
	switch err := q.QueryRowContext(ctx, containerExistsSQL, account, container).Scan(&one); {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// queryBlobText reads the blob row alone (nil when absent), its extents
// left undecoded: ext is their text.
func queryBlobText(ctx context.Context, q queryer, account, container, name string) (*leasedb.Blob, string, error) {
	rows, err := q.QueryContext(ctx, blobRowSQL, account, container, name)
	if err != nil {
		return nil, "", err
	}
	b, ext, err := sqlq.ScanBlobText(rows, fromMicros)
	rows.Close()
	return b, ext, err
}
