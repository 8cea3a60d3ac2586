package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

var _ leasedb.BlobWriteLocker = (*tx)(nil)

// lockForReplaceSQL is LockForReplace's statement. Each LATERAL subquery
// refers to the one before it, which makes Postgres run them in order, one
// after the other (OFFSET 0 keeps each a subquery of its own): the
// container's shared advisory lock (containerLockKey: what Tx.Container
// with LockShare guards, a Delete Container or a container soft delete
// waits for the commit, see there; it is the statement's first relation,
// ck), the container check (only once that lock is held) and, in the
// check's own output list, the name's advisory lock (so taken only when
// the container's row is found; held whether or not the blob row is, so
// that two creators of an absent name are serialized), then the row FOR
// UPDATE (only once the name's lock is held: c.l). The settings (st) take
// no lock and read with the statement's snapshot wherever they stand; they
// come right after ck, where the join above them carries three columns
// rather than the row's thirty. The clock, the ETag and what the
// bookkeeping needs of the name are read in the outer list, after every
// lock was granted.
//
// That shape (four joins; it was six, with a constant first relation and
// the name's lock a subquery of its own) is the same locks in the same
// order: the executor's start-up of each join, of its Result nodes and of
// the tuple descriptors of the wide rows they pass on was about a third
// of the statement's CPU, and the two joins fewer save about 6 % of it
// (TestLockForReplacePlanShape holds the count; TestLockForReplaceLockOrder
// the order).
//
// The container's lock is an advisory lock, not FOR SHARE on its row: a
// row lock shared by several transactions is a MultiXact, and every write
// of a busy container made one (a MultiXact/CREATE_ID WAL record, the row's
// page dirtied and its lock written to WAL on every write).
//
// The statement's snapshot was taken before a wait on the advisory locks:
// the container or a row the previous holder deleted still shows in it,
// and a row that the previous holder inserted, or a snapshot, version or
// share of the name it added, does not (a row it changed does: FOR UPDATE
// re-reads it, and finds it gone when the holder deleted it). So the
// container is checked again under a row lock where that costs nothing:
// when the name has no row (none, or FOR UPDATE found it deleted), FOR KEY
// SHARE on the container's row (ins), which re-reads it after the wait (a
// container deleted meanwhile is gone) and which the new row's insert
// takes anyway (its foreign key). When the name has a row, its container
// exists: a Delete Container or soft delete that committed meanwhile took
// the row with it.
// CommitReplace's statement, with a snapshot taken under the locks, checks
// that nothing else appeared and has the transaction retried if it did.
//
// What the bookkeeping needs of the name (its other rows, keys shared by
// other names) matters only for the keys of the row, which an overwrite
// may free: it is read only when the row's extents name an object
// (extentsHaveKeySQL), else nothing of the row can be freed. Its last
// column holds it: 0 when not read (no row, or a row without keys), else
// 1, plus 2 when the name has snapshots, versions or soft-deleted rows,
// plus 4 when another name shares one of the row's keys; plus 8 when the
// name has staged blocks (whatever its row), so that CommitReplace leaves
// out the blocks' drop when there are none (commitReplaceBareSQL, which
// checks under the lock that none were staged meanwhile). The shared-keys
// check parses the extents as JSON: a small blob's bytes are base64 in
// that text (about 5.5 KB for 4 KiB), and parsing it, once for
// json_array_elements and again for each ->>, was an eighth of the
// database's CPU per small overwrite. Skipping the three lookups of the
// name's other rows too, and reading the account's settings once, take
// six of the statement's 22 buffer reads for an inline overwrite
// (TestLockForReplaceSkipsInlineExtents). Those four lookups are the
// function blob_replace_keys (migration 0017), not subqueries of this
// statement: a subquery's scans are set up at every run of the statement
// whether or not it runs (about a tenth of the database's CPU per small
// Put Blob), a function's statements only when it is called
// (TestLockForReplaceKeyState: what it reads). It is STABLE, so they read
// with this statement's snapshot, as the subqueries did. The row's
// extents column is extentsUnlessPlainSQL: $6 says the caller reads only
// keys on a plain write (ReadKeysIfPlain), and a row without keys then
// has its extents text neither fetched nor sent.
var lockForReplaceSQL = func() string {
	cols := strings.Fields(strings.ReplaceAll(blobCols, ",", " "))
	for i, c := range cols {
		cols[i] = "b." + c
		if c == "extents" {
			cols[i] = extentsUnlessPlainSQL
		}
	}
	return `SELECT ` + strings.Join(cols, ", ") + `, b.name IS NOT NULL, c.ok IS NOT NULL AND (b.name IS NOT NULL OR ins.ok IS NOT NULL),
	clock_timestamp(),
	COALESCE(st.versioning, 0), COALESCE(st.delete_retention_days, 0),
	nextval('etag_seq'),
	CASE WHEN b.name IS NULL OR NOT ` + extentsHaveKeySQL + ` THEN 0 ELSE blob_replace_keys($1, $2, $3, b.extents) END
		+ CASE WHEN EXISTS (SELECT 1 FROM blocks WHERE account = $1 AND container = $2 AND blob = $3) THEN 8 ELSE 0 END
` + lockChainSQL(blobCols+", extents_keys", true)
}()

