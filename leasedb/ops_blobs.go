package leasedb

import (
	"context"
	"time"

	"github.com/blobgw/blobgw/svcerr"
)

// GetBlob reads a committed blob row for Get Blob / Get Blob Properties:
// 404 when absent, then the read lease check, then the read conditions
// (ErrNotModified for 304). The returned time is the database clock, for
// computing lease headers.
func (d *DB) GetBlob(ctx context.Context, ref BlobRef, leaseID string, cond Conditions) (*Blob, time.Time, error) {
	b, containerExists, now, err := d.readBlob(ctx, ref)
	if err != nil {
		return nil, now, err
	}
	if !containerExists {
		return nil, now, svcerr.New(svcerr.ContainerNotFound)
	}
	if b == nil {
		return nil, now, svcerr.New(svcerr.BlobNotFound)
	}
	if err := CheckReadLease(b.Lease, leaseID, BlobTarget, now); err != nil {
		return nil, now, err
	}
	// With a 304 (ErrNotModified) the row is still returned so the caller
	// can send its ETag and Last-Modified.
	return b, now, EvalRead(cond, blobResource(b))
}

// PutBlobRequest is the metadata half of Put Blob, Put Blob From URL and
// Copy Blob: the bytes are already durable in the backend under the keys
// in Extents, each recorded as an upload intent (or, for a copy that
// shares them, referenced by the source: Copy.SharedExtents).
type PutBlobRequest struct {
	Ref     BlobRef
	Type    string
	Extents []Extent
	BlobContent
	LeaseID string
	Cond    Conditions
	// CreateOnly: the caller may only create (a SAS with c but not w); an
	// existing blob is 403 AuthorizationPermissionMismatch, the SAS
	// permission refusal.
	CreateOnly bool
	PutLease
	// Copy is what sets a Copy Blob destination apart (ops_copy.go); zero
	// for Put Blob and Put Blob From URL.
	Copy CopyTarget
	// PageSize and SequenceNumber are a new page blob's
	// x-ms-blob-content-length and x-ms-blob-sequence-number (Type
	// "PageBlob", no Extents: every page reads as zeros).
	PageSize, SequenceNumber int64
}

// BlobContent is what a write that replaces the whole blob (Put Blob, Put
// Blob From URL, Copy Blob, Put Block List) sets on the new row besides
// its bytes: an overwrite is a new blob, and nothing of the old one's
// properties, metadata, tags (x-ms-tags) or tier (x-ms-access-tier,
// canonical or "") survives.
type BlobContent struct {
	Props      Props
	Metadata   map[string]string
	Tags       map[string]string
	AccessTier string
}

// newRow is the row a whole-blob write commits: the content, the extents
// in order, a new ETag and Last-Modified, and the creation time of the
// blob it replaces (old, nil when there is none).
func newRow(ref BlobRef, typ string, c BlobContent, extents []Extent, lease Lease, etag string, now time.Time, old *Blob) *Blob {
	var size int64
	for _, e := range extents {
		size += e.Size
	}
	b := &Blob{
		Account: ref.Account, Container: ref.Container, Name: ref.Name,
		Type: typ, ETag: etag, Created: now, LastModified: now, Size: size,
		Props: c.Props, Metadata: c.Metadata, Extents: extents, Lease: lease,
		Tags: c.Tags, AccessTier: c.AccessTier,
	}
	if old != nil {
		b.Created = old.Created
	}
	return b
}

// PutLease is blobgw's put-and-release extension on a write (zero for
// plain Azure behaviour): LeaseAction "release" writes then releases the
// lease named by the request's lease id; "acquire" writes then acquires
// with Acquire (proposed id, duration), NewLeaseID being the id when none
// is proposed; "acquire-release" writes under the usual lease check and
// leaves no lease. All in the commit transaction.
type PutLease struct {
	LeaseAction string
	Acquire     LeaseRequest
	NewLeaseID  string
}

// Put-and-release actions accepted on writes.
const (
	PutLeaseRelease        = "release"
	PutLeaseAcquire        = "acquire"
	PutLeaseAcquireRelease = "acquire-release"
)

// applyPutLease applies a put-and-release action to the lease that the
// write's lease check left.
func applyPutLease(lease Lease, req PutLease, now time.Time) (Lease, LeaseResult, error) {
	switch req.LeaseAction {
	case PutLeaseRelease, PutLeaseAcquireRelease:
		return Lease{}, LeaseResult{}, nil
	case PutLeaseAcquire:
		acq := req.Acquire
		acq.Action = LeaseAcquire
		return ApplyLease(lease, acq, req.NewLeaseID, now)
	}
	return lease, LeaseResult{}, nil
}

