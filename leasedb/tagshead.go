package leasedb

import (
	"context"
	"fmt"
	"time"
)

// Set Blob Tags, Set Blob Tier and Get Blob Tags on the row's head. None
// of them reads or writes a blob's content: Set Blob Tags decides on the
// lease, the conditions and the tags (x-ms-if-tags) and writes the tags
// and the lease; Set Blob Tier also reads the type, size and tier, and
// writes the tier; Get Blob Tags reads the head alone. So a store that
// offers BlobTierLocker locks and reads the head (never the extents, so
// never a small blob's inline bytes) with the container held, in one
// statement; one that offers BlobTagsCommitter / BlobTierCommitter sends
// the write with COMMIT in one round trip more; one that offers
// BlobHeadReader answers Get Blob Tags in one statement. Stores without
// them (and wrappers that do not forward them) take the multi-statement
// paths, with the same outcomes.

// BlobTierHead is the head of a blob row as Set Blob Tags and Set Blob
// Tier read it: BlobHead, and what Set Blob Tier's rule (tierRule) reads.
// It has no extents and no inline bytes.
type BlobTierHead struct {
	BlobHead
	Type       string // BlockBlob, PageBlob or AppendBlob
	Size       int64
	AccessTier string // "" when none was set
}

// tierHead is b's BlobTierHead with b kept whole in it (nil for nil).
func tierHead(b *Blob) *BlobTierHead {
	if b == nil {
		return nil
	}
	return &BlobTierHead{BlobHead: *blobHead(b), Type: b.Type, Size: b.Size, AccessTier: b.AccessTier}
}

// head is h's BlobHead (nil for nil).
func (h *BlobTierHead) head() *BlobHead {
	if h == nil {
		return nil
	}
	return &h.BlobHead
}

// BlobTierLocker is an optional Tx method.
type BlobTierLocker interface {
	// LockBlobTier is BlobLocker's LockBlob reading BlobTierHead (never
	// the extents nor the inline bytes), with the row's container held
	// for the rest of the transaction as a write that locks a name holds
	// it (Postgres: shared, before the row): a Delete Container or
	// container soft delete, which copies or deletes the container's
	// rows under its own lock, waits for the transaction, so a change it
	// acknowledged is never left out of the copy.
	LockBlobTier(ctx context.Context, account, container, name string) (b *BlobTierHead, containerExists bool, now time.Time, err error)
}

// BlobTagsCommitter is an optional Tx method, offered beside
// BlobTierLocker where a statement costs a round trip (Postgres).
type BlobTagsCommitter interface {
	// CommitBlobTags is BlobTagsWriter's write and COMMIT in one round
	// trip, of the row LockBlobTier locked in this transaction, as
	// BlobLeaseCommitter's CommitBlobLease: the caller makes no other
	// call on the transaction and returns nil at once; a refused write
	// rolls it back; an unknown outcome carries ErrCommitUnknown.
	CommitBlobTags(ctx context.Context, ref BlobRef, tags map[string]string, l Lease) error
}

// BlobTierWriter is an optional Tx method: Set Blob Tier's write, which
// changes the access tier column alone ("" stores none), not the content
// PutBlob would send again. The row must exist (ErrNotFound otherwise)
// and be locked by the transaction.
type BlobTierWriter interface {
	SetBlobTier(ctx context.Context, ref BlobRef, tier string) error
}

// BlobTierCommitter is an optional Tx method, offered beside
// BlobTierLocker where a statement costs a round trip (Postgres).
type BlobTierCommitter interface {
	// CommitBlobTier is BlobTierWriter's write and COMMIT in one round
	// trip, of the row LockBlobTier locked, as CommitBlobTags.
	CommitBlobTier(ctx context.Context, ref BlobRef, tier string) error
}

// BlobHeadReader is an optional Store method.
type BlobHeadReader interface {
	// ReadBlobHead is BlobReader's ReadBlob reading the row's head
	// (BlobHead) alone: in one statement outside any transaction, the
	// head (nil when absent), whether the container exists, and the
	// database clock read after the row.
	ReadBlobHead(ctx context.Context, account, container, name string) (b *BlobHead, containerExists bool, now time.Time, err error)
}

// withTierHead is withHead for Set Blob Tags and Set Blob Tier: the
// head with what Set Blob Tier's rule reads, through BlobTierLocker.
func withTierHead(ctx context.Context, tx Tx, ref BlobRef, fn func(tx Tx, now time.Time, h *BlobTierHead) error) error {
	return withHead(ctx, tx, ref, BlobTierLocker.LockBlobTier, tierHead, fn)
}

// putBlobTags stores h's tags and lease, which are all Set Blob Tags
// changes of the row (the write's lease check may end an expired lease),
// as the transaction's last call: with COMMIT in one round trip where tx
// offers BlobTagsCommitter, those columns alone where it offers
// BlobTagsWriter, else the whole row (read whole where tx offers no
// BlobTierLocker).
func putBlobTags(ctx context.Context, tx Tx, h *BlobTierHead) error {
	if c, ok := tx.(BlobTagsCommitter); ok {
		return c.CommitBlobTags(ctx, h.Ref, h.Tags, h.Lease)
	}
	if w, ok := tx.(BlobTagsWriter); ok {
		return w.SetBlobTags(ctx, h.Ref, h.Tags, h.Lease)
	}
	whole, err := h.wholeRow("tags")
	if err != nil {
		return err
	}
	whole.Tags, whole.Lease = h.Tags, h.Lease
	return tx.PutBlob(ctx, whole)
}

// putBlobTier stores h's access tier, all Set Blob Tier changes of the
// row, as putBlobTags stores the tags.
func putBlobTier(ctx context.Context, tx Tx, h *BlobTierHead) error {
	if c, ok := tx.(BlobTierCommitter); ok {
		return c.CommitBlobTier(ctx, h.Ref, h.AccessTier)
	}
	if w, ok := tx.(BlobTierWriter); ok {
		return w.SetBlobTier(ctx, h.Ref, h.AccessTier)
	}
	whole, err := h.wholeRow("tier")
	if err != nil {
		return err
	}
	whole.AccessTier = h.AccessTier
	return tx.PutBlob(ctx, whole)
}

// wholeRow is a copy of the row h was read from, for a transaction that
// writes no column alone.
func (h *BlobTierHead) wholeRow(what string) (*Blob, error) {
	if h.whole == nil {
		return nil, fmt.Errorf("leasedb: %s of %s: the transaction writes no %s alone and the row was not read whole", what, h.Ref, what)
	}
	whole := *h.whole
	return &whole, nil
}

// readBlobHead reads what GetBlobTags decides on: the row's head (nil
// when absent), whether the container exists (true when the row does),
// and the clock, in one statement when the store offers BlobHeadReader,
// else as readBlob reads the whole row.
func (d *DB) readBlobHead(ctx context.Context, ref BlobRef) (*BlobHead, bool, time.Time, error) {
	if r, ok := optional[BlobHeadReader](d.Store); ok {
		h, containerExists, now, err := r.ReadBlobHead(ctx, ref.Account, ref.Container, ref.Name)
		return h, containerExists || h != nil, now, err
	}
	b, containerExists, now, err := d.readBlob(ctx, ref)
	return b.Head(), containerExists, now, err
}
