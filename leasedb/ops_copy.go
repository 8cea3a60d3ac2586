package leasedb

import (
	"context"
	"errors"
	"time"

	"github.com/blobgw/blobgw/svcerr"
)

// CopyTarget carries the rules that set a Copy Blob destination apart from
// a Put Blob (its lease and blob type checks, what the new row records of
// the copy). The copied bytes are committed through
// PutBlob like any upload: either new objects the gateway staged, or the
// extents of the source row itself, shared (SharedExtents).
type CopyTarget struct {
	// SharedExtents: req.Extents are the extents of a row of Source (its
	// blob or one of its snapshots), not staged objects. PutBlob locks
	// Source's name too, checks that its blob or one of its snapshots
	// still references each extent (else the source changed:
	// ErrSourceGone; copy the bytes instead), takes no intents, and, when
	// Source is another name, counts the destination as one more name
	// referencing every key it did not reference yet (Tx.ShareKeys), so
	// that a key is collected only when the last name lets go of it.
	SharedExtents bool
	// Source is the name the shared extents come from; the zero value
	// means the destination's own name (a restore from a snapshot).
	Source BlobRef
	// SameType: an existing destination must have the blob type being
	// written (Copy Blob: "the destination blob must be of the same type
	// as the source"), else 409 InvalidBlobType.
	SameType bool
	// InfiniteLeaseOnly: a lease id that names a fixed-duration lease is
	// 412 InfiniteLeaseDurationRequired (async Copy Blob, versions
	// ≥ 2012-02-12). Copy Blob From URL (x-ms-requires-sync) does not set it.
	InfiniteLeaseOnly bool

	// What the new row records of the copy. BlockCount is the committed
	// block count of a copied append blob; Sealed seals it (a copy of a
	// sealed append blob, or x-ms-seal-blob); both apply to append blobs
	// only. Info is the copy that wrote the row (Completed is set to the
	// commit time).
	BlockCount int
	Sealed     bool
	Info       *CopyInfo
	// Incremental makes the commit an Incremental Copy Blob: Info must
	// carry Incremental, SourceName and SourceSnapshot; the destination
	// must be missing or an incremental copy of the same source name with
	// an older source snapshot (checkIncrementalTarget), and the commit
	// takes a snapshot of the new row, named in Info.DestinationSnapshot.
	Incremental bool
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
	if req.Copy.Incremental {
		return checkIncrementalTarget(old, req.Copy.Info)
	}
	if old.IsIncrementalCopy() {
		return errIncrementalCopyBlob()
	}
	return nil
}

// ErrSourceGone: a same-name copy source's extents are no longer referenced
// when the destination commits (the source was overwritten or deleted in
// between); the caller copies the bytes instead.
var ErrSourceGone = errors.New("leasedb: copy source extents are no longer referenced")

// shareExtents is PutBlob's check and bookkeeping for SharedExtents; old
// and snaps are the destination name's rows, read under its lock.
//
// Locks: the destination name first (PutBlob), then the source's
// container (shared: a Delete Container of it waits) and name. Two copies
// in opposite directions can deadlock on Postgres; the driver detects it
// and runs the transaction again.
func shareExtents(ctx context.Context, tx Tx, req PutBlobRequest, old *Blob, snaps []*Blob) error {
	src := req.Copy.Source
	if src == (BlobRef{}) || src == req.Ref {
		return checkShared(req.Extents, old, snaps)
	}
	c, err := tx.Container(ctx, src.Account, src.Container, LockShare)
	if err != nil {
		return err
	}
	if c == nil {
		return ErrSourceGone
	}
	sb, err := tx.Blob(ctx, src.Account, src.Container, src.Name, LockExclusive)
	if err != nil {
		return err
	}
	ssnaps, err := nameRows(ctx, tx, src)
	if err != nil {
		return err
	}
	if err := checkShared(req.Extents, sb, ssnaps); err != nil {
		return err
	}
	// The keys this name does not reference yet gain it as one more name.
	own := map[string]bool{}
	for _, r := range append([]*Blob{old}, snaps...) {
		if r != nil {
			for _, e := range r.Extents {
				own[e.Key] = true
			}
		}
	}
	var add []string
	for _, e := range req.Extents {
		if e.Key != "" && !own[e.Key] { // inline bytes travel in the row
			own[e.Key] = true
			add = append(add, e.Key)
		}
	}
	return tx.ShareKeys(ctx, add)
}

// checkShared verifies that every extent is referenced by old or a
// snapshot (rows of one name, read under its lock).
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
		// An inline extent is the bytes themselves, read with the
		// source's row: nothing of the source needs to stay for them.
		if !e.Inline() && !live[e.Key] {
			return ErrSourceGone
		}
	}
	return nil
}
