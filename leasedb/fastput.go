package leasedb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/blobgw/blobgw/svcerr"
)

// The few-statement Put Blob. The generic commit of a Put Blob is a
// sequence of Tx calls, each a statement (on Postgres a round trip): the
// container, the name lock, the row, the clock and settings, the other
// rows of the name, the intent, an ETag, the shared keys, the collection
// queue, the staged blocks, the row again. A store whose transaction
// offers BlobWriteLocker does the same in two statements: one that locks
// and reads everything the rule and the bookkeeping need, and one that
// writes everything and commits. Go still decides (checkPutBlob,
// unchanged) between the two, and the outcome equals the generic
// sequence's (storetest compares the rows and the collection queue the
// two paths leave). Put Block List, Set Blob Metadata and Set Blob
// Properties take the same two statements.

// BlobWriteLocker is an optional Tx interface for the writes that replace
// a whole blob.
type BlobWriteLocker interface {
	// LockForReplace takes, in one statement, what Tx.Container with
	// LockShare and Tx.Blob with LockExclusive take (the name's lock even
	// when the row is absent, the container's shared lock, the row's
	// lock) and reads, after the locks were granted, the clock (Tx.Now
	// returns it from then on), the account's settings, a new ETag and
	// what the bookkeeping of a replace needs to know of the name. Where
	// what it reads may predate the locks (one statement's snapshot,
	// taken before a wait on them), CommitReplace checks under the locks
	// that none of it changed, and has Update run the transaction again
	// when something did.
	//
	// read says whether the row's inline bytes are read: with
	// ReadKeysIfPlain, and when read.Data says so for the settings and
	// the row's version id, Blob's extents come without them
	// (DecodeExtentsNoData) and ReplaceState.NoData is true.
	LockForReplace(ctx context.Context, ref BlobRef, read ReplaceRead) (ReplaceState, error)
	// CommitReplace writes w in one statement and commits the
	// transaction with it: the caller must make no other call on the
	// transaction and return nil from the Update function at once. When
	// fewer of w.Intents were taken than named, nothing is written and
	// the error matches ErrIntentLost. A failure whose outcome is unknown
	// carries ErrCommitUnknown, as a failed COMMIT of Update does.
	CommitReplace(ctx context.Context, w ReplaceWrite) error
}

// ReplaceRead says what LockForReplace reads of the inline bytes of the
// row it locks (Extent.Data).
type ReplaceRead uint8

const (
	// ReadWhole: the row whole (Put Block List may keep its extents).
	ReadWhole ReplaceRead = iota
	// ReadKeysIfPlain: Put Blob's, Set Blob Metadata's and Set Blob
	// Properties'. Where the write is plain (Data false) Put Blob
	// replaces the row and keeps nothing of it, reading only its keys
	// and sizes (the keys to free), conditions, lease and creation time,
	// and the two others write only the columns they change
	// (ReplaceWrite.Attrs); where it is not, the generic sequence keeps
	// the row (a version, a soft-deleted snapshot) or stores it whole, so
	// it is read whole.
	ReadKeysIfPlain
)

// Data reports whether LockForReplace reads the row's inline bytes, given
// the account's settings and the row's version id it read: the
// condition under which lockForReplace runs the generic sequence.
func (r ReplaceRead) Data(s AccountSettings, versionID string) bool {
	return r == ReadWhole || !s.PlainWrites() || versionID != ""
}

// ErrIntentLost is CommitReplace's error when an intent of the new
// extents was gone (the collector claimed it): nothing was written.
var ErrIntentLost = errors.New("leasedb: upload intent lost")

// ReplaceState is what LockForReplace read under the locks.
type ReplaceState struct {
	Blob            *Blob // the current row, nil when absent
	ContainerExists bool
	Now             time.Time
	Settings        AccountSettings
	ETag            string
	// NameRows: the name has snapshots, previous versions or soft-deleted
	// rows (read only when Blob is not nil): their rows may share Blob's
	// extents.
	NameRows bool
	// SharedKeys: some key of Blob is referenced by another name too
	// (Tx.ShareKeys), so releasing it needs Tx.ReleaseKeys.
	SharedKeys bool
	// NoData: Blob's extents were read without their inline bytes
	// (ReadKeysIfPlain on a plain write): Blob must not be stored or
	// kept anywhere.
	NoData bool
}