// Precheck runs the rule of Put Blob, Put Blob From URL and Copy Blob
// (checkPutBlob) against the unlocked row: the write path's step 2, so a
// request that will certainly fail is refused before any byte is read or
// any source is opened. The commit runs the rule again under the lock.
func (d *DB) Precheck(ctx context.Context, req PutBlobRequest) error {
	if err := d.checkWrite(req.Cond); err != nil {
		return err
	}
	// A create-only caller is refused here too (before the lease and the
	// conditions, as the commit refuses it), so Put Blob over an existing
	// blob answers what Put Block List answers whatever the blob's lease.
	// The row is read without a lock, in one statement where the store
	// offers BlobReader (readBlob): the commit checks again under the
	// lock.
	b, containerExists, now, err := d.readBlob(ctx, req.Ref)
	if err != nil {
		return err
	}
	if !containerExists {
		return svcerr.New(svcerr.ContainerNotFound)
	}
	_, err = checkPutBlob(b, req, now)
	return err
}

// PutBlob commits a new version of a blob (Put Blob, Put Blob From URL,
// Copy Blob) under the rule checkPutBlob. The intents of the new extents
// are taken (a commit whose intent the collector claimed fails), the row
// swings to the new extents with a new ETag, and the replaced extents are
// queued for collection after the grace period. An active lease is kept
// when the request names it.
func (d *DB) PutBlob(ctx context.Context, req PutBlobRequest) (*Blob, LeaseResult, error) {
	if err := d.checkWrite(req.Cond); err != nil {
		return nil, LeaseResult{}, err
	}
	// One allocation for the request and replaceBlob's state: closures
	// over them took one each.
	op := &putBlobOp{req: req}
	op.replaceRun = replaceRun{d: d, ctx: ctx, ref: req.Ref, pl: req.PutLease, kind: op}
	return op.run()
}

// putBlobOp is PutBlob's write kind (replaceKind) and its run.
type putBlobOp struct {
	replaceRun
	req PutBlobRequest
}

func (op *putBlobOp) rule(old *Blob, now time.Time) (Lease, error) {
	return checkPutBlob(old, op.req, now)
}

func (op *putBlobOp) fast(tx Tx, generic func(tx Tx, now time.Time, old *Blob) error) (bool, *Blob, LeaseResult, error) {
	return putBlobFewStatements(op.ctx, tx, op.d, op.req, generic)
}

func (op *putBlobOp) commit(tx Tx, now time.Time, old *Blob, lease Lease) (*Blob, error) {
	ctx, d, req := op.ctx, op.d, &op.req
	var snaps []*Blob
	var err error
	if old != nil || req.Copy.SharedExtents {
		if snaps, err = nameRows(ctx, tx, req.Ref); err != nil {
			return nil, err
		}
	}
	if req.Copy.SharedExtents {
		if err := shareExtents(ctx, tx, *req, old, snaps); err != nil {
			return nil, err
		}
	} else {
		for _, e := range req.Extents {
			if e.Key == "" {
				continue // inline: no object, no intent
			}
			if err := takeIntent(ctx, tx, e.Key); err != nil {
				return nil, err
			}
		}
	}
	etag, err := tx.NextETag(ctx)
	if err != nil {
		return nil, err
	}
	b := putBlobRow(*req, lease, etag, now, old)
	if req.Copy.Incremental {
		if err := snapshotIncremental(ctx, tx, req.Ref, now, b); err != nil {
			return nil, err
		}
	}
	if old != nil {
		// The new row may share extents with the old one (a restore
		// from a snapshot that shares them too): those stay.
		if err := release(ctx, tx, unreferenced([]*Blob{old}, append(snaps, b)), now.Add(d.Grace)); err != nil {
			return nil, err
		}
	}
	// Put Blob discards every uncommitted block of the name.
	if err := dropStaged(ctx, tx, req.Ref, now); err != nil {
		return nil, err
	}
	return b, nil
}

