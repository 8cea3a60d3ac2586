package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

// Set Blob Tags' and Set Blob Tier's two round trips: LockBlobTier (BEGIN
// with it) reads the row's head locked, CommitBlobTags or CommitBlobTier
// writes the tags and lease, or the tier, with COMMIT. Get Blob Tags is
// ReadBlobHead, one statement on the pool.

var (
	_ leasedb.BlobTierLocker    = (*tx)(nil)
	_ leasedb.BlobTagsCommitter = (*tx)(nil)
	_ leasedb.BlobTierCommitter = (*tx)(nil)
	_ leasedb.BlobHeadReader    = (*Store)(nil)
)

// lockBlobTierSQL is LockBlobTier's statement ($4 containerLockKey): the
// container's advisory lock shared, as LockForReplace takes it (a
// pseudo-constant qualifier, run once before the scan and so before the
// row lock, in the order the writes take them), then the row's head
// (sqlq.BlobTierCols), never its extents, FOR UPDATE in a MATERIALIZED
// CTE so that clock_timestamp() is read once the locks are granted, as
// lockBlobSQL does.
var lockBlobTierSQL = sqlq.OneBlobTierHead(dialect.Placeholder, lockedHeadCTE(sqlq.BlobTierCols), "locked", "clock_timestamp()")

// commitBlobTagsSQL and commitBlobTierSQL are CommitBlobTags' and
// CommitBlobTier's writes: one row back when the row was there.
var (
	commitBlobTagsSQL = sqlq.SetBlobTags(dialect.Placeholder) + ` RETURNING 1`
	commitBlobTierSQL = sqlq.SetBlobTier(dialect.Placeholder) + ` RETURNING 1`
)

// readBlobHeadSQL is ReadBlobHead's statement: the row's head, the
// container check and clock_timestamp() in one snapshot.
var readBlobHeadSQL = sqlq.OneBlobHead(dialect.Placeholder, "", "blobs", "clock_timestamp()")

// LockBlobTier implements leasedb.BlobTierLocker: the container held
// shared, the row's head FOR UPDATE, the container check and the clock
// in one statement sent with BEGIN.
func (t *tx) LockBlobTier(ctx context.Context, account, container, name string) (*leasedb.BlobTierHead, bool, time.Time, error) {
	return lockHead(ctx, t, lockBlobTierSQL, scanOneBlobTierHead, account, container, name,
		[]any{account, container, name, containerLockKey(account, container)})
}

// CommitBlobTags implements leasedb.BlobTagsCommitter: the UPDATE of the
// tags and lease columns (the blob_tags rows follow by trigger) and
// COMMIT in one round trip, as CommitBlobLease.
func (t *tx) CommitBlobTags(ctx context.Context, ref leasedb.BlobRef, tags map[string]string, l leasedb.Lease) error {
	if err := checkText(ref.Account, ref.Container, ref.Name, l.ID); err != nil {
		return err
	}
	_, enc, err := sqlq.EncodeTierTags(&leasedb.Blob{Tags: tags})
	if err != nil {
		return err
	}
	return t.commitHead(ctx, "tags", ref, commitBlobTagsSQL, []any{ref.Account, ref.Container, ref.Name, enc,
		l.ID, l.State, l.Duration, driver.ToTime(l.Expires), driver.ToTime(l.BreakAt), driver.ToTime(l.Since)})
}

// CommitBlobTier implements leasedb.BlobTierCommitter: the UPDATE of the
// access tier and COMMIT in one round trip.
func (t *tx) CommitBlobTier(ctx context.Context, ref leasedb.BlobRef, tier string) error {
	if err := checkText(ref.Account, ref.Container, ref.Name, tier); err != nil {
		return err
	}
	enc, _, err := sqlq.EncodeTierTags(&leasedb.Blob{AccessTier: tier})
	if err != nil {
		return err
	}
	return t.commitHead(ctx, "tier", ref, commitBlobTierSQL, []any{ref.Account, ref.Container, ref.Name, enc})
}

// ReadBlobHead implements leasedb.BlobHeadReader: one statement on the
// pool, no BEGIN or ROLLBACK, retried like ReadBlob.
func (s *Store) ReadBlobHead(ctx context.Context, account, container, name string) (*leasedb.BlobHead, bool, time.Time, error) {
	if err := checkText(account, container, name); err != nil {
		return nil, false, time.Time{}, err
	}
	ref := leasedb.BlobRef{Account: account, Container: container, Name: name}
	var (
		h   *leasedb.BlobHead
		ok  bool
		now time.Time
	)
	err := retryRead(ctx, func() error {
		rows, err := s.pool.Query(ctx, readBlobHeadSQL, account, container, name)
		if err != nil {
			return err
		}
		defer rows.Close()
		if h, ok, err = scanOneBlobHead(rows, ref, &now); err != nil {
			return err
		}
		rows.Close()
		return rows.Err()
	})
	if err != nil {
		return nil, false, time.Time{}, fmt.Errorf("leasedb/postgres: read blob head %s: %w", ref, err)
	}
	return h, ok, s.offsetNow(now), nil
}

// scanOneBlobTierHead is scanOneBlobHead for the row of lockBlobTierSQL
// (sqlq.ScanOneBlobTierHead for a column in another form).
func scanOneBlobTierHead(rows pgx.Rows, ref leasedb.BlobRef, extra ...*time.Time) (*leasedb.BlobTierHead, bool, error) {
	if !rows.Next() {
		return sqlq.ScanOneBlobTierHead(rows, ref, fromTS, skipColumn, timeDest(extra)...)
	}
	generic := func() (*leasedb.BlobTierHead, bool, error) {
		return sqlq.ScanOneBlobTierHead(&positioned{Rows: rows}, ref, fromTS, skipColumn, timeDest(extra)...)
	}
	const n = blobHeadColCount
	r, found, containerExists := rawOneRow(rows, n+3, extra)
	switch {
	case !r.ok:
		return generic()
	case !found:
		return nil, containerExists, nil
	}
	hd, tags := rawHead(&r, ref)
	h := &leasedb.BlobTierHead{BlobHead: hd, Type: r.text(n), Size: r.int(n + 1), AccessTier: r.nullText(n + 2).String}
	if !r.ok {
		return generic()
	}
	var err error
	if h.Tags, err = sqlq.DecodeTags(tags); err != nil {
		return nil, false, err
	}
	return h, containerExists, nil
}
