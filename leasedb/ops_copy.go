package leasedb

import (
	"context"
	"errors"
	"time"

	"github.com/blobgw/blobgw/svcerr"
)

// CopyTarget carries the rules that set a Copy Blob destination apart from
// a Put Blob (contract §5.4, §7). The copied bytes are committed through
// PutBlob like any upload: new objects the gateway staged, except when the
// source is a row of the destination's own name (its base blob or one of
// its snapshots, as when a blob is restored from a snapshot), whose
// extents the new row can share (SharedExtents).
type CopyTarget struct {
	// SharedExtents: req.Extents are the extents of a row of the same
	// blob name, not staged objects. PutBlob checks under the lock that
	// the current blob or one of its snapshots still references each of
	// them (else the source changed: ErrSourceGone), takes no intents, and
	// keeps them out of the collection of the replaced row.
	SharedExtents bool
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

// ErrSourceGone: a same-name copy source's extents are no longer referenced
// when the destination commits (the source was overwritten or deleted in
// between); the caller copies the bytes instead.
var ErrSourceGone = errors.New("leasedb: copy source extents are no longer referenced")

// checkShared verifies that every extent is referenced by old or a
// snapshot (rows of the same name, read under the lock).
func checkShared(extents []Extent, old *Blob, snaps []*Blob) error {
	live := map[string]bool{}
	for _, r := range append([]*Blob{old}, snaps...) {
		if r == nil {
			continue
		}
		for _, e := range r.Extents {
			live[e.Key] = true
		}
	}
	for _, e := range extents {
		if !live[e.Key] {
			return ErrSourceGone
		}
	}
	return nil
}