// putBlobRow is the row PutBlob commits (newRow with what a copy and a
// page blob add).
func putBlobRow(req PutBlobRequest, lease Lease, etag string, now time.Time, old *Blob) *Blob {
	b := newRow(req.Ref, req.Type, req.BlobContent, req.Extents, lease, etag, now, old)
	b.BlockCount = req.Copy.BlockCount
	b.Sealed = req.Copy.Sealed && req.Type == "AppendBlob"
	if req.Type == "PageBlob" {
		b.Size, b.SequenceNumber = req.PageSize, req.SequenceNumber
	}
	if req.Copy.Info != nil {
		ci := *req.Copy.Info
		ci.Completed = now
		b.Copy = &ci
	}
	return b
}

// fastReplace is a write kind's few-statement commit (fastput.go), tried
// first in replaceBlob's transaction: handled false when the store's
// transaction does not offer it; it may run generic, the locked part of
// the generic sequence, in the same transaction.
type fastReplace func(tx Tx, generic func(tx Tx, now time.Time, old *Blob) error) (handled bool, b *Blob, res LeaseResult, err error)

// replaceKind is a write kind's part of replaceBlob: its rule, its
// few-statement commit (fastReplace) and its generic commit (replaceBlob's
// commit).
type replaceKind interface {
	rule(old *Blob, now time.Time) (Lease, error)
	fast(tx Tx, generic func(tx Tx, now time.Time, old *Blob) error) (handled bool, b *Blob, res LeaseResult, err error)
	commit(tx Tx, now time.Time, old *Blob, lease Lease) (*Blob, error)
}

// funcKind is a replaceKind made of functions (fast nil: none).
type funcKind struct {
	ruleFn   func(old *Blob, now time.Time) (Lease, error)
	fastFn   fastReplace
	commitFn func(tx Tx, now time.Time, old *Blob, lease Lease) (*Blob, error)
}

func (k *funcKind) rule(old *Blob, now time.Time) (Lease, error) { return k.ruleFn(old, now) }

func (k *funcKind) fast(tx Tx, generic func(tx Tx, now time.Time, old *Blob) error) (bool, *Blob, LeaseResult, error) {
	if k.fastFn == nil {
		return false, nil, LeaseResult{}, nil
	}
	return k.fastFn(tx, generic)
}

func (k *funcKind) commit(tx Tx, now time.Time, old *Blob, lease Lease) (*Blob, error) {
	return k.commitFn(tx, now, old, lease)
}

// replaceBlob is the shared shape of the writes that replace the whole
// blob (PutBlob, CommitBlocks), in one transaction under the blob lock:
// the write kind's rule, then the put-and-release action on the lease the
// rule left, then commit, which does the write kind's bookkeeping and
// returns the new row (holding that lease) for replaceBlob to store. fast
// (nil: none) is tried first.
func (d *DB) replaceBlob(ctx context.Context, ref BlobRef, rule func(old *Blob, now time.Time) (Lease, error), pl PutLease,
	fast fastReplace, commit func(tx Tx, now time.Time, old *Blob, lease Lease) (*Blob, error)) (*Blob, LeaseResult, error) {
	r := &replaceRun{d: d, ctx: ctx, ref: ref, pl: pl, kind: &funcKind{ruleFn: rule, fastFn: fast, commitFn: commit}}
	return r.run()
}

// replaceRun is one run of replaceBlob for a write kind: its transaction
// (update, which Update may run more than once) and what it answers.
type replaceRun struct {
	d        *DB
	ctx      context.Context
	ref      BlobRef
	pl       PutLease
	kind     replaceKind
	gen      func(tx Tx, now time.Time, old *Blob) error // generic, made once
	out      *Blob
	leaseRes LeaseResult
}

func (r *replaceRun) run() (*Blob, LeaseResult, error) {
	r.gen = r.generic
	err := r.d.Store.Update(r.ctx, r.update)
	return r.out, r.leaseRes, err
}

// update is the transaction: the kind's few-statement commit when the
// store offers it, else the generic sequence under the blob lock.
func (r *replaceRun) update(tx Tx) error {
	handled, b, res, err := r.kind.fast(tx, r.gen)
	if handled {
		if err == nil && b != nil {
			r.out, r.leaseRes = b, res
		}
		return err
	}
	return withBlob(r.ctx, tx, r.ref, LockShare, LockExclusive, r.gen)
}

