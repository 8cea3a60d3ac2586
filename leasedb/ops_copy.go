package leasedb

import (
	"context"
	"time"

	"github.com/blobgw/blobgw/svcerr"
)

// CopyTarget carries the rules that set a Copy Blob destination apart from
// a Put Blob (contract §5.4, §7). The copied bytes are committed through
// PutBlob like any upload: they are new objects the gateway staged, never
// the source's extents (see gateway/blob_copy.go).
type CopyTarget struct {
	// SameType: an existing destination must have the blob type being
	// written (Copy Blob: "the destination blob must be of the same type
	// as the source"), else 409 InvalidBlobType.
	SameType bool
	// InfiniteLeaseOnly: a lease id that names a fixed-duration lease is
	// 412 InfiniteLeaseDurationRequired (async Copy Blob, versions
	// ≥ 2012-02-12). Copy Blob From URL (x-ms-requires-sync) does not set it.
	InfiniteLeaseOnly bool
}

// checkCopyTarget applies req.Copy against the locked current row, after the
// lease check and the conditions passed (so an id sent here names the
// active lease).
func checkCopyTarget(req PutBlobRequest, old *Blob, now time.Time) error {
	if old == nil {
		return nil
	}
	if req.Copy.InfiniteLeaseOnly && req.LeaseID != "" {
		if old.Lease.Effective(now).active() && !old.Lease.infinite() {
			return svcerr.New(svcerr.InfiniteLeaseDurationRequired)
		}
	}
	if req.Copy.SameType && old.Type != req.Type {
		return svcerr.New(svcerr.InvalidBlobType)
	}
	return nil
}

// PrecheckCopy is Precheck for a copy destination: the write lease check and
// conditions of a create-kind write, plus the CopyTarget rules, against the
// unlocked row. PutBlob re-checks everything under the lock.
func (d *DB) PrecheckCopy(ctx context.Context, req PutBlobRequest) error {
	if err := d.Precheck(ctx, req.Ref, req.LeaseID, req.Cond, CreateWrite); err != nil {
		return err
	}
	if req.Copy == (CopyTarget{}) {
		return nil
	}
	return d.Store.View(ctx, func(tx Tx) error {
		b, err := tx.Blob(ctx, req.Ref.Account, req.Ref.Container, req.Ref.Name, LockNone)
		if err != nil {
			return err
		}
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		return checkCopyTarget(req, b, now)
	})
}
