package leasedb

import (
	"context"
	"errors"
	"time"

	"github.com/blobgw/blobgw/svcerr"
)

// Block and append blob limits: staged blocks per blob (Put Block: 409
// BlockCountExceedsLimit), committed blocks (Put Block List) and appended
// blocks (Append Block).
const (
	MaxUncommittedBlocks = 100_000
	MaxCommittedBlocks   = 50_000
	MaxAppendBlocks      = 50_000
)

// StageBlockRequest is the metadata half of Put Block: the bytes are
// durable under Block.Key, recorded as an upload intent.
type StageBlockRequest struct {
	Ref     BlobRef
	Block   Block
	LeaseID string
}

// StageBlock records a staged block (Put Block): the committed blob, if
// any, must be a block blob and its lease honoured; block ids of one blob
// share one length; at most 100,000 staged blocks (DB.StagedBlockLimit).
// A block staged again under the same id replaces the earlier one, whose
// object is collected at once (nothing ever referenced it). The committed
// blob's ETag is unchanged. Where the transaction offers BlockStager the
// commit takes its two statements (stageBlockFewStatements), else the Tx
// sequence below; the outcomes are the same (storetest's StageBlockPaths).
func (d *DB) StageBlock(ctx context.Context, req StageBlockRequest) error {
	limit := d.stagedLimit()
	return d.Store.Update(ctx, func(tx Tx) error {
		if s, ok := tx.(BlockStager); ok {
			return stageBlockFewStatements(ctx, s, req, limit)
		}
		return withBlob(ctx, tx, req.Ref, LockShare, LockExclusive, func(tx Tx, now time.Time, b *Blob) error {
			return stageBlockTx(ctx, tx, req, limit, now, b)
		})
	})
}

// stageBlockTx is StageBlock's generic commit, a Tx call per step, under
// the locks withBlob took.
func stageBlockTx(ctx context.Context, tx Tx, req StageBlockRequest, limit int, now time.Time, b *Blob) error {
	target := stageTargetOf(b)
	if err := checkStageTarget(target, req.LeaseID, now); err != nil {
		return err
	}
	if err := checkCommittedIDLen(target, req.Block.ID); err != nil {
		return err
	}
	count, idLen, err := tx.BlockStats(ctx, req.Ref.Account, req.Ref.Container, req.Ref.Name)
	if err != nil {
		return err
	}
	if err := checkStaged(count, idLen, req.Block.ID, limit); err != nil {
		return err
	}
	if err := takeIntent(ctx, tx, req.Block.Key); err != nil {
		return err
	}
	blk := req.Block
	blk.StagedAt = now
	replaced, err := tx.StageBlock(ctx, req.Ref.Account, req.Ref.Container, req.Ref.Name, blk)
	if err != nil {
		return err
	}
	if replaced != "" {
		return tx.AddGC(ctx, []string{replaced}, now)
	}
	return nil
}

// The few-statement Put Block. The generic commit is the container, the
// name's lock and the row (whole, extents and all), the clock, the staged
// blocks' count, the intent, the block's upsert and the replaced key's
// collection entry: a statement each, on Postgres a round trip each. A
// store whose transaction offers BlockStager takes them in two: one that
// locks and reads what the rules need of the row, and one that checks the
// staged blocks, writes and commits.

// BlockStager is an optional Tx interface for Put Block, offered where a
// statement costs a round trip (Postgres).
type BlockStager interface {
	// LockForStage takes, in one statement, the locks the generic
	// sequence takes (Tx.Container with LockShare, Tx.Blob with
	// LockExclusive: the name's lock even when the row is absent, the
	// row's lock) and reads, after they were granted, what Put Block's
	// rules need of the row (StageTarget: never the extents beyond the
	// first extent's block id, so never a small blob's bytes), whether
	// the container exists and the clock (Tx.Now returns it from then
	// on). What it reads may predate the locks where a statement's
	// snapshot does (taken before a wait on them): CommitStage checks
	// under the locks that the row did not appear meanwhile, and has
	// Update run the transaction again when it did.
	LockForStage(ctx context.Context, ref BlobRef) (StageTarget, error)
	// CommitStage stages b (b.StagedAt set) for the name LockForStage
	// locked, in one statement, and commits the transaction with it: the
	// caller must make no other call on the transaction and return nil
	// from the Update function at once. Under the name's lock, with what
	// is committed then, it refuses when the name's staged blocks have
	// ids of another length than b.ID (ErrStagedIDLength) or number
	// limit or more (ErrStagedLimit), then takes the intent of b.Key
	// (ErrIntentLost when it is gone), upserts the block and queues the
	// key of the block it replaced, if any, for collection at once. A
	// refusal writes nothing; a failure whose outcome is unknown carries
	// ErrCommitUnknown, as a failed COMMIT of Update does.
	CommitStage(ctx context.Context, ref BlobRef, b Block, limit int) error
}