// generic is the locked part of the generic sequence.
func (r *replaceRun) generic(tx Tx, now time.Time, old *Blob) error {
	ctx := r.ctx
	lease, err := r.kind.rule(old, now)
	if err != nil {
		return err
	}
	lease, res, err := applyPutLease(lease, r.pl, now)
	if err != nil {
		return err
	}
	// Versioning first: the version row of old then counts as a
	// reference to old's extents in commit's bookkeeping.
	vid, err := keepVersion(ctx, tx, r.ref, now, old)
	if err != nil {
		return err
	}
	// Then soft delete: without versioning, the replaced blob is
	// kept as a soft-deleted snapshot.
	if err := r.d.keepOverwritten(ctx, tx, r.ref, now, old); err != nil {
		return err
	}
	b, err := r.kind.commit(tx, now, old, lease)
	if err != nil {
		return err
	}
	b.VersionID = vid
	if err := tx.PutBlob(ctx, b); err != nil {
		return err
	}
	r.out, r.leaseRes = b, res
	return nil
}

// updateBlob is the shared shape of Set Blob Properties / Set Blob Metadata:
// writeExisting with a new ETag.
func (d *DB) updateBlob(ctx context.Context, ref BlobRef, leaseID string, cond Conditions, mutate func(b *Blob)) (*Blob, error) {
	if err := d.checkWrite(cond); err != nil {
		return nil, err
	}
	return d.writeExisting(ctx, ref, leaseID, cond, true, func(tx Tx, now time.Time, b *Blob) error {
		if b.IsIncrementalCopy() {
			return errIncrementalCopyBlob()
		}
		mutate(b)
		return nil
	})
}

// writeExisting changes an existing blob row under its lock: 404 (or 412
// when a condition needs the blob) when absent, the write lease check and
// update-kind conditions, then fn, which may refuse; with newETag the row
// gets a new ETag and Last-Modified.
func (d *DB) writeExisting(ctx context.Context, ref BlobRef, leaseID string, cond Conditions, newETag bool, fn func(tx Tx, now time.Time, b *Blob) error) (*Blob, error) {
	return d.writeExistingStore(ctx, ref, leaseID, cond, newETag, fn, nil)
}

// writeExistingStore is writeExisting whose row, once changed, store
// writes where it is not nil (tx.PutBlob otherwise).
func (d *DB) writeExistingStore(ctx context.Context, ref BlobRef, leaseID string, cond Conditions, newETag bool,
	fn func(tx Tx, now time.Time, b *Blob) error, store func(tx Tx, b *Blob) error) (*Blob, error) {
	var out *Blob
	generic := func(tx Tx, now time.Time, b *Blob) error {
		lease, err := checkUpdate(b, leaseID, cond, now)
		if err != nil {
			return err
		}
		if err := fn(tx, now, b); err != nil {
			return err
		}
		b.Lease = lease
		if newETag {
			if b.ETag, err = tx.NextETag(ctx); err != nil {
				return err
			}
			b.LastModified = now
		}
		if store == nil {
			err = tx.PutBlob(ctx, b)
		} else {
			err = store(tx, b)
		}
		if err != nil {
			return err
		}
		out = b
		return nil
	}
	err := d.Store.Update(ctx, func(tx Tx) error {
		if newETag {
			if handled, b, err := writeExistingFewStatements(ctx, tx, ref, leaseID, cond, fn); handled {
				if err == nil {
					out = b
				}
				return err
			}
		}
		return withBlob(ctx, tx, ref, LockShare, LockExclusive, generic)
	})
	return out, err
}

// SetBlobProperties replaces the blob's system properties wholesale (as
// Azure does: properties not sent are cleared), keeping Content-MD5 unless
// a new one is given. The blob stops reporting the copy that wrote it.
// The blob returned is for the answer's headers (ETag, Last-Modified):
// on a plain account its extents were read without a small blob's inline
// bytes (ReplaceState.NoData), so they must not be read for its content.
func (d *DB) SetBlobProperties(ctx context.Context, ref BlobRef, leaseID string, cond Conditions, p Props) (*Blob, error) {
	return d.updateBlob(ctx, ref, leaseID, cond, func(b *Blob) {
		// Set Blob Properties: a content property the request does not
		// send is cleared, x-ms-blob-content-md5 included.
		b.Copy = nil
		b.Props = p
	})
}