// ReplaceWrite is what CommitReplace writes, all or nothing: the intents
// of the new extents taken, the row stored (inserted or replaced), Free
// queued for collection at FreeDue, and with DropStaged every staged
// block of the name dropped and its object, unless the row references it
// (Put Block List), queued for collection at StagedDue.
//
// With Attrs, Row is the row LockForReplace locked and read, of which only
// what a plain Set Blob Metadata or Set Blob Properties changes changed
// (ETag, Last-Modified, content properties, metadata, lease, copy):
// CommitReplace writes those columns alone, with an UPDATE, so that the
// extents (a small blob's bytes in them) are neither encoded nor written
// again, and Row's extents may lack their inline bytes (NoData). Intents,
// Free and DropStaged are then empty (AttrsErr).
type ReplaceWrite struct {
	Row        *Blob
	Intents    []string
	Free       []string
	FreeDue    time.Time
	DropStaged bool
	StagedDue  time.Time
	Attrs      bool
}

// AttrsErr is CommitReplace's refusal of a write with Attrs that would
// do more than write the row's columns (nil when w is not such a write).
func (w ReplaceWrite) AttrsErr() error {
	if w.Attrs && (len(w.Intents) > 0 || len(w.Free) > 0 || w.DropStaged) {
		return fmt.Errorf("leasedb: commit replace %s/%s/%s: an attributes write with intents, freed keys or staged blocks",
			w.Row.Account, w.Row.Container, w.Row.Name)
	}
	return nil
}

// PlainWrites reports whether a write in the account is plain: no setting
// makes an overwrite keep anything of the blob it replaces (a version, or
// blob soft delete's soft-deleted snapshot).
// Only then may a write take the few-statement path; every new setting
// that changes what a write does must be considered here (and make it
// false when it applies), else writes would silently skip it.
func (s AccountSettings) PlainWrites() bool {
	return !s.Versioning && s.DeleteRetentionDays == 0
}

// lockExisting takes the few-statement path's locks and reads its state:
// ContainerNotFound when the container is absent (a blob row never
// outlives its container: foreign key).
func lockExisting(ctx context.Context, l BlobWriteLocker, ref BlobRef, read ReplaceRead) (ReplaceState, error) {
	st, err := l.LockForReplace(ctx, ref, read)
	if err == nil && st.NoData && (st.Blob == nil || read.Data(st.Settings, st.Blob.VersionID)) {
		err = fmt.Errorf("leasedb: lock for replace %s: the row's inline bytes were not read", ref)
	}
	if err == nil && !st.ContainerExists {
		err = svcerr.New(svcerr.ContainerNotFound)
	}
	return st, err
}

// freedKeys are the keys of gone that no row keeps once the write commits:
// not kept (the new row), not another row of the name (read only when
// the locked state says the name has some), and, when another name shares
// some of them, not held by that name (Tx.ReleaseKeys decides).
func freedKeys(ctx context.Context, tx Tx, st ReplaceState, ref BlobRef, gone *Blob, kept ...*Blob) ([]string, error) {
	if st.NameRows {
		snaps, err := nameRows(ctx, tx, ref)
		if err != nil {
			return nil, err
		}
		kept = append(kept, snaps...)
	}
	keys := unreferenced([]*Blob{gone}, kept)
	if st.SharedKeys {
		return tx.ReleaseKeys(ctx, keys)
	}
	return keys, nil
}

// lockForReplace takes the few-statement path's locks and reads its state.
// done is true when the write is decided there: the container is missing,
// or a write in the account is not plain or the blob is a version, for
// which generic ran instead in the same transaction (err is its outcome).
func lockForReplace(ctx context.Context, l BlobWriteLocker, tx Tx, ref BlobRef, read ReplaceRead,
	generic func(tx Tx, now time.Time, old *Blob) error) (st ReplaceState, done bool, err error) {
	if st, err = lockExisting(ctx, l, ref, read); err != nil {
		return st, true, err
	}
	// keepVersion and blob soft delete have nothing to do only when writes
	// are plain and the replaced blob is not a version.
	if !st.Settings.PlainWrites() || (st.Blob != nil && st.Blob.VersionID != "") {
		return st, true, generic(tx, st.Now, st.Blob)
	}
	return st, false, nil
}