// lockChainSQL is the FROM clause of the statements that lock a name for a
// write, LockForReplace's and LockForStage's ($1..$3 the name, $4
// nameLockKey, $5 containerLockKey): the locks in lockForReplaceSQL's
// order, then the row's rowCols as b (FOR UPDATE), the container's
// presence as c.ok and, for a name without a row, its FOR KEY SHARE as
// ins.ok; with settings also the account's settings as st.
func lockChainSQL(rowCols string, settings bool) string {
	from := `FROM (SELECT pg_advisory_xact_lock_shared($5)::text AS l OFFSET 0) AS ck`
	if settings {
		from += `
LEFT JOIN LATERAL (SELECT versioning, delete_retention_days FROM account_settings WHERE account = $1 AND ck.l IS NOT NULL OFFSET 0) AS st ON TRUE`
	}
	return from + `
LEFT JOIN LATERAL (SELECT TRUE AS ok, pg_advisory_xact_lock($4)::text AS l FROM containers
	WHERE account = $1 AND name = $2 AND ck.l IS NOT NULL OFFSET 0) AS c ON TRUE
LEFT JOIN LATERAL (SELECT ` + rowCols + ` FROM blobs
	WHERE account = $1 AND container = $2 AND name = $3 AND c.l IS NOT NULL OFFSET 0 FOR UPDATE) AS b ON TRUE
LEFT JOIN LATERAL (SELECT TRUE AS ok FROM containers WHERE account = $1 AND name = $2 AND c.ok AND b.name IS NULL OFFSET 0 FOR KEY SHARE) AS ins ON TRUE`
}

// extentsHaveKeySQL is true when the extents of row b have an extent with
// a key (an object in the backend): its extents_keys, which every write
// of the row sets (upsertSQL, migration 0018). A row written before has
// NULL there, and then its extents text is searched: EncodeExtents writes
// each extent as {"k":"<key>",...}, compact (its own encoder, or
// encoding/json's fallback, which escapes a key's quotes), so an extent
// without a key (inline bytes) is exactly `"k":""` and any other `"k":"`
// begins a key. A small blob's text is its bytes in base64, stored out of
// line (TOAST): the search fetched it and copied it once more.
const extentsHaveKeySQL = `COALESCE(b.extents_keys, strpos(replace(b.extents, '"k":""', ''), '"k":"') > 0)`

