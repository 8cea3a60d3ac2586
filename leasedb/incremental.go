package leasedb

import (
	"context"
	"time"

	"github.com/blobgw/blobgw/svcerr"
)

// Incremental Copy Blob copies a snapshot of a page blob to a destination
// page blob and takes a snapshot of the destination; each later call with
// a newer snapshot of the same source does it again. Here the copy shares
// the source snapshot's runs (no byte is copied), so "only the
// differences" costs nothing either. The destination is bound to its
// source: it takes only incremental copies of that source's newer
// snapshots, and otherwise only Delete Blob (with its snapshots), Get
// Blob Properties, lease and tag operations; its snapshots read as any
// snapshot. Its CopyInfo records the binding (Incremental, SourceName,
// SourceSnapshot) and the snapshot the copy made (DestinationSnapshot).

// IsIncrementalCopy reports whether b is an incremental copy blob (or one
// of its snapshots).
func (b *Blob) IsIncrementalCopy() bool {
	return b != nil && b.Copy != nil && b.Copy.Incremental
}

// errIncrementalCopyBlob refuses a write to an incremental copy blob.
func errIncrementalCopyBlob() error {
	return svcerr.New(svcerr.OperationNotAllowedOnIncrementalCopyBlob)
}

// checkIncrementalTarget is Incremental Copy Blob's rule for an existing
// destination: a page blob made by an incremental copy of the same
// source name (else 409 IncrementalCopyBlobMismatch; a blob of another
// type is 409 InvalidBlobType), and a source snapshot newer than the one
// copied last (else 409 IncrementalCopyOfEarlierSnapshotNotAllowed).
// Snapshot ids of one name sort by time in byte order.
func checkIncrementalTarget(old *Blob, info *CopyInfo) error {
	switch {
	case old == nil:
		return nil
	case old.Type != "PageBlob":
		return svcerr.New(svcerr.InvalidBlobType)
	case !old.IsIncrementalCopy() || info == nil || old.Copy.SourceName != info.SourceName:
		return svcerr.New(svcerr.IncrementalCopyBlobMismatch)
	case info.SourceSnapshot <= old.Copy.SourceSnapshot:
		return svcerr.New(svcerr.IncrementalCopyOfEarlierSnapshotNotAllowed)
	}
	return nil
}

// snapshotIncremental takes the destination snapshot of an incremental
// copy: b (the new row, not stored yet) names it in its copy information,
// and the snapshot row is b as committed, without the lease.
func snapshotIncremental(ctx context.Context, tx Tx, ref BlobRef, now time.Time, b *Blob) error {
	id, err := nextSnapshotID(ctx, tx, ref, now)
	if err != nil {
		return err
	}
	ci := *b.Copy
	ci.DestinationSnapshot = id
	b.Copy = &ci
	snap := *b
	snap.Lease = Lease{}
	snap.Snapshot = id
	return tx.PutSnapshot(ctx, &snap)
}
