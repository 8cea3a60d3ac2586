package sqlite

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

var _ leasedb.BlobWriteLocker = (*tx)(nil)

// The few-statement writes (leasedb/fastput.go: Put Blob, Put Block List,
// Set Blob Metadata, Set Blob Properties) on SQLite.
//
// Update holds the database's write lock from BEGIN IMMEDIATE on, so
// nothing LockForReplace reads can change before CommitReplace writes:
// unlike Postgres, nothing needs checking again under the lock, and
// CommitReplace need not be one statement (a statement costs no round
// trip here). What the two save is the generic sequence's statements
// that read what one reads (the container, the account's settings, the
// name's other rows, the staged blocks), each costing SQLite a VDBE run
// and the driver and database/sql their per-statement objects: an inline
// overwrite runs 3 statements besides BEGIN and COMMIT instead of 7
// (TestHotPutStatements).

// lockForReplaceSQL reads, besides the row (queryBlobText), what a
// replace needs in the one statement that takes a new ETag: the account's
// settings, whether the name has staged blocks (so that CommitReplace
// reads the blocks only when there are some) and whether the container
// exists (so that a new name, put-small's every put, costs no statement
// of its own for it). RETURNING may hold scalar subqueries of other
// tables.
// Its columns are named quietly (resultcols.go).
const lockForReplaceSQL = `UPDATE etag_seq SET n = n + 1 WHERE id = 1 RETURNING +n AS a,
	coalesce((SELECT versioning FROM account_settings WHERE account = ?1), 0) AS b,
	coalesce((SELECT delete_retention_days FROM account_settings WHERE account = ?1), 0) AS c,
	EXISTS (SELECT 1 FROM blocks WHERE account = ?1 AND container = ?2 AND blob = ?3) AS d,
	EXISTS (SELECT 1 FROM containers WHERE account = ?1 AND name = ?2) AS e`

// keyRowsSQL says, for a row whose extents name objects (an overwrite
// may free them), whether the name has snapshots, versions or
// soft-deleted rows (nameRowsExistSQL) and whether another name shares
// one of the keys (?4: the keys as a JSON array).
var keyRowsSQL = nameRowsExistSQL + `,
	EXISTS (SELECT 1 FROM extent_shares WHERE key IN (SELECT value FROM json_each(?4))) AS b`

// replacing is what LockForReplace locked and read, for CommitReplace.
type replacing struct {
	ref    leasedb.BlobRef
	staged bool // the name has staged blocks
}