// extentsUnlessPlainSQL is the extents column of lockForReplaceSQL: NULL
// when $6 (ReadKeysIfPlain), the write is plain (the account's settings,
// the row's version id: leasedb.ReplaceRead.Data is false) and the row's
// extents have no key: such a Put Blob frees nothing of the row and keeps
// nothing of it, so the text (a small blob's bytes, stored out of line)
// is neither fetched nor sent. The column is NOT NULL, so NULL says this
// and nothing else (scanOneBlobRead).
const extentsUnlessPlainSQL = `CASE WHEN $6::bool AND b.version_id = '' AND COALESCE(st.versioning, 0) = 0
		AND COALESCE(st.delete_retention_days, 0) = 0 AND NOT ` + extentsHaveKeySQL + ` THEN NULL ELSE b.extents END`

// LockForReplace implements leasedb.BlobWriteLocker.
func (t *tx) LockForReplace(ctx context.Context, ref leasedb.BlobRef, read leasedb.ReplaceRead) (leasedb.ReplaceState, error) {
	var st leasedb.ReplaceState
	if err := checkText(ref.Account, ref.Container, ref.Name); err != nil {
		return st, err
	}
	if t.readOnly {
		return st, fmt.Errorf("leasedb/postgres: lock for replace %s: read-only transaction", ref)
	}
	// The arguments (as pointers, see textArg) and the columns read
	// after the container check in one allocation: each would be a
	// heap allocation of its own.
	x := &struct {
		ref              leasedb.BlobRef
		nameKey, contKey int64
		args             [6]any
		now              time.Time
		versioning, days int
		etag             int64
		keys             int // the last column: 1 keys read, 2 other rows, 4 shared, 8 staged blocks
		read             replaceRead
	}{ref: ref, nameKey: nameLockKey(ref.Account, ref.Container, ref.Name), contKey: containerLockKey(ref.Account, ref.Container)}
	x.read = replaceRead{read: read, versioning: &x.versioning, days: &x.days}
	x.args = [6]any{textArg{&x.ref.Account}, textArg{&x.ref.Container}, textArg{&x.ref.Name}, int64Arg{&x.nameKey}, int64Arg{&x.contKey},
		read == leasedb.ReadKeysIfPlain} // $6: extentsUnlessPlainSQL
	// The transaction's first statement: BEGIN goes with it in one
	// round trip.
	err := t.tx.queryBegin(ctx, func(rows pgx.Rows) error {
		var err error
		st.Blob, st.ContainerExists, st.NoData, err = scanOneBlobRead(rows, ref, &x.read, &x.now, &x.versioning, &x.days, &x.etag, &x.keys)
		if err != nil {
			return err
		}
		rows.Close()
		return rows.Err()
	}, lockForReplaceSQL, x.args[:]...)
	if err != nil {
		return st, fmt.Errorf("leasedb/postgres: lock for replace %s: %w", ref, sqlq.CtxErr(ctx, err))
	}
	if t.now.IsZero() {
		t.now = x.now.Add(t.offset).UTC().Truncate(time.Microsecond)
	}
	// What the generic Tx calls read from here on in this transaction
	// (Now, AccountSettings) is what this statement read.
	if t.account == "" {
		t.account = ref.Account
	}
	settings := leasedb.AccountSettings{Versioning: x.versioning != 0, DeleteRetentionDays: x.days}
	if t.account == ref.Account {
		t.settings = &settings
	}
	st.Now = t.now
	st.Settings = settings
	st.ETag = formatETag(x.etag)
	// A row without keys frees nothing: NameRows and SharedKeys are false
	// (not read), and CommitReplace does not check that the name still
	// has no other rows.
	st.NameRows, st.SharedKeys = x.keys&2 != 0, x.keys&4 != 0
	if x.keys&1 == 0 && st.Blob != nil && extentsKeys(st.Blob.Extents) {
		// Read as a row without keys (extents_keys false), yet its
		// extents, sent whole, have some: a gateway older than migration
		// 0018, still serving after it, wrote them with its upsert, which
		// leaves extents_keys as it was. The name's other rows and the
		// keys' shares were not read: say there may be some, so that
		// what the write frees is decided by reading them under the
		// locks (freedKeys), never by the false.
		st.NameRows, st.SharedKeys = true, true
	}
	if st.Blob != nil {
		t.replacing = &replacing{ref: ref, etag: st.Blob.ETag, noNameRows: x.keys&1 != 0 && x.keys&2 == 0, staged: x.keys&8 != 0}
	} else {
		t.replacing = &replacing{ref: ref, staged: x.keys&8 != 0}
	}
	return st, nil
}