// StageTarget is what Put Block's rules read of the name it stages for.
type StageTarget struct {
	// Exists: the name has a committed row, of Type and Lease.
	Exists bool
	Type   string
	Lease  Lease
	// FirstBlockIDLen is the length of the block id of the row's first
	// extent (0: none, or no row): a new block's id must match it.
	FirstBlockIDLen int
	// ContainerExists is true whenever Exists is.
	ContainerExists bool
	Now             time.Time
}

// The refusals of CommitStage (BlockStager).
var (
	ErrStagedIDLength = errors.New("leasedb: the staged blocks have ids of another length")
	ErrStagedLimit    = errors.New("leasedb: the staged block count is at its limit")
)

// stageBlockFewStatements is StageBlock's commit through BlockStager: the
// rules of the row in Go between the two statements, those of the staged
// blocks in CommitStage, under the lock, in the generic order (the row's,
// then the staged blocks', then the intent; the two id length checks
// refuse alike).
func stageBlockFewStatements(ctx context.Context, s BlockStager, req StageBlockRequest, limit int) error {
	st, err := s.LockForStage(ctx, req.Ref)
	if err != nil {
		return err
	}
	if !st.Exists && !st.ContainerExists {
		return svcerr.New(svcerr.ContainerNotFound)
	}
	if err := checkStageTarget(st, req.LeaseID, st.Now); err != nil {
		return err
	}
	if err := checkCommittedIDLen(st, req.Block.ID); err != nil {
		return err
	}
	blk := req.Block
	blk.StagedAt = st.Now
	err = s.CommitStage(ctx, req.Ref, blk, limit)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrIntentLost):
		return errIntentLost()
	case errors.Is(err, ErrStagedIDLength):
		return errBlockIDLength()
	case errors.Is(err, ErrStagedLimit):
		return errBlockLimit()
	}
	return err
}

// stagedLimit is the staged block limit of Put Block.
func (d *DB) stagedLimit() int {
	if d.StagedBlockLimit > 0 {
		return d.StagedBlockLimit
	}
	return MaxUncommittedBlocks
}

// checkCommittedIDLen: a block's id has the length of the committed
// blocks' ids (the first extent's, when it is a block).
func checkCommittedIDLen(t StageTarget, id string) error {
	if t.Exists && t.FirstBlockIDLen != 0 && t.FirstBlockIDLen != len(id) {
		return errBlockIDLength()
	}
	return nil
}

// checkStaged is Put Block's rule of the name's staged blocks (count of
// them, idLen the length of their ids): the new id of their length, and
// fewer than limit staged.
func checkStaged(count, idLen int, id string, limit int) error {
	if count > 0 && idLen != len(id) {
		return errBlockIDLength()
	}
	if count >= limit {
		return errBlockLimit()
	}
	return nil
}

func errBlockIDLength() error {
	return svcerr.Newf(svcerr.InvalidBlobOrBlock, "The specified blob or block content is invalid: all block ids of a blob must have the same length.")
}

func errBlockLimit() error {
	return svcerr.Newf(svcerr.BlockCountExceedsLimit, "The uncommitted block count cannot exceed the maximum limit of 100,000 blocks.")
}

func errIntentLost() error {
	return svcerr.Newf(svcerr.OperationTimedOut, "the upload outlived its intent deadline; retry the request")
}

// takeIntent takes the intent of key, the object a write commits; an
// intent already gone (expired and claimed by the collector, which is
// about to delete the object) fails the write with errIntentLost.
func takeIntent(ctx context.Context, tx Tx, key string) error {
	ok, err := tx.TakeIntent(ctx, key)
	if err != nil {
		return err
	}
	if !ok {
		return errIntentLost()
	}
	return nil
}

// BlockListKind is where Put Block List looks a block id up.
type BlockListKind int

const (
	BlockCommitted BlockListKind = iota
	BlockUncommitted
	BlockLatest
)

// BlockRef is one entry of a Put Block List body.
type BlockRef struct {
	Kind BlockListKind
	ID   string
}

// CommitBlocksRequest is Put Block List.
type CommitBlocksRequest struct {
	Ref    BlobRef
	Blocks []BlockRef
	BlobContent
	LeaseID    string
	Cond       Conditions
	CreateOnly bool // as in PutBlobRequest
	PutLease
}

