package leasedb

import (
	"time"

	"github.com/blobgw/blobgw/svcerr"
)

// The rule of each write kind: a pure function of the current row (nil when
// the blob does not exist), the request and the database clock, returning
// the lease the write stores or the refusal. The same function serves the
// pre-check, which runs it against the unlocked row to refuse a request
// before its body is read, and the commit, which runs it again under the
// row lock; so the two cannot drift apart.

// replaceWrite is what the rule of a write that replaces the whole blob
// (Put Blob, Put Blob From URL, Copy Blob, Put Block List) reads.
type replaceWrite struct {
	leaseID    string
	cond       Conditions
	createOnly bool
	// blockBlobOnly: an existing blob of another type is 409
	// InvalidBlobType (Put Block List).
	blockBlobOnly bool
}

// checkReplace is the rule of a whole-blob write: a create-only caller (a
// SAS with c but not w) may not replace an existing blob (403
// UnauthorizedBlobOverwrite, Azure's answer to Put Blob, Put Block List and
// Copy Blob alike; authorization comes before the lease and the
// conditions); then the type, when the write needs a
// block blob; then the write lease (a lease id sent for a blob that does
// not exist is 412 LeaseNotPresentWithBlobOperation); then the conditions
// of a create-kind write (If-None-Match: * on an existing blob is 409
// BlobAlreadyExists).
func checkReplace(old *Blob, w replaceWrite, now time.Time) (Lease, error) {
	if old == nil {
		if w.leaseID != "" {
			return Lease{}, svcerr.New(svcerr.LeaseNotPresentWithBlobOperation)
		}
		return Lease{}, EvalWrite(w.cond, Resource{}, CreateWrite)
	}
	if w.createOnly {
		return Lease{}, svcerr.New(svcerr.UnauthorizedBlobOverwrite)
	}
	if w.blockBlobOnly && old.Type != "BlockBlob" {
		return Lease{}, svcerr.New(svcerr.InvalidBlobType)
	}
	lease, err := CheckWriteLease(old.Lease, w.leaseID, BlobTarget, now)
	if err != nil {
		return Lease{}, err
	}
	if err := EvalWrite(w.cond, blobResource(old), CreateWrite); err != nil {
		return Lease{}, err
	}
	return lease, nil
}

// checkPutBlob is the rule of Put Blob, Put Blob From URL and Copy Blob
// (whose destination rules, req.Copy, come last: an id sent names the
// active lease by then). It returns the lease the new row keeps before
// the put-and-release action.
func checkPutBlob(old *Blob, req PutBlobRequest, now time.Time) (Lease, error) {
	lease, err := checkReplace(old, replaceWrite{leaseID: req.LeaseID, cond: req.Cond, createOnly: req.CreateOnly}, now)
	if err != nil {
		return Lease{}, err
	}
	if err := checkCopyTarget(req, old, now); err != nil {
		return Lease{}, err
	}
	if req.Copy.Info == nil && old.IsIncrementalCopy() {
		// Put Blob over an incremental copy blob (Copy Blob is
		// checkCopyTarget's).
		return Lease{}, errIncrementalCopyBlob()
	}
	return lease, nil
}

// checkCommitBlocks is the rule of Put Block List.
func checkCommitBlocks(old *Blob, req CommitBlocksRequest, now time.Time) (Lease, error) {
	return checkReplace(old, replaceWrite{leaseID: req.LeaseID, cond: req.Cond, createOnly: req.CreateOnly, blockBlobOnly: true}, now)
}

// checkUpdate is the rule of a write that changes an existing blob (Set
// Blob Properties, Set Blob Metadata, Delete Blob, Append Block, Append
// Blob Seal): 404 BlobNotFound when absent (412 when a condition needs the
// blob), then the write lease, then the conditions of an update-kind write
// (If-None-Match: * on an existing blob is 412).
func checkUpdate(b *Blob, leaseID string, cond Conditions, now time.Time) (Lease, error) {
	if b == nil {
		return Lease{}, cond.missingBlob()
	}
	return updateRule(b.Lease, blobResource(b), leaseID, cond, now)
}

// checkUpdateHead is checkUpdate on the row's head (Set Blob Tags).
func checkUpdateHead(h *BlobHead, leaseID string, cond Conditions, now time.Time) (Lease, error) {
	if h == nil {
		return Lease{}, cond.missingBlob()
	}
	return updateRule(h.Lease, h.resource(), leaseID, cond, now)
}

// updateRule is checkUpdate's rule for an existing blob of lease l,
// r its ETag, Last-Modified and tags.
func updateRule(l Lease, r Resource, leaseID string, cond Conditions, now time.Time) (Lease, error) {
	lease, err := CheckWriteLease(l, leaseID, BlobTarget, now)
	if err != nil {
		return Lease{}, err
	}
	if err := EvalWrite(cond, r, UpdateWrite); err != nil {
		return Lease{}, err
	}
	return lease, nil
}

// checkReadLeaseUpdate is the rule of a write whose lease check is
// read-style (Snapshot Blob, Set Blob Tier) and of Get Blob Tags: 404
// BlobNotFound when absent (412 when a condition needs the blob), then a
// lease id, when given, must match the active lease (none is needed), then
// the conditions of an update-kind write (a tag read has no 304 either).
func checkReadLeaseUpdate(b *Blob, leaseID string, cond Conditions, now time.Time) error {
	if b == nil {
		return cond.missingBlob()
	}
	return readLeaseUpdateRule(b.Lease, blobResource(b), leaseID, cond, now)
}

