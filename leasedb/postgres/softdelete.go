package postgres

import (
	"context"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

// SetClockOffset implements leasedb.ClockOffsetter: transactions begun
// from now on read the clock plus d.
func (s *Store) SetClockOffset(d time.Duration) { s.clockOffset.Store(int64(d)) }

// PutDeletedBlob implements leasedb.Tx.
func (t *tx) PutDeletedBlob(ctx context.Context, b *leasedb.Blob) error {
	return t.shared().PutDeletedBlob(ctx, b)
}

// DeletedBlobs implements leasedb.Tx.
func (t *tx) DeletedBlobs(ctx context.Context, account, container, blob string) ([]*leasedb.Blob, error) {
	return t.shared().DeletedBlobs(ctx, account, container, blob)
}

// RemoveDeletedBlob implements leasedb.Tx.
func (t *tx) RemoveDeletedBlob(ctx context.Context, account, container, blob, snapshot string) error {
	return t.shared().RemoveDeletedBlob(ctx, account, container, blob, snapshot)
}

// ExpiredBlobs implements leasedb.Tx.
func (t *tx) ExpiredBlobs(ctx context.Context, before time.Time, limit int) ([]leasedb.DeletedRef, error) {
	return t.shared().ExpiredBlobs(ctx, before, limit)
}