// replacing is what CommitReplace checks again under the lock: the row's
// ETag as LockForReplace read it (none: absent), whether the name had no
// other rows and whether it had staged blocks.
type replacing struct {
	ref        leasedb.BlobRef
	etag       string
	noNameRows bool
	staged     bool
}

// Markers of the errors commitReplaceSQL raises (a failing cast to int,
// which aborts the statement and so the transaction).
const (
	markStale      = "blobgw-stale-read"
	markIntentLost = "blobgw-intent-lost"
)

// commitReplaceSQL is CommitReplace's statement ($1..$29 the row's
// values; $30 the intents, $31 the free keys, $32 their due time, $33 the
// staged blocks' due time, $34 the ETag LockForReplace read or NULL, $35
// whether the name had no snapshots, versions or soft-deleted rows then, $36 whether the
// staged blocks are dropped, $37 the row's keys: a staged block the row
// references is not collected; $38 the row's extents_keys). Its data-modifying
// CTEs all run on the snapshot taken when it starts (under the locks):
// chk sees the name as it is before the write, taken the intents it
// deleted. The final SELECT fails the statement, so nothing of it stays,
// when chk finds that a row LockForReplace could not see appeared (the
// transaction is retried) or when an intent was gone.
//
// taken finds the intents by key alone and counts the unclaimed ones: an
// intent the collector claimed is deleted too, and then fails the
// statement as a missing one does, which undoes the delete. "claimed_at
// IS NULL" in its WHERE would let the generic plan (the one pgx's
// prepared statement ends up running, planned without the keys) read the
// partial index gc_queue_due, every key queued and not yet claimed (all
// that overwrites freed within the collection grace), to intersect it
// with the keys: a cost per Put Blob that grew with the queue
// (TestCommitReplacePlanFindsIntentsByKey).
var commitReplaceSQL = `WITH chk AS MATERIALIZED (SELECT
	(SELECT etag FROM blobs WHERE account = $1 AND container = $2 AND name = $3) IS NOT DISTINCT FROM $34::text
	AND NOT ($35::bool AND (EXISTS (SELECT 1 FROM snapshots WHERE account = $1 AND container = $2 AND name = $3)
		OR EXISTS (SELECT 1 FROM versions WHERE account = $1 AND container = $2 AND name = $3)
		OR EXISTS (SELECT 1 FROM deleted_blobs WHERE account = $1 AND container = $2 AND name = $3)))
	AND NOT EXISTS (SELECT 1 FROM extent_shares WHERE key = ANY($31::text[]))
	AND ` + plainNowSQL + ` AS ok),
taken AS (DELETE FROM gc_queue WHERE key = ANY($30::text[]) AND is_intent RETURNING claimed_at IS NULL AS free),
up AS (` + upsertSQL(commitReplaceArgs) + ` RETURNING 1),
staged AS (DELETE FROM blocks WHERE $36::bool AND account = $1 AND container = $2 AND blob = $3 RETURNING key),
gc AS (INSERT INTO gc_queue (key, due_at, is_intent)
	SELECT DISTINCT ON (k) k, due, FALSE FROM (
		SELECT k, $32::timestamptz AS due FROM unnest($31::text[]) AS k
		UNION ALL SELECT key, $33::timestamptz FROM staged WHERE key <> ALL($37::text[])) AS g
	ORDER BY k, due
	ON CONFLICT (key) DO UPDATE SET due_at = excluded.due_at, is_intent = FALSE)
SELECT CASE WHEN NOT chk.ok THEN ('` + markStale + ` ' || t.n)::int
	WHEN t.n <> cardinality($30::text[]) THEN ('` + markIntentLost + ` ' || t.n)::int
	ELSE t.n END
FROM chk, (SELECT count(*) FILTER (WHERE free)::int AS n FROM taken) AS t`