// checkReadLeaseUpdateHead is checkReadLeaseUpdate on the row's head
// (Get Blob Tags, Set Blob Tier).
func checkReadLeaseUpdateHead(h *BlobHead, leaseID string, cond Conditions, now time.Time) error {
	if h == nil {
		return cond.missingBlob()
	}
	return readLeaseUpdateRule(h.Lease, h.resource(), leaseID, cond, now)
}

// readLeaseUpdateRule is checkReadLeaseUpdate's rule for an existing blob
// of lease l, r its ETag, Last-Modified and tags.
func readLeaseUpdateRule(l Lease, r Resource, leaseID string, cond Conditions, now time.Time) error {
	if err := CheckReadLease(l, leaseID, BlobTarget, now); err != nil {
		return err
	}
	return EvalWrite(cond, r, UpdateWrite)
}

// checkAppend is the rule of Append Block (and Append Block From URL) of
// n bytes: the update rule, then the append blob's own: its type, not
// sealed, x-ms-blob-condition-appendpos (412 AppendPositionConditionNotMet),
// x-ms-blob-condition-maxsize (412 MaxBlobSizeConditionNotMet) and the
// 50,000 block limit.
func checkAppend(b *Blob, req AppendRequest, n int64, now time.Time) (Lease, error) {
	lease, err := checkUpdate(b, req.LeaseID, req.Cond, now)
	if err != nil {
		return Lease{}, err
	}
	switch {
	case b.Type != "AppendBlob":
		return Lease{}, svcerr.New(svcerr.InvalidBlobType)
	case b.Sealed:
		return Lease{}, svcerr.New(svcerr.BlobIsSealed)
	case req.AppendPos >= 0 && req.AppendPos != b.Size:
		return Lease{}, svcerr.New(svcerr.AppendPositionConditionNotMet)
	case req.MaxSize >= 0 && b.Size+n > req.MaxSize:
		return Lease{}, svcerr.New(svcerr.MaxBlobSizeConditionNotMet)
	case b.BlockCount >= MaxAppendBlocks:
		return Lease{}, svcerr.New(svcerr.BlockCountExceedsLimit)
	}
	return lease, nil
}

// checkBlockTarget is the rule of Put Block: it needs no existing blob, but
// an existing one must be a block blob and its lease is enforced; a lease
// id sent for a blob that does not exist is 412
// LeaseNotPresentWithBlobOperation. Staging changes neither the blob nor
// its lease, and no condition applies.
func checkBlockTarget(b *Blob, leaseID string, now time.Time) error {
	return checkStageTarget(stageTargetOf(b), leaseID, now)
}

// checkStageTarget is checkBlockTarget of what it reads of the blob.
func checkStageTarget(t StageTarget, leaseID string, now time.Time) error {
	if !t.Exists {
		if leaseID != "" {
			return svcerr.New(svcerr.LeaseNotPresentWithBlobOperation)
		}
		return nil
	}
	if t.Type != "BlockBlob" {
		return svcerr.New(svcerr.InvalidBlobType)
	}
	_, err := CheckWriteLease(t.Lease, leaseID, BlobTarget, now)
	return err
}

// stageTargetOf is what Put Block's rules read of b (nil: absent).
func stageTargetOf(b *Blob) StageTarget {
	if b == nil {
		return StageTarget{}
	}
	t := StageTarget{Exists: true, Type: b.Type, Lease: b.Lease, ContainerExists: true}
	if len(b.Extents) > 0 {
		t.FirstBlockIDLen = len(b.Extents[0].BlockID)
	}
	return t
}

// resolveBlocks resolves a Put Block List body into the new blob's
// extents, in order: Uncommitted looks the id up among the staged blocks,
// Committed among the blocks of the current committed list (old, nil when
// there is no blob), Latest among the staged blocks first and then the
// committed ones. An id found nowhere is 400 InvalidBlockList.
func resolveBlocks(refs []BlockRef, staged []Block, old *Blob) ([]Extent, error) {
	stagedByID := make(map[string]Block, len(staged))
	for _, b := range staged {
		stagedByID[b.ID] = b
	}
	committed := map[string]Extent{}
	if old != nil {
		for _, e := range old.Extents {
			if e.BlockID != "" {
				committed[e.BlockID] = e
			}
		}
	}
	extents := make([]Extent, 0, len(refs))
	for _, r := range refs {
		var e Extent
		found := false
		if r.Kind == BlockUncommitted || r.Kind == BlockLatest {
			if b, ok := stagedByID[r.ID]; ok {
				e, found = Extent{Key: b.Key, Size: b.Size, BlockID: b.ID}, true
			}
		}
		if !found && (r.Kind == BlockCommitted || r.Kind == BlockLatest) {
			e, found = committed[r.ID]
		}
		if !found {
			return nil, svcerr.New(svcerr.InvalidBlockList)
		}
		extents = append(extents, e)
	}
	return extents, nil
}

// blocksLeft splits what a Put Block List leaves unreferenced: the keys of
// staged blocks the new list does not use (never referenced by a blob, so
// collectable at once) and the distinct keys of the old blob's extents it
// does not use (still readable by a reader of the old version until the
// grace period ends, and perhaps shared with a snapshot).
func blocksLeft(extents []Extent, staged []Block, old *Blob) (stagedKeys, oldKeys []string) {
	keep := make(map[string]bool, len(extents))
	for _, e := range extents {
		keep[e.Key] = true
	}
	for _, b := range staged {
		if !keep[b.Key] {
			stagedKeys = append(stagedKeys, b.Key)
		}
	}
	if old != nil {
		seen := map[string]bool{}
		for _, e := range old.Extents {
			if e.Key != "" && !keep[e.Key] && !seen[e.Key] {
				seen[e.Key] = true
				oldKeys = append(oldKeys, e.Key)
			}
		}
	}
	return stagedKeys, oldKeys
}