// putBlobFewStatements is PutBlob's commit through BlobWriteLocker. It
// returns handled false when the transaction does not offer it; a request
// the fast path does not cover (a copy sharing its source's extents, an
// account whose writes are not plain, a blob that is a version) goes the
// generic way in the same transaction, from the locked state (generic).
func putBlobFewStatements(ctx context.Context, tx Tx, d *DB, req PutBlobRequest,
	generic func(tx Tx, now time.Time, old *Blob) error) (handled bool, out *Blob, res LeaseResult, err error) {
	l, ok := tx.(BlobWriteLocker)
	if !ok || req.Copy.SharedExtents {
		return false, nil, LeaseResult{}, nil
	}
	if done, b, err := putBlobOneTrip(ctx, tx, req); done || err != nil {
		return true, b, LeaseResult{}, err
	}
	// A plain Put Blob keeps nothing of the row it replaces: its inline
	// bytes are not read.
	st, done, err := lockForReplace(ctx, l, tx, req.Ref, ReadKeysIfPlain, generic)
	if done {
		return true, nil, LeaseResult{}, err
	}
	old, now := st.Blob, st.Now
	lease, err := checkPutBlob(old, req, now)
	if err != nil {
		return true, nil, LeaseResult{}, err
	}
	lease, res, err = applyPutLease(lease, req.PutLease, now)
	if err != nil {
		return true, nil, LeaseResult{}, err
	}
	b := putBlobRow(req, lease, st.ETag, now, old)
	// Put Blob discards every uncommitted block of the name.
	w := ReplaceWrite{Row: b, FreeDue: now.Add(d.Grace), DropStaged: true, StagedDue: now}
	for _, e := range req.Extents {
		if e.Key != "" { // an inline extent has no object, so no intent
			w.Intents = append(w.Intents, e.Key)
		}
	}
	if old != nil {
		if w.Free, err = freedKeys(ctx, tx, st, req.Ref, old, b); err != nil {
			return true, nil, LeaseResult{}, err
		}
	}
	if err := l.CommitReplace(ctx, w); err != nil {
		if errors.Is(err, ErrIntentLost) {
			err = errIntentLost()
		}
		return true, nil, LeaseResult{}, err
	}
	return true, b, res, nil
}

// writeExistingFewStatements is writeExisting (with a new ETag: Set Blob
// Properties, Set Blob Metadata) through BlobWriteLocker: the locks, the
// row, the clock and the ETag in one statement, the changed columns and
// COMMIT in the other (ReplaceWrite.Attrs: the row is read without a
// small blob's inline bytes and its extents are not written). It returns
// handled false when the transaction does not offer it. Where fn may
// write more than the row (keepVersion of Set Blob Metadata when the
// account's writes are not plain or the blob is a version), the row is
// read whole and stored the Tx way, and Update commits.
func writeExistingFewStatements(ctx context.Context, tx Tx, ref BlobRef, leaseID string, cond Conditions,
	fn func(tx Tx, now time.Time, b *Blob) error) (handled bool, out *Blob, err error) {
	l, ok := tx.(BlobWriteLocker)
	if !ok {
		return false, nil, nil
	}
	st, err := lockExisting(ctx, l, ref, ReadKeysIfPlain)
	if err != nil {
		return true, nil, err
	}
	b, now := st.Blob, st.Now
	lease, err := checkUpdate(b, leaseID, cond, now)
	if err != nil {
		return true, nil, err
	}
	// Decided before fn, which may change the row's version id; the
	// condition under which the row was read whole.
	plain := !ReadKeysIfPlain.Data(st.Settings, b.VersionID)
	if err := fn(tx, now, b); err != nil {
		return true, nil, err
	}
	b.Lease = lease
	b.ETag, b.LastModified = st.ETag, now
	if !plain {
		return true, b, tx.PutBlob(ctx, b)
	}
	return true, b, l.CommitReplace(ctx, ReplaceWrite{Row: b, Attrs: true})
}

// commitBlocksFewStatements is CommitBlocks's commit through
// BlobWriteLocker, as putBlobFewStatements is PutBlob's: the staged
// blocks are read in a statement of their own (after the locks), so Put
// Block List costs one statement more than Put Blob.
func commitBlocksFewStatements(ctx context.Context, tx Tx, d *DB, req CommitBlocksRequest,
	generic func(tx Tx, now time.Time, old *Blob) error) (handled bool, out *Blob, res LeaseResult, err error) {
	l, ok := tx.(BlobWriteLocker)
	if !ok {
		return false, nil, LeaseResult{}, nil
	}
	st, done, err := lockForReplace(ctx, l, tx, req.Ref, ReadWhole, generic)
	if done {
		return true, nil, LeaseResult{}, err
	}
	old, now := st.Blob, st.Now
	lease, err := checkCommitBlocks(old, req, now)
	if err != nil {
		return true, nil, LeaseResult{}, err
	}
	lease, res, err = applyPutLease(lease, req.PutLease, now)
	if err != nil {
		return true, nil, LeaseResult{}, err
	}
	staged, err := tx.Blocks(ctx, req.Ref.Account, req.Ref.Container, req.Ref.Name)
	if err != nil {
		return true, nil, LeaseResult{}, err
	}
	extents, err := resolveBlocks(req.Blocks, staged, old)
	if err != nil {
		return true, nil, LeaseResult{}, err
	}
	_, dropOld := blocksLeft(extents, staged, old)
	var free []string
	if len(dropOld) > 0 {
		// Snapshots keep the extents they share with the old version.
		if free, err = freedKeys(ctx, tx, st, req.Ref, &Blob{Extents: keyExtents(dropOld)}); err != nil {
			return true, nil, LeaseResult{}, err
		}
	}
	b := newRow(req.Ref, "BlockBlob", req.BlobContent, extents, lease, st.ETag, now, old)
	b.BlockCount = len(extents)
	w := ReplaceWrite{Row: b, Free: free, FreeDue: now.Add(d.Grace), DropStaged: true, StagedDue: now}
	if err := l.CommitReplace(ctx, w); err != nil {
		return true, nil, LeaseResult{}, err
	}
	return true, b, res, nil
}