// commitReplaceLightSQL is CommitReplace's statement for a write with no
// intents to take and no keys to free (an inline Put Blob over an inline
// or absent blob; Set Blob Metadata and Set Blob Properties take
// commitAttrsSQL) that drops
// staged blocks LockForReplace saw (else commitReplaceBareSQL): commitReplaceSQL
// without taken, without the collection entries of free keys and without
// the checks that guard freeing them (that the name has no other rows
// that may keep them, that no other name shares them). Those parts cost
// about as much when their arrays are empty (the executor's start-up and
// finish of a DELETE and an INSERT ... ON CONFLICT on gc_queue and of four
// subplans: about an eighth of the database's CPU per small Put Blob). chk
// is left with the ETag: a row that appeared or changed while the lock
// was awaited has the transaction retried, as in commitReplaceSQL, and the
// retry frees that row's keys. The row's upsert and the staged blocks'
// drop, their keys queued, are commitReplaceSQL's ($1..$29 the row's
// values; $30 the staged blocks' due time, $31 the ETag LockForReplace
// read or NULL, $32 whether the staged blocks are dropped, $33 the row's
// keys, $34 its extents_keys). The error of the CASE names chk.ok, so that the planner cannot
// fold it into a constant (and raise it while planning).
var commitReplaceLightSQL = `WITH chk AS MATERIALIZED (SELECT
	(SELECT etag FROM blobs WHERE account = $1 AND container = $2 AND name = $3) IS NOT DISTINCT FROM $31::text
	AND ` + plainNowSQL + ` AS ok),
up AS (` + upsertSQL(blobColCount+5) + ` RETURNING 1),
staged AS (DELETE FROM blocks WHERE $32::bool AND account = $1 AND container = $2 AND blob = $3 RETURNING key),
gc AS (INSERT INTO gc_queue (key, due_at, is_intent)
	SELECT DISTINCT key, $30::timestamptz, FALSE FROM staged WHERE key <> ALL($33::text[])
	ON CONFLICT (key) DO UPDATE SET due_at = excluded.due_at, is_intent = FALSE)
SELECT CASE WHEN chk.ok THEN 0 ELSE ('` + markStale + ` ' || chk.ok::text)::int END FROM chk`

// commitReplaceBareSQL is CommitReplace's statement for a light write
// (see commitReplaceLightSQL) where LockForReplace saw no staged block of
// the name, or that keeps them (DropStaged false; Set Blob Metadata and
// Set Blob Properties, which keep them, take commitAttrsSQL): the row's
// upsert alone, one table written. Executor start-up and finish
// of commitReplaceLightSQL's blocks DELETE and gc_queue INSERT ... ON
// CONFLICT (their relations and indexes locked and opened, their nodes
// set up) cost about as much when they touch no row as when they do. The
// ETag check is the upsert's own: ON CONFLICT ... DO UPDATE ... WHERE
// updates the row only when its ETag is the one LockForReplace read, and
// inserts only when there was none; a row that appeared or changed while
// the lock was awaited is neither, so the upsert returns no row and the
// statement fails (stale: the transaction is retried, and the retry frees
// that row's keys). A block staged while the lock was awaited (Put Block
// takes the name's lock, so none can be staged once this statement runs)
// is invisible to LockForReplace's snapshot: with the blocks to drop, the
// statement fails stale when the name has any, and the retry sees them
// and drops them with commitReplaceLightSQL. ($1..$29 the row's values;
// $30 the ETag LockForReplace read or NULL, $31 whether the staged blocks
// are dropped, $32 the row's extents_keys.) The error's text names u.n, so that the planner cannot
// fold it into a constant (and raise it while planning).
var commitReplaceBareSQL = `WITH up AS (` + upsertSQL(blobColCount+3) + `
	WHERE blobs.etag IS NOT DISTINCT FROM $30::text RETURNING 1)
SELECT CASE WHEN u.n = 1 AND NOT ($31::bool AND EXISTS (SELECT 1 FROM blocks WHERE account = $1 AND container = $2 AND blob = $3))
	AND ` + plainNowSQL + ` THEN 0 ELSE ('` + markStale + ` ' || u.n)::int END
FROM (SELECT count(*)::int AS n FROM up) AS u`