// LockForReplace implements leasedb.BlobWriteLocker: the ETag with the
// settings, the staged blocks' and the container's presence, then the
// row; for a row with keys, one statement more reads the name's other
// rows and shared keys. The write lock is held
// already: these reads are locked reads.
func (t *tx) LockForReplace(ctx context.Context, ref leasedb.BlobRef, read leasedb.ReplaceRead) (leasedb.ReplaceState, error) {
	var st leasedb.ReplaceState
	if err := checkText(ref.Account, ref.Container, ref.Name); err != nil {
		return st, err
	}
	if t.readOnly {
		return st, fmt.Errorf("leasedb/sqlite: lock for replace %s: read-only transaction", ref)
	}
	// The ETag first, the row after it: the UPDATE leaves a dirty page in
	// the connection's page cache, and SQLite reads a row's overflow pages
	// (every inline row of a few KiB has some) directly from the database
	// file with a pread(2) for each, bypassing the cache, only while no
	// page is dirty. Read second, the row comes from the cache.
	var (
		n                int64
		versioning, days int
		staged, exists   bool
	)
	if err := t.tx.QueryRowContext(ctx, lockForReplaceSQL, ref.Account, ref.Container, ref.Name).Scan(&n, &versioning, &days, &staged, &exists); err != nil {
		return st, fmt.Errorf("leasedb/sqlite: lock for replace %s: %w", ref, sqlq.CtxErr(ctx, err))
	}
	b, ext, err := queryBlobText(ctx, t.tx, ref.Account, ref.Container, ref.Name)
	if err != nil {
		return st, fmt.Errorf("leasedb/sqlite: lock for replace %s: %w", ref, sqlq.CtxErr(ctx, err))
	}
	// A row never outlives its container (foreign key), and nothing
	// changed between the two reads (the write lock).
	st.Blob, st.ContainerExists = b, exists
	if st.Now, err = t.Now(ctx); err != nil || !exists {
		// A missing container fails the write (lockExisting), and the
		// transaction rolls the ETag back.
		return st, err
	}
	st.ETag = formatETag(n)
	st.Settings = leasedb.AccountSettings{Versioning: versioning != 0, DeleteRetentionDays: days}
	// AccountSettings answers from this read for the rest of the
	// transaction (txreads.go), as after its own.
	t.settings, t.settingsFor, t.settingsOK = st.Settings, ref.Account, true
	// A row without keys frees nothing: NameRows and SharedKeys stay
	// false, not read.
	if b != nil {
		// The row's inline bytes only where the write may keep them.
		if st.NoData = !read.Data(st.Settings, b.VersionID); st.NoData {
			b.Extents, err = leasedb.DecodeExtentsNoData(ext)
		} else {
			b.Extents, err = leasedb.DecodeExtents(ext)
		}
		if err != nil {
			return st, fmt.Errorf("leasedb/sqlite: lock for replace %s: %w", ref, err)
		}
		if keys := b.Keys(); len(keys) > 0 {
			j, err := json.Marshal(keys)
			if err != nil {
				return st, err
			}
			if err := t.tx.QueryRowContext(ctx, keyRowsSQL, ref.Account, ref.Container, ref.Name, string(j)).Scan(&st.NameRows, &st.SharedKeys); err != nil {
				return st, fmt.Errorf("leasedb/sqlite: lock for replace %s: %w", ref, sqlq.CtxErr(ctx, err))
			}
		}
	}
	t.replacing = &replacing{ref: ref, staged: staged}
	return st, nil
}

// CommitReplace implements leasedb.BlobWriteLocker: the intents taken
// (every one, or nothing is written: ErrIntentLost, and Update rolls back
// the ones taken), the row stored (with Attrs, its changed columns
// alone: sqlq's SetBlobAttrs), the freed keys queued, and the staged
// blocks, when LockForReplace saw some, dropped with their objects queued
// unless the row references them. Update's COMMIT, right after, commits
// it; no other writer ran since LockForReplace (the write lock).
func (t *tx) CommitReplace(ctx context.Context, w leasedb.ReplaceWrite) error {
	b := w.Row
	ref := leasedb.BlobRef{Account: b.Account, Container: b.Container, Name: b.Name}
	rp := t.replacing
	if rp == nil || rp.ref != ref {
		return fmt.Errorf("leasedb/sqlite: commit replace %s: LockForReplace did not lock it", ref)
	}
	t.replacing = nil
	if w.Attrs {
		// The columns a plain Set Blob Metadata or Set Blob Properties
		// changes: the extents (a small blob's bytes) stay as stored.
		if err := w.AttrsErr(); err != nil {
			return err
		}
		return t.SetBlobAttrs(ctx, b)
	}
	for _, k := range w.Intents {
		ok, err := t.TakeIntent(ctx, k)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("leasedb/sqlite: commit replace %s: intent %s: %w", ref, k, leasedb.ErrIntentLost)
		}
	}
	if err := t.PutBlob(ctx, b); err != nil {
		return err
	}
	if err := t.AddGC(ctx, w.Free, w.FreeDue); err != nil {
		return err
	}
	if !w.DropStaged || !rp.staged {
		return nil
	}
	blocks, err := t.Blocks(ctx, ref.Account, ref.Container, ref.Name)
	if err != nil {
		return err
	}
	kept := map[string]bool{}
	for _, k := range b.Keys() {
		kept[k] = true
	}
	var keys []string
	for _, bl := range blocks {
		if !kept[bl.Key] {
			kept[bl.Key] = true // once each
			keys = append(keys, bl.Key)
		}
	}
	if err := t.DeleteBlocks(ctx, ref.Account, ref.Container, ref.Name); err != nil {
		return err
	}
	return t.AddGC(ctx, keys, w.StagedDue)
}
