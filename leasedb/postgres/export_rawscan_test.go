package postgres

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

// OneBlobRead is what a one-row blob read returned: the blob, the
// container check and the columns after it.
type OneBlobRead struct {
	Blob            *leasedb.Blob
	ContainerExists bool
	Extra           []any
}

// BlobColCount is scanOneBlob's count of sqlq.BlobCols, and BlobCols
// their names, for the test that they agree.
var (
	BlobColCount = blobColCount
	BlobCols     = strings.Fields(strings.ReplaceAll(sqlq.BlobCols, ",", " "))
)

// ReadOneBlobBothWays runs ReadBlob's statement (forReplace: LockForReplace's,
// on the pool) on ref twice, its row decoded once by scanOneBlob and once
// by sqlq.ScanOneBlob.
func ReadOneBlobBothWays(ctx context.Context, s *Store, ref leasedb.BlobRef, forReplace bool) (raw, generic OneBlobRead, err error) {
	q, args := readBlobSQL, []any{ref.Account, ref.Container, ref.Name}
	extra := func() []any { return []any{new(time.Time)} }
	if forReplace {
		q = lockForReplaceSQL
		args = append(args, nameLockKey(ref.Account, ref.Container, ref.Name), containerLockKey(ref.Account, ref.Container))
		extra = func() []any { return []any{new(time.Time), new(int), new(int), new(int64), new(bool), new(bool)} }
	}
	read := func(scan func(rows pgx.Rows, extra []any) (*leasedb.Blob, bool, error)) (OneBlobRead, error) {
		rows, err := s.pool.Query(ctx, q, args...)
		if err != nil {
			return OneBlobRead{}, err
		}
		defer rows.Close()
		r := OneBlobRead{Extra: extra()}
		if r.Blob, r.ContainerExists, err = scan(rows, r.Extra); err != nil {
			return OneBlobRead{}, err
		}
		rows.Close()
		return r, rows.Err()
	}
	raw, err = read(func(rows pgx.Rows, extra []any) (*leasedb.Blob, bool, error) {
		return scanOneBlob(rows, ref, extra...)
	})
	if err != nil {
		return raw, generic, err
	}
	generic, err = read(func(rows pgx.Rows, extra []any) (*leasedb.Blob, bool, error) {
		return sqlq.ScanOneBlob(rows, fromTS, skipColumn, extra...)
	})
	return raw, generic, err
}