// commitAttrsSQL is CommitReplace's statement for a write with Attrs
// (plain Set Blob Metadata, Set Blob Properties): the UPDATE of the
// columns they change (sqlq.SetBlobAttrs, $1..$19), the extents, a small
// blob's bytes stored out of line by TOAST, and extents_keys left as they
// are, so their TOAST chunks are not written again. The row is locked
// (LockForReplace), so it can no longer change; its ETag is checked all
// the same ($20, the one LockForReplace read) and a row that is not the
// one read fails the statement stale, as commitReplaceBareSQL does.
var commitAttrsSQL = `WITH up AS (` + sqlq.SetBlobAttrs(dialect.Placeholder) + ` AND etag = $20 RETURNING 1)
SELECT CASE WHEN u.n = 1 AND ` + plainNowSQL + ` THEN 0 ELSE ('` + markStale + ` ' || u.n)::int END
FROM (SELECT count(*)::int AS n FROM up) AS u`

// plainNowSQL is true when account $1 still writes plain (no versioning,
// no blob soft delete: AccountSettings.PlainWrites), read with the
// snapshot of the statement it is in. CommitReplace writes plain only (a
// write in an account that is not goes the generic way), as decided on
// the settings LockForReplace read; but that statement's snapshot was
// taken before its lock waits, so a Set Blob Service Properties or
// versioning change that committed while the locks were awaited is not
// in it, and a writer that took the name after that change and whose row
// this write replaces would lose the content versioning or soft delete
// must keep. Each of CommitReplace's statements, whose snapshot is taken
// under the locks, so fails stale unless the account still writes plain:
// the transaction runs again, and LockForReplace then reads the settings
// as they are. (The one-round-trip Put Blob checks the same in
// oneTripStagedSQL.)
const plainNowSQL = `NOT EXISTS (SELECT 1 FROM account_settings WHERE account = $1 AND (versioning <> 0 OR delete_retention_days <> 0))`

// errStale is CommitReplace's error when a row of the name appeared that
// LockForReplace's snapshot could not see: Update runs the transaction
// again (retryable).
var errStale = errors.New("leasedb/postgres: the name changed while its lock was awaited")