// OneTripPutter is an optional Tx interface: Put Blob of a small inline
// block blob in one round trip, BEGIN, the statement that locks, checks
// and writes, and COMMIT sent at once. The store writes only when it is
// certain that checkPutBlob allows exactly this write (OneTripCovers
// says which requests it may take; within those, the row and the
// account it finds decide); for anything else it writes nothing, its
// empty transaction committed, and the caller goes on in tx as if
// nothing had run (the few-statement path then gives the exact answer).
type OneTripPutter interface {
	// PutBlobOneTrip writes row (the new row as putBlobRow makes it
	// over no blob, its ETag, Created, Last-Modified and lease to be
	// set by the store: it sets them in row when it wrote) and commits,
	// under req's lease id and conditions. wrote false with a nil
	// error: nothing was written and tx is as it was; held, when not
	// nil, is the row it found under the locks. When it wrote, the
	// caller makes no other call on tx and returns nil from the Update
	// function at once. A failure whose outcome is unknown carries
	// ErrCommitUnknown.
	PutBlobOneTrip(ctx context.Context, req PutBlobRequest, row *Blob) (wrote bool, held *OneTripHeld, err error)
}

// OneTripHeld is what a PutBlobOneTrip that wrote nothing read under its
// locks (the container's and the name's, the row FOR UPDATE: its newest
// version) when the few-statement path, run next, would judge the
// request by checkPutBlob on that row: the container exists, the
// account's writes are plain, and the row is present, not a version and
// not a copy's destination (no copy information). Blob holds what
// checkPutBlob reads of such a row (ETag, Last-Modified, lease), Now the
// clock read after the locks. A request checkPutBlob refuses on it is
// answered so (a 412 of an If-Match that failed, say), without the
// few-statement path's round trips; one it allows goes on as before.
type OneTripHeld struct {
	Blob *Blob
	Now  time.Time
}

// OneTripCovers reports whether a Put Blob request is one a OneTripPutter
// may take: a block blob whose extents are all inline (no object, so no
// intent), no put-and-release lease action, not a copy, no x-ms-if-tags,
// at most one ETag in If-Match (not the empty one) and in If-None-Match.
// Whether the row and account qualify (absent or inline, no version id,
// no incremental copy, no staged blocks, writes plain, the lease and
// conditions certainly passing) is the store's to check under the locks.
func OneTripCovers(req PutBlobRequest) bool {
	if req.Type != "BlockBlob" || req.LeaseAction != "" || req.Copy != (CopyTarget{}) || req.PageSize != 0 ||
		req.Cond.IfTags != nil || len(req.Cond.IfMatch) > 1 || len(req.Cond.IfNoneMatch) > 1 ||
		(len(req.Cond.IfMatch) == 1 && req.Cond.IfMatch[0] == "") {
		return false
	}
	for i := range req.Extents {
		if req.Extents[i].Key != "" {
			return false
		}
	}
	return true
}

// putBlobOneTrip tries PutBlob's commit in one round trip where tx offers
// it and the request is covered: done when it wrote (b the row), else
// the caller goes on in tx.
func putBlobOneTrip(ctx context.Context, tx Tx, req PutBlobRequest) (done bool, b *Blob, err error) {
	p, ok := tx.(OneTripPutter)
	if !ok || !OneTripCovers(req) {
		return false, nil, nil
	}
	b = putBlobRow(req, Lease{}, "", time.Time{}, nil)
	wrote, held, err := p.PutBlobOneTrip(ctx, req, b)
	if err != nil {
		return false, nil, err
	}
	if !wrote {
		if held != nil {
			// The rule on the row the statement locked, as the
			// few-statement path would apply it (OneTripHeld): its
			// refusal is the answer.
			if _, err := checkPutBlob(held.Blob, req, held.Now); err != nil {
				return true, nil, err
			}
		}
		return false, nil, nil
	}
	return true, b, nil
}