// SetBlobMetadata replaces the blob's metadata. With versioning on it is
// a new version (Azure versions Set Blob Metadata, not Set Blob
// Properties): the blob as it was is kept as the previous version. The
// blob returned is for the answer's headers (ETag, Last-Modified,
// x-ms-version-id), as SetBlobProperties's is.
func (d *DB) SetBlobMetadata(ctx context.Context, ref BlobRef, leaseID string, cond Conditions, meta map[string]string) (*Blob, error) {
	if err := d.checkWrite(cond); err != nil {
		return nil, err
	}
	return d.writeExisting(ctx, ref, leaseID, cond, true, func(tx Tx, now time.Time, b *Blob) error {
		if b.IsIncrementalCopy() {
			return errIncrementalCopyBlob()
		}
		vid, err := keepVersion(ctx, tx, ref, now, b)
		if err != nil {
			return err
		}
		b.Metadata, b.VersionID = meta, vid
		return nil
	})
}

// DeleteBlob deletes a committed blob; its objects are collected after the
// grace period. With the account's DeleteRetentionPolicy on, the blob and
// the snapshots it deletes are soft-deleted instead (kept, with their
// objects, until Undelete Blob or the retention's end); with versioning
// on the blob becomes a previous version as before.
func (d *DB) DeleteBlob(ctx context.Context, ref BlobRef, leaseID string, cond Conditions, snaps DeleteSnapshots) error {
	_, err := d.DeleteBlobSoft(ctx, ref, leaseID, cond, snaps)
	return err
}

// DeleteBlobSoft is DeleteBlob; soft reports that what it deleted was
// soft-deleted (Delete Blob: x-ms-delete-type-permanent false).
func (d *DB) DeleteBlobSoft(ctx context.Context, ref BlobRef, leaseID string, cond Conditions, snaps DeleteSnapshots) (soft bool, err error) {
	if err := d.checkWrite(cond); err != nil {
		return false, err
	}
	err = d.blobTx(ctx, ref, func(tx Tx, now time.Time, b *Blob) error {
		if _, err := checkUpdate(b, leaseID, cond, now); err != nil {
			return err
		}
		snapshots, err := tx.Snapshots(ctx, ref.Account, ref.Container, ref.Name)
		if err != nil {
			return err
		}
		if len(snapshots) > 0 && snaps == KeepSnapshots {
			return svcerr.New(svcerr.SnapshotsPresent)
		}
		settings, err := tx.AccountSettings(ctx, ref.Account)
		if err != nil {
			return err
		}
		days := settings.DeleteRetentionDays
		soft = days > 0 && (snaps != OnlySnapshots || len(snapshots) > 0)
		var dropped []*Blob
		if snaps == IncludeSnapshots || snaps == OnlySnapshots {
			for _, sn := range snapshots {
				if err := tx.DeleteSnapshot(ctx, ref.Account, ref.Container, ref.Name, sn.Snapshot); err != nil {
					return err
				}
				if days > 0 {
					if err := d.softDelete(ctx, tx, ref, sn, sn.Snapshot, now, days); err != nil {
						return err
					}
				}
			}
			if days == 0 {
				dropped = snapshots
			}
		}
		if snaps != OnlySnapshots {
			// With versioning on (or for a blob that is a version) the
			// current version becomes a previous one: no current blob
			// is left, and its extents stay with the version row.
			// Otherwise, with a retention, it is soft-deleted.
			if _, err := keepVersion(ctx, tx, ref, now, b); err != nil {
				return err
			}
			switch {
			case settings.Versioning || b.VersionID != "":
			case days > 0:
				if err := d.softDelete(ctx, tx, ref, b, "", now, days); err != nil {
					return err
				}
			default:
				dropped = append(dropped, b)
			}
			if err := tx.DeleteBlob(ctx, ref.Account, ref.Container, ref.Name); err != nil {
				return err
			}
			if err := dropStaged(ctx, tx, ref, now); err != nil {
				return err
			}
		}
		if len(dropped) == 0 {
			return nil
		}
		// Every row left of the name (versions, soft-deleted rows, the
		// blob when only its snapshots went) keeps its extents.
		kept, err := nameRows(ctx, tx, ref)
		if err != nil {
			return err
		}
		if snaps == OnlySnapshots {
			kept = append(kept, b)
		}
		return release(ctx, tx, unreferenced(dropped, kept), now.Add(d.Grace))
	})
	return soft, err
}

// DeleteSnapshots is x-ms-delete-snapshots on Delete Blob.
type DeleteSnapshots int

const (
	// KeepSnapshots: no header; a blob with snapshots is 409 SnapshotsPresent.
	KeepSnapshots DeleteSnapshots = iota
	// IncludeSnapshots: delete the blob and its snapshots.
	IncludeSnapshots
	// OnlySnapshots: delete the snapshots, keep the blob.
	OnlySnapshots
)
