package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

// Set Blob Tags and Set Blob Tier read the row's head (LockBlobTier) and
// write their columns alone (sqlq.Tx's BlobTagsWriter and
// BlobTierWriter); Get Blob Tags reads the head on the read pool
// (ReadBlobHead). A statement costs no round trip here, so there is no
// commit with the write.

var (
	_ leasedb.BlobTierLocker = (*tx)(nil)
	_ leasedb.BlobHeadReader = (*Store)(nil)
)

// blobTierSQL reads the head of one blob row with its type, size and
// tier, its columns named quietly (resultcols.go).
var blobTierSQL = `SELECT ` + quiet(sqlq.BlobTierCols) + ` FROM blobs WHERE account = ? AND container = ? AND name = ?`

// LockBlobTier implements leasedb.BlobTierLocker: the row's head
// (sqlq.BlobTierCols) alone. The write transaction already holds the
// database's write lock (BEGIN IMMEDIATE), which serializes every writer,
// a Delete Container among them.
func (t *tx) LockBlobTier(ctx context.Context, account, container, name string) (*leasedb.BlobTierHead, bool, time.Time, error) {
	if err := checkText(account, container, name); err != nil {
		return nil, false, time.Time{}, err
	}
	ref := leasedb.BlobRef{Account: account, Container: container, Name: name}
	h, exists, err := queryBlobTierHead(ctx, t.tx, ref)
	if err != nil {
		return nil, false, time.Time{}, fmt.Errorf("leasedb/sqlite: lock blob %s: %w", ref, err)
	}
	now, err := t.Now(ctx)
	return h, exists, now, err
}

// queryBlobTierHead is queryBlobHead with the type, size and tier.
func queryBlobTierHead(ctx context.Context, q queryer, ref leasedb.BlobRef) (*leasedb.BlobTierHead, bool, error) {
	return queryHead(ctx, q, ref, blobTierSQL, sqlq.ScanBlobTierHead[sql.NullInt64])
}

// ReadBlobHead implements leasedb.BlobHeadReader: the row's head
// (queryBlobHead) read as ReadBlob reads the row; the clock is this
// process's, read after it.
func (s *Store) ReadBlobHead(ctx context.Context, account, container, name string) (*leasedb.BlobHead, bool, time.Time, error) {
	if err := checkText(account, container, name); err != nil {
		return nil, false, time.Time{}, err
	}
	ref := leasedb.BlobRef{Account: account, Container: container, Name: name}
	var (
		h      *leasedb.BlobHead
		exists bool
	)
	err := s.readPoint(ctx, func(ctx context.Context, q queryer) (err error) {
		h, exists, err = queryBlobHead(ctx, q, ref)
		return err
	})
	if err != nil {
		return nil, false, time.Time{}, fmt.Errorf("leasedb/sqlite: read blob head %s: %w", ref, sqlq.CtxErr(ctx, err))
	}
	return h, exists, s.now(), nil
}
