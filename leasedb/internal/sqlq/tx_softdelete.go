package sqlq

import (
	"context"
	"fmt"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

// PutDeletedBlob implements leasedb.Tx: a soft-deleted row (Delete Blob
// under a DeleteRetentionPolicy). A missing container is ErrNotFound; a
// row already kept for the same name and snapshot is ErrExists.
func (t Tx[T]) PutDeletedBlob(ctx context.Context, b *leasedb.Blob) error {
	if err := CheckText(t.D.Name, b.Account, b.Container, b.Name, b.Snapshot); err != nil {
		return err
	}
	vals, err := DeletedBlobValues(b, t.D.ToTime)
	if err != nil {
		return err
	}
	n, err := t.Q.Exec(ctx, PutDeletedBlob(t.D.Placeholder), vals...)
	switch {
	case err != nil && t.D.ForeignKey(err):
		return fmt.Errorf("%s: put deleted blob %s/%s/%s: container: %w", t.D.Name, b.Account, b.Container, b.Name, leasedb.ErrNotFound)
	case err != nil:
		return t.errorf(ctx, err, "put deleted blob %s/%s/%s", b.Account, b.Container, b.Name)
	case n == 0:
		return fmt.Errorf("%s: put deleted blob %s/%s/%s@%q: %w", t.D.Name, b.Account, b.Container, b.Name, b.Snapshot, leasedb.ErrExists)
	}
	return nil
}

// DeletedBlobs implements leasedb.Tx.
func (t Tx[T]) DeletedBlobs(ctx context.Context, account, container, blob string) (bs []*leasedb.Blob, err error) {
	if err := CheckText(t.D.Name, account, container, blob); err != nil {
		return nil, err
	}
	err = t.Q.Query(ctx, func(rows Rows) error {
		bs, err = ScanDeletedBlobs(rows, t.D.FromTime)
		return err
	}, DeletedBlobsOf(t.D.Placeholder), account, container, blob)
	if err != nil {
		return nil, t.errorf(ctx, err, "deleted blobs %s/%s/%s", account, container, blob)
	}
	return bs, nil
}

// RemoveDeletedBlob implements leasedb.Tx.
func (t Tx[T]) RemoveDeletedBlob(ctx context.Context, account, container, blob, snapshot string) error {
	if err := CheckText(t.D.Name, account, container, blob, snapshot); err != nil {
		return err
	}
	return t.exec(ctx, leasedb.ErrNotFound, fmt.Sprintf("remove deleted blob %s/%s/%s@%q", account, container, blob, snapshot),
		RemoveDeletedBlob(t.D.Placeholder), account, container, blob, snapshot)
}

// ExpiredBlobs implements leasedb.Tx. The retention columns hold
// microseconds in both dialects, so before is not the driver's time type.
func (t Tx[T]) ExpiredBlobs(ctx context.Context, before time.Time, limit int) (out []leasedb.DeletedRef, err error) {
	err = t.Q.Query(ctx, func(rows Rows) error {
		out, err = ScanBlobRefs(rows)
		return err
	}, ExpiredBlobs(t.D.Placeholder), before.UnixMicro(), limit)
	if err != nil {
		return nil, t.errorf(ctx, err, "expired blobs")
	}
	return out, nil
}
