package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

// Put Block's two round trips: LockForStage (BEGIN with it) locks the
// name and reads what the rules need of its row, CommitStage checks the
// staged blocks, takes the intent, upserts the block, queues the key it
// replaced and commits.

var _ leasedb.BlockStager = (*tx)(nil)

// lockForStageSQL is LockForStage's statement ($1..$3 the name, $4
// nameLockKey, $5 containerLockKey). Its locks are LockForReplace's, in
// the same order and for the same reasons (one lockChainSQL, see
// lockForReplaceSQL): each LATERAL subquery refers to the one before it,
// so they run one after the other: the container's shared advisory lock, the container check, the
// name's advisory lock (held whether or not the row is), the row FOR
// UPDATE (a lease action, which locks the row alone, waits for the Put
// Block or is waited for), and, when the name has no row, FOR KEY SHARE on
// the container's row, which re-reads it after the waits (a container
// deleted meanwhile is gone; the block's insert takes that lock anyway,
// for its foreign key). The clock is read in the outer list, after every
// lock was granted.
//
// Of the row it reads the type and the lease columns, and the length of
// the first extent's block id (stageFirstIDLenSQL), never the extents
// text whole: a small blob's bytes are in it, stored out of line (TOAST).
//
// The statement's snapshot predates a wait on the locks: a row that the
// previous holder of the name's lock inserted does not show (one it
// changed does: FOR UPDATE re-reads it). CommitStage's statement, with a
// snapshot taken under the locks, checks that the name still has no row
// when none was read, and has the transaction retried if it has. Nothing
// here reads the staged blocks for the same reason: their count and id
// length are read by CommitStage's statement, under the lock.
var lockForStageSQL = `SELECT b.name IS NOT NULL, c.ok IS NOT NULL AND (b.name IS NOT NULL OR ins.ok IS NOT NULL),
	COALESCE(b.blob_type, ''), COALESCE(b.lease_id, ''), COALESCE(b.lease_state, ''), COALESCE(b.lease_duration, 0),
	b.lease_expires, b.lease_break_at, b.lease_since,
	` + stageFirstIDLenSQL + `,
	clock_timestamp()
` + lockChainSQL("name, blob_type, "+sqlq.LeaseCols+", extents, extents_keys", false)

// stageFirstIDLenSQL is the length of the block id of row b's first
// extent (0: none). Only a block blob's matters (another type is refused
// first), and only a row whose extents name an object can have one: a
// block id comes from a staged block, which always has a key, so a row
// whose extents_keys is false (an inline blob) has its text left unread.
// Otherwise the first extent is read from the text's first kilobyte:
// EncodeExtents writes each extent {"k":"<key>","n":<size>, then "d" (inline
// bytes), "id" (block id), "a", "o"}, so a block's id follows its size,
// and an extent without "d" and "id" closes after "n", "a" and "o". Where
// neither form is found there (a key of a kilobyte, an extent with inline
// bytes), the text is parsed as JSON: the answer is the same.
const stageFirstIDLenSQL = `CASE WHEN b.name IS NULL OR b.blob_type <> 'BlockBlob' OR NOT COALESCE(b.extents_keys, TRUE) THEN 0
	ELSE COALESCE(
		length(substring(left(b.extents, 1024) from '^\[\{"k":"(?:[^"\\]|\\.)*","n":-?[0-9]+,"id":"([^"]*)"')),
		CASE WHEN left(b.extents, 1024) ~ '^(\[\]|\[\{"k":"(?:[^"\\]|\\.)*","n":-?[0-9]+(,"[ao]":-?[0-9]+)*\})' THEN 0 END,
		length(b.extents::json -> 0 ->> 'id'), 0) END`

// Markers of the refusals commitStageSQL raises (a failing cast to int,
// which aborts the statement and so the transaction).
const (
	markStagedIDLength = "blobgw-staged-id-length"
	markStagedLimit    = "blobgw-staged-limit"
)

// commitStageSQL is CommitStage's statement ($1..$3 the name, $4 the
// block id, $5 its key, $6 its size, $7 its staged time, which is also
// the due time of the replaced key's collection; $8 whether LockForStage
// found no row; $9 the staged block limit). It runs under the locks
// LockForStage took, on a snapshot taken after them, so state sees every
// block staged and the row as committed before the lock was granted, and
// all its CTEs see the name as it is before the write: old is the key of
// the block staged under the same id, which nothing references (it is
// collected at once). The final SELECT fails the statement, so nothing of
// it stays, when a row appeared that LockForStage could not see (stale:
// the transaction is retried), when the rules of the staged blocks refuse
// the block (in the generic order: the id length, then the count), or
// when the intent was gone. taken finds the intent by key alone and counts
// it only unclaimed, as commitReplaceSQL's does: a claimed one (the
// collector is about to delete the object) fails the statement, which
// undoes its delete.
var commitStageSQL = `WITH state AS MATERIALIZED (SELECT
	NOT ($8::bool AND EXISTS (SELECT 1 FROM blobs WHERE account = $1 AND container = $2 AND name = $3)) AS fresh,
	count(*)::int AS n, COALESCE(max(length(block_id)), 0)::int AS len
	FROM blocks WHERE account = $1 AND container = $2 AND blob = $3),
taken AS (DELETE FROM gc_queue WHERE key = $5::text AND is_intent RETURNING claimed_at IS NULL AS free),
old AS (SELECT key FROM blocks WHERE account = $1 AND container = $2 AND blob = $3 AND block_id = $4::text),
up AS (INSERT INTO blocks (account, container, blob, block_id, key, size, staged_at)
	VALUES ($1, $2, $3, $4::text, $5::text, $6, $7::timestamptz)
	ON CONFLICT (account, container, blob, block_id) DO UPDATE SET
		key = excluded.key, size = excluded.size, staged_at = excluded.staged_at),
gc AS (INSERT INTO gc_queue (key, due_at, is_intent) SELECT key, $7::timestamptz, FALSE FROM old
	ON CONFLICT (key) DO UPDATE SET due_at = excluded.due_at, is_intent = FALSE)
SELECT CASE WHEN NOT c.fresh THEN ('` + markStale + ` ' || c.n)::int
	WHEN c.n > 0 AND c.len <> length($4::text) THEN ('` + markStagedIDLength + ` ' || c.len)::int
	WHEN c.n >= $9::int THEN ('` + markStagedLimit + ` ' || c.n)::int
	WHEN t.n <> 1 THEN ('` + markIntentLost + ` ' || t.n)::int
	ELSE t.n END
FROM state AS c, (SELECT count(*) FILTER (WHERE free)::int AS n FROM taken) AS t`

