package leasedb

import (
	"context"
	"slices"
	"time"
)

// PageWriteRequest is Put Page (update or clear) and Put Page From URL of
// the bytes [Start, End) (512-aligned, at most MaxPageWrite). An update's
// bytes are already durable under Extent.Key (its upload intent
// recorded), Extent.Size = End-Start; a clear has no Extent.
type PageWriteRequest struct {
	Ref        BlobRef
	Start, End int64
	Clear      bool
	Extent     Extent
	LeaseID    string
	Cond       Conditions
	Seq        SeqConditions
	PutLease
}

// PrecheckPages runs Put Page's rule against the unlocked row, before the
// body is read.
func (d *DB) PrecheckPages(ctx context.Context, req PageWriteRequest) error {
	if err := d.checkWrite(req.Cond); err != nil {
		return err
	}
	return d.blobView(ctx, req.Ref, func(tx Tx, now time.Time, b *Blob) error {
		_, err := checkPageWrite(b, req, now)
		return err
	})
}

// WritePages commits a Put Page under the blob lock: the rule, then the new
// run merged into the page map (or the range cut out of it, for a clear),
// a new ETag, and the objects no run of the blob or of its snapshots names
// any more queued for collection after the grace period (a reader that
// started before still finishes on them).
func (d *DB) WritePages(ctx context.Context, req PageWriteRequest) (*Blob, LeaseResult, error) {
	var leaseRes LeaseResult
	if err := d.checkWrite(req.Cond); err != nil {
		return nil, leaseRes, err
	}
	var out *Blob
	err := d.blobTx(ctx, req.Ref, func(tx Tx, now time.Time, b *Blob) error {
		lease, err := checkPageWrite(b, req, now)
		if err != nil {
			return err
		}
		if lease, leaseRes, err = applyPutLease(lease, req.PutLease, now); err != nil {
			return err
		}
		var runs []Extent
		if req.Clear {
			runs = cutRuns(b.Extents, req.Start, req.End)
		} else {
			if err := takeIntent(ctx, tx, req.Extent.Key); err != nil {
				return err
			}
			runs = putRun(b.Extents, Extent{Key: req.Extent.Key, Size: req.End - req.Start, At: req.Start})
		}
		if err := d.dropRuns(ctx, tx, req.Ref, b.Extents, runs, now); err != nil {
			return err
		}
		if b.ETag, err = tx.NextETag(ctx); err != nil {
			return err
		}
		b.Extents, b.Lease, b.LastModified = runs, lease, now
		if err := tx.PutBlob(ctx, b); err != nil {
			return err
		}
		out = b
		return nil
	})
	return out, leaseRes, err
}

// dropRuns queues the objects that the runs old named and the runs kept no
// longer name, unless a snapshot of the name still does.
func (d *DB) dropRuns(ctx context.Context, tx Tx, ref BlobRef, old, kept []Extent, now time.Time) error {
	gone := unreferenced([]*Blob{{Extents: old}}, []*Blob{{Extents: kept}})
	if len(gone) == 0 {
		return nil
	}
	snaps, err := nameRows(ctx, tx, ref)
	if err != nil {
		return err
	}
	gone = unreferenced([]*Blob{{Extents: old}}, append(snaps, &Blob{Extents: kept}))
	return release(ctx, tx, gone, now.Add(d.Grace))
}

// SetPageBlobProperties is Set Blob Properties with a resize or a sequence
// number action (PageProps), under the update rule. props nil keeps the
// content properties: Azure replaces the x-ms-blob-content-* set only
// when the request sends one of them. Runs a shrink drops are collected as
// for a clear.
func (d *DB) SetPageBlobProperties(ctx context.Context, ref BlobRef, leaseID string, cond Conditions, props *Props, pp PageProps) (*Blob, error) {
	if err := d.checkWrite(cond); err != nil {
		return nil, err
	}
	var out *Blob
	err := d.blobTx(ctx, ref, func(tx Tx, now time.Time, b *Blob) error {
		lease, err := checkUpdate(b, leaseID, cond, now)
		if err != nil {
			return err
		}
		if b.IsIncrementalCopy() {
			return errIncrementalCopyBlob()
		}
		old := b.Extents
		if err := applyPageProps(b, pp); err != nil {
			return err
		}
		if err := d.dropRuns(ctx, tx, ref, old, b.Extents, now); err != nil {
			return err
		}
		if props != nil {
			md5 := b.Props.ContentMD5
			b.Props = *props
			if props.ContentMD5 == nil {
				b.Props.ContentMD5 = md5
			}
		}
		b.Copy = nil
		if b.ETag, err = tx.NextETag(ctx); err != nil {
			return err
		}
		b.Lease, b.LastModified = lease, now
		if err := tx.PutBlob(ctx, b); err != nil {
			return err
		}
		out = b
		return nil
	})
	return out, err
}

// CompactPages swaps a page blob's map for CompactRuns(old, key) when the
// map is still old under the lock: the bytes at every offset stay, only
// the objects holding them change, so the ETag and Last-Modified stay too.
// A write that changed the map since old was read wins: nothing changes
// and done is false (the caller deletes the object under key, whose intent
// is still recorded). Objects no run or snapshot names any more are
// queued for collection after the grace period, as for a write.
func (d *DB) CompactPages(ctx context.Context, ref BlobRef, old []Extent, key string) (done bool, err error) {
	err = d.blobTx(ctx, ref, func(tx Tx, now time.Time, b *Blob) error {
		done = false // fn may run again
		if b == nil || b.Type != "PageBlob" || !slices.EqualFunc(b.Extents, old, Extent.Equal) {
			return nil
		}
		if err := takeIntent(ctx, tx, key); err != nil {
			return err
		}
		runs, _ := CompactRuns(old, key)
		if err := d.dropRuns(ctx, tx, ref, old, runs, now); err != nil {
			return err
		}
		b.Extents = runs
		if err := tx.PutBlob(ctx, b); err != nil {
			return err
		}
		done = true
		return nil
	})
	return done && err == nil, err
}