// CommitBlocks is Put Block List, one transaction under the blob lock: the
// rule checkCommitBlocks, then every id resolved (resolveBlocks) or 400
// InvalidBlockList with nothing changed. The blob becomes
// the ordered extents of the resolved blocks (no bytes copied); every
// staged block is dropped; objects no longer referenced are collected
// (staged ones at once, previously committed ones after the grace period).
func (d *DB) CommitBlocks(ctx context.Context, req CommitBlocksRequest) (*Blob, LeaseResult, error) {
	if err := d.checkWrite(req.Cond); err != nil {
		return nil, LeaseResult{}, err
	}
	if len(req.Blocks) > MaxCommittedBlocks {
		return nil, LeaseResult{}, svcerr.New(svcerr.BlockListTooLong)
	}
	rule := func(old *Blob, now time.Time) (Lease, error) { return checkCommitBlocks(old, req, now) }
	fast := func(tx Tx, generic func(tx Tx, now time.Time, old *Blob) error) (bool, *Blob, LeaseResult, error) {
		return commitBlocksFewStatements(ctx, tx, d, req, generic)
	}
	return d.replaceBlob(ctx, req.Ref, rule, req.PutLease, fast, func(tx Tx, now time.Time, old *Blob, lease Lease) (*Blob, error) {
		staged, err := tx.Blocks(ctx, req.Ref.Account, req.Ref.Container, req.Ref.Name)
		if err != nil {
			return nil, err
		}
		extents, err := resolveBlocks(req.Blocks, staged, old)
		if err != nil {
			return nil, err
		}
		// Collect what the new blob no longer references.
		dropStaged, dropOld := blocksLeft(extents, staged, old)
		if err := tx.DeleteBlocks(ctx, req.Ref.Account, req.Ref.Container, req.Ref.Name); err != nil {
			return nil, err
		}
		if err := tx.AddGC(ctx, dropStaged, now); err != nil {
			return nil, err
		}
		// Snapshots keep the extents they share with the old version.
		snaps, err := nameRows(ctx, tx, req.Ref)
		if err != nil {
			return nil, err
		}
		dropOld = unreferenced([]*Blob{{Extents: keyExtents(dropOld)}}, snaps)
		if err := release(ctx, tx, dropOld, now.Add(d.Grace)); err != nil {
			return nil, err
		}
		etag, err := tx.NextETag(ctx)
		if err != nil {
			return nil, err
		}
		b := newRow(req.Ref, "BlockBlob", req.BlobContent, extents, lease, etag, now, old)
		b.BlockCount = len(extents)
		return b, nil
	})
}

// BlockList is Get Block List's answer.
type BlockList struct {
	Blob        *Blob // nil when only staged blocks exist
	Committed   []Extent
	Uncommitted []Block
}

// GetBlockList reads the committed and staged blocks (Get Block List): 404
// when there is neither a committed blob nor a staged block. ifTags (may be
// nil) is x-ms-if-tags, evaluated against the committed blob's tags (an
// uncommitted blob has none).
func (d *DB) GetBlockList(ctx context.Context, ref BlobRef, leaseID string, ifTags *TagExpr) (*BlockList, error) {
	out := &BlockList{}
	err := d.Store.View(ctx, func(tx Tx) error {
		_, err := containerOf(ctx, tx, ref.Account, ref.Container, LockNone)
		if err != nil {
			return err
		}
		b, err := tx.Blob(ctx, ref.Account, ref.Container, ref.Name, LockNone)
		if err != nil {
			return err
		}
		staged, err := tx.Blocks(ctx, ref.Account, ref.Container, ref.Name)
		if err != nil {
			return err
		}
		if b == nil && len(staged) == 0 {
			return svcerr.New(svcerr.BlobNotFound)
		}
		if b == nil && ifTags != nil {
			return svcerr.New(svcerr.ConditionNotMet)
		}
		if b != nil {
			if b.Type != "BlockBlob" {
				return svcerr.New(svcerr.InvalidBlobType)
			}
			now, err := tx.Now(ctx)
			if err != nil {
				return err
			}
			if err := CheckReadLease(b.Lease, leaseID, BlobTarget, now); err != nil {
				return err
			}
			if ifTags != nil && !ifTags.Match(b.Tags) {
				return svcerr.New(svcerr.ConditionNotMet)
			}
			out.Blob = b
			for _, e := range b.Extents {
				if e.BlockID != "" {
					out.Committed = append(out.Committed, e)
				}
			}
		}
		out.Uncommitted = staged
		return nil
	})
	return out, err
}

// AppendRequest is Append Block: the bytes are durable under Extent.Key,
// or, for an inline extent (Extent.Inline), in Extent.Data.
type AppendRequest struct {
	Ref       BlobRef
	Extent    Extent
	LeaseID   string
	Cond      Conditions
	AppendPos int64 // -1 when absent
	MaxSize   int64 // -1 when absent
	// InlineMax bounds an inline Extent: the blob's inline bytes after the
	// append (InlineBytes of its extents plus Extent.Size) must stay within
	// it, or AppendBlock commits nothing and returns ErrAppendStage.
	InlineMax int64

	PutLease
}