// CommitReplace implements leasedb.BlobWriteLocker: the write and COMMIT
// in one round trip (a pgx batch). The transaction is then over; run
// sends no COMMIT of its own (tx.committed).
func (t *tx) CommitReplace(ctx context.Context, w leasedb.ReplaceWrite) error {
	b := w.Row
	rp := t.replacing
	if rp == nil || rp.ref != (leasedb.BlobRef{Account: b.Account, Container: b.Container, Name: b.Name}) {
		return fmt.Errorf("leasedb/postgres: commit replace %s/%s/%s: LockForReplace did not lock it", b.Account, b.Container, b.Name)
	}
	if err := checkText(b.Account, b.Container, b.Name); err != nil {
		return err
	}
	if err := checkText(w.Intents...); err != nil {
		return err
	}
	if err := checkText(w.Free...); err != nil {
		return err
	}
	a := &commitArgs{freeDue: w.FreeDue, stagedDue: w.StagedDue}
	if err := a.setRow(b); err != nil {
		return err
	}
	sql, args := commitReplaceSQL, a.vals[:]
	keys := extentsKeys(b.Extents) // each statement's last parameter (upsertSQL)
	switch {
	case w.Attrs:
		if err := w.AttrsErr(); err != nil {
			return err
		}
		a.setAttrs(&rp.etag)
		sql, args = commitAttrsSQL, a.vals[:commitAttrsArgs]
	case len(w.Intents) == 0 && len(w.Free) == 0 && (!w.DropStaged || !rp.staged):
		a.vals[blobColCount], a.vals[blobColCount+1] = nullTextArg{&rp.etag}, w.DropStaged // NULL: the name had no row
		a.vals[blobColCount+2] = keys
		sql, args = commitReplaceBareSQL, a.vals[:blobColCount+3]
	case len(w.Intents) == 0 && len(w.Free) == 0:
		// commitReplaceLightSQL's own arguments after the row's.
		a.vals[blobColCount], a.vals[blobColCount+1] = dueArg{&a.stagedDue}, nullTextArg{&rp.etag} // NULL: the name had no row
		a.vals[blobColCount+2], a.vals[blobColCount+3], a.vals[blobColCount+4] = w.DropStaged, b.Keys(), keys
		sql, args = commitReplaceLightSQL, a.vals[:blobColCount+5]
	default:
		// The arrays are never NULL (cardinality($30) counts the intents).
		a.vals[blobColCount], a.vals[blobColCount+1] = nonNil(w.Intents), nonNil(w.Free)
		a.vals[blobColCount+2], a.vals[blobColCount+3] = dueArg{&a.freeDue}, dueArg{&a.stagedDue}
		a.vals[blobColCount+4] = nullTextArg{&rp.etag} // NULL: the name had no row
		a.vals[blobColCount+5], a.vals[blobColCount+6], a.vals[blobColCount+7] = rp.noNameRows, w.DropStaged, b.Keys()
		a.vals[blobColCount+8] = keys
	}
	// Detached from ctx as run's COMMIT is (lazyTx.commitPair).
	werr, cerr, rolledBack := t.tx.commitPair(ctx, sql, args)
	if werr == nil && cerr == nil && !rolledBack {
		// Committed (the error's text is built only when there is one).
		t.committed = true
		return nil
	}
	what := fmt.Sprintf("leasedb/postgres: commit replace %s/%s/%s", b.Account, b.Container, b.Name)
	var pgErr *pgconn.PgError
	switch {
	case errors.As(werr, &pgErr) && strings.Contains(pgErr.Message, markStale):
		return fmt.Errorf("%s: %w", what, errStale)
	case errors.As(werr, &pgErr) && strings.Contains(pgErr.Message, markIntentLost):
		return fmt.Errorf("%s: %w", what, leasedb.ErrIntentLost)
	case errors.As(werr, &pgErr) && pgErr.Code == codeForeignKeyViolation:
		return fmt.Errorf("%s: container: %w", what, leasedb.ErrNotFound)
	}
	return commitPairError(what, werr, cerr)
}

// commitPairError words the failure of a write sent with COMMIT in one
// round trip (lazyTx.commitPair): the write's (werr), COMMIT's (cerr), or
// COMMIT answered ROLLBACK (both nil). A write the server refused, or one
// that never left, failed (COMMIT, after it, was skipped); one sent on a
// connection that then failed, and a COMMIT not certainly refused, leave
// the outcome unknown.
func commitPairError(what string, werr, cerr error) error {
	var pgErr *pgconn.PgError
	switch {
	case werr != nil && (errors.As(werr, &pgErr) || pgconn.SafeToRetry(werr)):
		return fmt.Errorf("%s: %w", what, werr)
	case werr != nil:
		return fmt.Errorf("%s: %w: %w: %w", what, leasedb.ErrUnavailable, leasedb.ErrCommitUnknown, werr)
	case cerr != nil && commitRefused(cerr):
		return fmt.Errorf("%s: commit: %w", what, cerr)
	case cerr != nil:
		return fmt.Errorf("%s: commit: %w: %w: %w", what, leasedb.ErrUnavailable, leasedb.ErrCommitUnknown, cerr)
	}
	return fmt.Errorf("%s: commit: %w", what, pgx.ErrTxCommitRollback)
}