// staging is what LockForStage locked, for CommitStage.
type staging struct {
	ref    leasedb.BlobRef
	absent bool // no row was read
}

// LockForStage implements leasedb.BlockStager.
func (t *tx) LockForStage(ctx context.Context, ref leasedb.BlobRef) (leasedb.StageTarget, error) {
	var st leasedb.StageTarget
	if err := checkText(ref.Account, ref.Container, ref.Name); err != nil {
		return st, err
	}
	if t.readOnly {
		return st, fmt.Errorf("leasedb/postgres: lock for stage %s: read-only transaction", ref)
	}
	var (
		exp, brk, since pgtype.Timestamptz
		now             time.Time
	)
	// The transaction's first statement: BEGIN goes with it in one
	// round trip.
	err := t.tx.queryBegin(ctx, func(rows pgx.Rows) error {
		if !rows.Next() {
			if err := rows.Err(); err != nil {
				return err
			}
			return pgx.ErrNoRows
		}
		if err := rows.Scan(&st.Exists, &st.ContainerExists, &st.Type, &st.Lease.ID, &st.Lease.State, &st.Lease.Duration,
			&exp, &brk, &since, &st.FirstBlockIDLen, &now); err != nil {
			return err
		}
		rows.Close()
		return rows.Err()
	}, lockForStageSQL, ref.Account, ref.Container, ref.Name,
		nameLockKey(ref.Account, ref.Container, ref.Name), containerLockKey(ref.Account, ref.Container))
	if err != nil {
		return leasedb.StageTarget{}, fmt.Errorf("leasedb/postgres: lock for stage %s: %w", ref, sqlq.CtxErr(ctx, err))
	}
	st.Lease.Expires, st.Lease.BreakAt, st.Lease.Since = fromTS(exp), fromTS(brk), fromTS(since)
	// The clock of the transaction is read once, after its locks.
	if t.now.IsZero() {
		t.now = now.Add(t.offset).UTC().Truncate(time.Microsecond)
	}
	st.Now = t.now
	t.staging = &staging{ref: ref, absent: !st.Exists}
	return st, nil
}

// CommitStage implements leasedb.BlockStager: commitStageSQL and COMMIT in
// one round trip (lazyTx.commitPair, detached from ctx as run's COMMIT
// is). A refused statement makes the server skip COMMIT, and run rolls
// the transaction back; a connection lost once the pair was sent leaves
// the outcome unknown (commitPairError), and the block's object to its
// intent.
func (t *tx) CommitStage(ctx context.Context, ref leasedb.BlobRef, b leasedb.Block, limit int) error {
	sg := t.staging
	if sg == nil || sg.ref != ref {
		return fmt.Errorf("leasedb/postgres: commit stage %s: LockForStage did not lock it", ref)
	}
	if err := checkText(b.ID, b.Key); err != nil {
		return err
	}
	args := []any{ref.Account, ref.Container, ref.Name, b.ID, b.Key, b.Size, dueTS(b.StagedAt), sg.absent, limit}
	werr, cerr, rolledBack := t.tx.commitPair(ctx, commitStageSQL, args)
	if werr == nil && cerr == nil && !rolledBack {
		t.committed = true // the error's text is built only when there is one
		return nil
	}
	what := "leasedb/postgres: commit stage " + ref.String() + " " + b.ID
	var pgErr *pgconn.PgError
	if errors.As(werr, &pgErr) {
		switch {
		case strings.Contains(pgErr.Message, markStale):
			return fmt.Errorf("%s: %w", what, errStale)
		case strings.Contains(pgErr.Message, markStagedIDLength):
			return fmt.Errorf("%s: %w", what, leasedb.ErrStagedIDLength)
		case strings.Contains(pgErr.Message, markStagedLimit):
			return fmt.Errorf("%s: %w", what, leasedb.ErrStagedLimit)
		case strings.Contains(pgErr.Message, markIntentLost):
			return fmt.Errorf("%s: %w", what, leasedb.ErrIntentLost)
		case pgErr.Code == codeForeignKeyViolation:
			return fmt.Errorf("%s: container: %w", what, leasedb.ErrNotFound)
		}
	}
	return commitPairError(what, werr, cerr)
}