// PrecheckAppend refuses, before any byte is read, an append that will
// certainly fail (Append Block: blob type, seal, block count,
// x-ms-blob-condition-appendpos and x-ms-blob-condition-maxsize).
func (d *DB) PrecheckAppend(ctx context.Context, req AppendRequest, n int64) error {
	return d.blobView(ctx, req.Ref, func(tx Tx, now time.Time, b *Blob) error {
		_, err := checkAppend(b, req, n, now)
		return err
	})
}

// ErrAppendStage is AppendBlock's answer to an inline append block that
// would take the blob's inline bytes past AppendRequest.InlineMax. Nothing
// was committed: the caller stages the bytes as an object and appends
// again. The total is decided under the row lock, so racing appenders can
// never together take a row past the bound.
var ErrAppendStage = errors.New("leasedb: append block must be staged, the blob's inline bytes are at their bound")

// InlineBytes is the sum of the sizes of the inline extents among extents.
func InlineBytes(extents []Extent) int64 {
	var n int64
	for _, e := range extents {
		if e.Inline() {
			n += e.Size
		}
	}
	return n
}

// AppendBlock appends one staged object at the current end, atomically under
// the blob lock: concurrent appenders are serialized, and an append whose
// position condition no longer holds is refused (so a retried request can
// never land twice). Returns the blob after the append and the offset the
// block starts at.
func (d *DB) AppendBlock(ctx context.Context, req AppendRequest) (*Blob, int64, LeaseResult, error) {
	var leaseRes LeaseResult
	if err := d.checkWrite(req.Cond); err != nil {
		return nil, 0, leaseRes, err
	}
	var out *Blob
	var offset int64
	err := d.blobTx(ctx, req.Ref, func(tx Tx, now time.Time, b *Blob) error {
		lease, err := checkAppend(b, req, req.Extent.Size, now)
		if err != nil {
			return err
		}
		if lease, leaseRes, err = applyPutLease(lease, req.PutLease, now); err != nil {
			return err
		}
		if req.Extent.Inline() {
			// Append Block inline: no object, so no intent to take; the
			// row's inline total is checked here, under the lock.
			if InlineBytes(b.Extents)+req.Extent.Size > req.InlineMax {
				return ErrAppendStage
			}
		} else {
			if err := takeIntent(ctx, tx, req.Extent.Key); err != nil {
				return err
			}
		}
		etag, err := tx.NextETag(ctx)
		if err != nil {
			return err
		}
		offset = b.Size
		b.Extents = append(b.Extents, req.Extent)
		b.Size += req.Extent.Size
		b.BlockCount++
		b.Lease, b.ETag, b.LastModified = lease, etag, now
		if err := tx.PutBlob(ctx, b); err != nil {
			return err
		}
		out = b
		return nil
	})
	return out, offset, leaseRes, err
}

// SealBlob seals an append blob (Append Blob Seal): 404 when absent, the
// write lease check, cond (If-*, x-ms-if-tags), 409 InvalidBlobType for
// another type, then appendPos (x-ms-blob-condition-appendpos, -1 when
// absent; 412 AppendPositionConditionNotMet), all under the row lock, so
// an append racing the seal lands before it or is refused after it.
// Sealing a sealed blob succeeds. The ETag and Last-Modified stay (the
// service documents that Seal does not change them).
func (d *DB) SealBlob(ctx context.Context, ref BlobRef, leaseID string, cond Conditions, appendPos int64) (*Blob, error) {
	if err := d.checkWrite(cond); err != nil {
		return nil, err
	}
	return d.writeExisting(ctx, ref, leaseID, cond, false, func(_ Tx, _ time.Time, b *Blob) error {
		if b.Type != "AppendBlob" {
			return svcerr.New(svcerr.InvalidBlobType)
		}
		if appendPos >= 0 && appendPos != b.Size {
			return svcerr.New(svcerr.AppendPositionConditionNotMet)
		}
		b.Sealed = true
		return nil
	})
}

// PrecheckBlock refuses a Put Block (or Put Block From URL) that will
// certainly fail before its body is read, with the commit's codes: the
// container, the blob's type and lease. It reads the row without a lock,
// in one statement where the store offers BlobReader (readBlob).
func (d *DB) PrecheckBlock(ctx context.Context, ref BlobRef, leaseID string) error {
	b, containerExists, now, err := d.readBlob(ctx, ref)
	if err != nil {
		return err
	}
	if !containerExists {
		return svcerr.New(svcerr.ContainerNotFound)
	}
	return checkStageTarget(stageTargetOf(b), leaseID, now)
}

func keyExtents(keys []string) []Extent {
	out := make([]Extent, len(keys))
	for i, k := range keys {
		out[i] = Extent{Key: k}
	}
	return out
}
