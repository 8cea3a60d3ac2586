package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

// The one-round-trip Put Blob (leasedb.OneTripPutter). The few-statement
// Put Blob (fastput.go) is two round trips: BEGIN with LockForReplace,
// then Go decides (checkPutBlob) and sends CommitReplace's write with
// COMMIT. For the common small conditional Put Blob this path sends, in
// one network write, BEGIN, oneTripSQL (the same locks in the same order
// as lockForReplaceSQL, the request's lease id and conditions evaluated in
// SQL, and the row's upsert), oneTripStagedSQL (a check with a snapshot of
// its own) and COMMIT.
//
// What it covers, all of which must hold (else it writes nothing, its
// empty transaction commits, and the few-statement path runs in a new
// transaction of the same tx and gives the exact answer, 412, 409, a lease
// code, ContainerNotFound or the write; except where the statement held
// a present, plain row that is not a version nor a copy's destination:
// then leasedb applies checkPutBlob to that row, as the few-statement
// path would, and a refusal, the 412 of a failed If-Match say, is the
// answer in this one round trip, leasedb.OneTripHeld):
//   - the request (leasedb.OneTripCovers): a Put Blob of a block blob whose
//     body is inline (every extent without a key), no x-ms-lease-action,
//     not a copy, no x-ms-if-tags, at most one ETag in If-Match (not "")
//     and in If-None-Match; If-Modified-Since and If-Unmodified-Since at
//     whole microseconds (an HTTP date always is) and not 0001-01-01 (the
//     zero time, which would be sent as no condition);
//   - the account: writes plain (no versioning, no blob soft delete), as
//     read by lockForReplaceSQL, with the statement's snapshot;
//   - the container exists (checked as lockForReplaceSQL checks it);
//   - the name has no staged blocks (Put Blob would drop them);
//   - the row, read FOR UPDATE, is absent or inline (extents_keys false:
//     the write frees nothing, so the name's other rows and shares do not
//     matter), not a version, not a copy's destination (copy_info empty),
//     and the request is not create-only over it;
//   - the lease: no x-ms-lease-id and a row absent or with no lease
//     (lease state "" or available; kept as it is), or an x-ms-lease-id
//     byte-equal to the row's leased, unexpired lease (kept as it is);
//   - the conditions certainly pass: If-Match "*" or the row's ETag (the
//     row present); If-None-Match absent, or an ETag other than the
//     row's (or the row absent); If-Modified-Since / If-Unmodified-Since
//     against the row's Last-Modified at second precision (ignored over
//     an absent row), as leasedb.EvalWrite compares them.
//
// Only then does the statement write, and what it writes is what the
// few-statement path writes for the same request: putBlobRow's row over
// no blob with the ETag from etag_seq (formatETag's form), Last-Modified
// the clock read after the locks (plus the store's clock offset), the
// creation time and lease of the row it replaces, extents_keys false, by
// the upsert's own ON CONFLICT clause (the same columns: the same
// HOT-friendly update).
//
// Stale reads: the statement's snapshot is taken before it waits on the
// advisory locks. The row is read FOR UPDATE (its newest version, as in
// lockForReplaceSQL) and the container under FOR KEY SHARE when the row is
// absent. A row inserted while the name's lock was awaited is invisible
// to the snapshot: the insert then meets it in ON CONFLICT, whose WHERE
// (the ETag the statement read, none) refuses to update it, so nothing is
// written and the fallback decides on the real row. A block staged while
// the lock was awaited is invisible too: oneTripStagedSQL, a statement of
// its own and so with a snapshot taken under the locks, fails the
// transaction (stale, so Update runs it again) when the write happened
// and the name has staged blocks; the run again sees them and leaves the
// request to the fallback.
//
// The batch is bounded by commitTimeout, as CommitReplace's COMMIT is,
// and by ctx, as LockForReplace's wait for the locks is: the gateway's
// commit context is detached from the client (a client gone never ends
// it) and ends only at its deadline, which bounds the batch as a deadline
// on the connection; a context without a deadline is watched. A batch
// ctx ends once sent has its connection closed and its outcome unknown.
// Its outcomes: committed with the write; committed empty (fallback); a
// statement refused (nothing committed: a serialization failure or
// deadlock retried by Update, stale retried, the rest returned); COMMIT
// refused (nothing committed); the connection lost once the batch may
// have left (leasedb.ErrCommitUnknown).

var _ leasedb.OneTripPutter = (*tx)(nil)

// oneTripRowCols are what oneTripSQL reads of the row it locks: never the
// extents (a small blob's bytes, stored out of line).
const oneTripRowCols = `name, etag, created, last_modified, lease_id, lease_state, lease_duration, lease_expires,
	lease_break_at, lease_since, extents_keys, version_id, copy_info`

// Parameters of oneTripSQL after the row's ($1..$3 the name, $4
// nameLockKey, $5 containerLockKey, then the row's columns that are not
// the store's to set from $6, oneTripRowArgs of them).
const (
	oneTripRowArgs = blobColCount - 3 - 3 - 6 // not the name, ETag, times or lease
	otLeaseID      = 6 + oneTripRowArgs + iota - 1
	otCreateOnly
	otIfMatch     // NULL: none; "*" or the quoted ETag
	otIfNoneMatch // NULL: none; "*" or the quoted ETag
	otIMS         // NULL: none
	otIUS         // NULL: none
	otOffset      // the store's clock offset in microseconds
	otLockTimeout // lock_timeout for the statement's lock waits, in milliseconds
	oneTripArgs   = otLockTimeout
)

// codeLockNotAvailable is lock_timeout's error.
const codeLockNotAvailable = "55P03"

// oneTripSet is the row's columns oneTripSQL sets itself, by their name
// in sqlq.BlobCols, with the expression of each (s: the locked state).
var oneTripSet = map[string]string{
	"etag":    `'"0x' || upper(to_hex(` + strconv.FormatInt(etagBase, 10) + ` + s.seq)) || '"'`,
	"created": `s.created`, "last_modified": `s.now`,
	"lease_id": `s.lease_id`, "lease_state": `s.lease_state`, "lease_duration": `s.lease_duration`,
	"lease_expires": `s.lease_expires`, "lease_break_at": `s.lease_break_at`, "lease_since": `s.lease_since`,
}

// blobColNames are the names of sqlq.BlobCols, in order.
var blobColNames = strings.Fields(strings.ReplaceAll(sqlq.BlobCols, ",", " "))

// oneTripParamCols are the indexes in sqlq.BlobCols of the row's columns
// that oneTripSQL takes as parameters, from $6 in this order: every
// column after the name's three that oneTripSet does not set. Derived
// once, so that a put copies its arguments without looking the columns up.
var oneTripParamCols = func() []int {
	var cols []int
	for i, c := range blobColNames {
		if i >= 3 && oneTripSet[c] == "" {
			cols = append(cols, i)
		}
	}
	if len(cols) != oneTripRowArgs || len(blobColNames) != blobColCount {
		panic("leasedb/postgres: oneTripSQL: oneTripRowArgs is not the row's parameters")
	}
	return cols
}()

// oneTripColTypes are the types of sqlq.BlobCols, for the parameters'
// casts (an INSERT ... SELECT does not type them from its columns).
var oneTripColTypes = [blobColCount]string{"text", "text", "text", "text", "text", "timestamptz", "timestamptz", "bigint",
	"text", "text", "text", "text", "text", "bytea", "text", "text", "integer",
	"text", "text", "integer", "timestamptz", "timestamptz", "timestamptz",
	"text", "text", "text", "integer", "text", "bigint"}

// oneTripSQL is the statement; see above. l locks and reads (the lock
// chain of lockForReplaceSQL, the clock in its output list, so after
// every lock), s decides (seq is the ETag's number, NULL when the
// statement does not write), up writes. It returns one row: seq, the
// clock, the creation time and lease columns written, the count written
// (1 or 0), when 1 the transaction's mark for oneTripStagedSQL, then
// held (the container found, the account's writes plain, the row present
// and not a version nor a copy's destination: where the few-statement
// path would judge the request by checkPutBlob on this very row) with the
// row's ETag and Last-Modified, so that a refused write is answered from
// the row it locked (leasedb.OneTripHeld).
var oneTripSQL = func() string {
	vals := make([]string, len(blobColNames))
	for i, c := range blobColNames {
		vals[i] = oneTripSet[c]
		if i < 3 {
			vals[i] = "$" + strconv.Itoa(i+1) + "::text"
		}
	}
	for k, i := range oneTripParamCols {
		vals[i] = "$" + strconv.Itoa(6+k) + "::" + oneTripColTypes[i]
	}
	p := func(i int) string { return "$" + strconv.Itoa(i) }
	utc := func(x string) string { return `date_trunc('second', ` + x + ` AT TIME ZONE 'UTC')` }
	decide := `l.cont AND l.plain AND NOT l.staged AND CASE WHEN NOT l.present THEN ` + p(otLeaseID) + `::text = '' AND ` + p(otIfMatch) + `::text IS NULL
	ELSE NOT ` + p(otCreateOnly) + `::bool AND l.extents_keys IS FALSE AND l.version_id = '' AND l.copy_info = ''
		AND ((` + p(otLeaseID) + ` = '' AND l.lease_state IN ('', 'available'))
			OR (` + p(otLeaseID) + ` <> '' AND l.lease_state = 'leased' AND l.lease_id = ` + p(otLeaseID) + `
				AND (l.lease_duration < 0 OR l.now < l.lease_expires)))
		AND (` + p(otIfMatch) + ` IS NULL OR ` + p(otIfMatch) + ` = '*' OR l.etag = ` + p(otIfMatch) + `)
		AND (` + p(otIfNoneMatch) + `::text IS NULL OR (` + p(otIfNoneMatch) + ` <> '*'
			AND left(l.etag, 1) = '"' AND right(l.etag, 1) = '"' AND length(l.etag) >= 2 AND l.etag <> ` + p(otIfNoneMatch) + `))
		AND (` + p(otIMS) + `::timestamptz IS NULL OR ` + utc("l.last_modified") + ` > ` + p(otIMS) + ` AT TIME ZONE 'UTC')
		AND (` + p(otIUS) + `::timestamptz IS NULL OR ` + utc("l.last_modified") + ` <= ` + p(otIUS) + ` AT TIME ZONE 'UTC')
	END`
	return `WITH l AS MATERIALIZED (SELECT b.name IS NOT NULL AS present, b.etag, b.created, b.last_modified,
	b.lease_id, b.lease_state, b.lease_duration, b.lease_expires, b.lease_break_at, b.lease_since,
	b.extents_keys, b.version_id, b.copy_info,
	c.ok IS NOT NULL AND (b.name IS NOT NULL OR ins.ok IS NOT NULL) AS cont,
	COALESCE(st.versioning, 0) = 0 AND COALESCE(st.delete_retention_days, 0) = 0 AS plain,
	EXISTS (SELECT 1 FROM blocks WHERE account = $1 AND container = $2 AND blob = $3) AS staged,
	clock_timestamp() + ` + p(otOffset) + `::bigint * interval '1 microsecond' AS now
` + lockChainWithin(p(otLockTimeout)) + `),
s AS MATERIALIZED (SELECT l.etag, l.now,
	CASE WHEN l.present THEN l.created ELSE l.now END AS created,
	COALESCE(l.lease_id, '') AS lease_id, COALESCE(l.lease_state, '') AS lease_state, COALESCE(l.lease_duration, 0) AS lease_duration,
	l.lease_expires, l.lease_break_at, l.lease_since, l.last_modified,
	COALESCE(l.cont AND l.plain AND l.present AND l.version_id = '' AND l.copy_info = '', FALSE) AS held,
	CASE WHEN ` + decide + ` THEN nextval('etag_seq') END AS seq FROM l),
up AS (INSERT INTO blobs (` + sqlq.BlobCols + `, extents_keys)
	SELECT ` + strings.Join(vals, ", ") + `, FALSE FROM s WHERE s.seq IS NOT NULL
	` + sqlq.PutBlobConflict("extents_keys") + `
	WHERE blobs.etag IS NOT DISTINCT FROM (SELECT etag FROM s) RETURNING 1),
u AS (SELECT count(*)::int AS n FROM up)
SELECT s.seq, s.now, s.created, s.lease_id, s.lease_state, s.lease_duration, s.lease_expires, s.lease_break_at, s.lease_since,
	u.n, CASE WHEN u.n = 1 THEN set_config('` + oneTripMark + `', 'w', true) END, s.held, s.etag, s.last_modified
FROM s, u`
}()

// lockChainWithin is lockChainSQL (the row oneTripRowCols, with the
// settings) whose lock waits are bounded: before the first lock it sets
// lock_timeout for the rest of the transaction to ms (a parameter), so a
// statement that cannot have its locks before the batch's deadline fails
// and its COMMIT, already sent, commits nothing (else the backend would go
// on waiting after the connection closed, and commit then).
func lockChainWithin(ms string) string {
	const first = `FROM (SELECT pg_advisory_xact_lock_shared($5)::text AS l OFFSET 0) AS ck`
	chain := lockChainSQL(oneTripRowCols, true)
	if !strings.HasPrefix(chain, first) {
		panic("leasedb/postgres: oneTripSQL: lockChainSQL does not begin with the container's lock")
	}
	return `FROM (SELECT set_config('lock_timeout', ` + ms + `::bigint::text, true) AS lt OFFSET 0) AS lt0
CROSS JOIN LATERAL (SELECT pg_advisory_xact_lock_shared($5)::text AS l WHERE lt0.lt IS NOT NULL OFFSET 0) AS ck` + chain[len(first):]
}

// oneTripMark is the setting oneTripSQL sets, for its transaction only,
// when it wrote.
const oneTripMark = "blobgw.onetrip"

// oneTripStagedSQL fails the transaction stale when oneTripSQL wrote and
// the name has staged blocks, or the account no longer writes plain
// (plainNowSQL: versioning or blob soft delete turned on), that its
// snapshot, taken before the lock waits, could not see ($1..$3 the name).
// The error's text names x.n, so that the planner cannot fold it into a
// constant.
var oneTripStagedSQL = `SELECT CASE WHEN x.n = 0 THEN 0 ELSE ('` + markStale + ` ' || x.n)::int END
FROM (SELECT count(*)::int AS n FROM ((SELECT 1 FROM blocks WHERE account = $1 AND container = $2 AND blob = $3
	AND current_setting('` + oneTripMark + `', true) = 'w' LIMIT 1)
	UNION ALL (SELECT 1 WHERE current_setting('` + oneTripMark + `', true) = 'w' AND NOT ` + plainNowSQL + `)) AS y) AS x`

// PutBlobOneTrip implements leasedb.OneTripPutter.
func (t *tx) PutBlobOneTrip(ctx context.Context, req leasedb.PutBlobRequest, b *leasedb.Blob) (bool, *leasedb.OneTripHeld, error) {
	l := t.tx
	cond := &req.Cond
	if t.readOnly || t.noOneTrip || l.begun || l.unusable() != nil || t.replacing != nil || t.offset%time.Microsecond != 0 ||
		(cond.HadIMS && !oneTripDate(cond.IfModifiedSince)) || (cond.HadIUS && !oneTripDate(cond.IfUnmodifiedSince)) {
		return false, nil, nil
	}
	pc := pairConnOf(l.conn)
	if !pc.direct {
		return false, nil, nil
	}
	if checkText(b.Account, b.Container, b.Name, req.LeaseID) != nil || checkText(cond.IfMatch...) != nil || checkText(cond.IfNoneMatch...) != nil {
		return false, nil, nil // a text Postgres cannot hold: the few-statement path answers
	}
	// The arguments and the values they point to in one allocation.
	x := &struct {
		a                commitArgs
		nameKey, contKey int64
		leaseID          string
		ifMatch, ifNone  string
		ims, ius         time.Time
		offset, lockMs   int64
		vals             [oneTripArgs]any
	}{nameKey: nameLockKey(b.Account, b.Container, b.Name), contKey: containerLockKey(b.Account, b.Container),
		leaseID: req.LeaseID, offset: t.offset.Microseconds()}
	if err := x.a.setRow(b); err != nil {
		return false, nil, err
	}
	v := &x.vals
	copy(v[:3], x.a.vals[:3])
	v[3], v[4] = int64Arg{&x.nameKey}, int64Arg{&x.contKey}
	for k, i := range oneTripParamCols {
		v[5+k] = x.a.vals[i]
	}
	if len(cond.IfMatch) == 1 {
		x.ifMatch = quoteETag(cond.IfMatch[0])
	}
	if len(cond.IfNoneMatch) == 1 && cond.IfNoneMatch[0] != "" { // "" matches nothing: no condition
		x.ifNone = quoteETag(cond.IfNoneMatch[0])
	}
	if cond.HadIMS {
		x.ims = cond.IfModifiedSince
	}
	if cond.HadIUS {
		x.ius = cond.IfUnmodifiedSince
	}
	v[otLeaseID-1], v[otCreateOnly-1] = textArg{&x.leaseID}, req.CreateOnly
	v[otIfMatch-1], v[otIfNoneMatch-1] = nullTextArg{&x.ifMatch}, nullTextArg{&x.ifNone}
	v[otIMS-1], v[otIUS-1], v[otOffset-1] = timeArg{&x.ims}, timeArg{&x.ius}, int64Arg{&x.offset}
	// Bounded by commitTimeout and ctx's deadline, a deadline on the
	// connection (the gateway's commit context has one and can end no
	// other way); a context without a deadline is watched. The server
	// gives up its lock waits a little before (lockChainWithin).
	watch, deadline := true, time.Now().Add(commitTimeout)
	if dl, ok := ctx.Deadline(); ok {
		watch = false
		if dl.Before(deadline) {
			deadline = dl
		}
	}
	wait := time.Until(deadline)
	x.lockMs = max(1, (wait - min(time.Second, wait/4)).Milliseconds())
	v[otLockTimeout-1] = int64Arg{&x.lockMs}
	q := [maxSent]pairQuery{{l.beginSQL, nil}, {oneTripSQL, v[:]}, {oneTripStagedSQL, v[:3]}, {"COMMIT", nil}}
	l.begun = true
	res := pc.send(ctx, l.tracer, watch, deadline, l.batchOf(&q, maxSent), q, maxSent)
	if res.err != nil {
		return false, nil, t.oneTripError(ctx, oneTripWhat(b), res)
	}
	if res.rolledBack {
		return false, nil, fmt.Errorf("%s: commit: %w", oneTripWhat(b), pgx.ErrTxCommitRollback)
	}
	// Committed: with the write, or empty.
	var r rawRow
	if res.rows.n == 1 && res.rows.stmt == 1 && res.rows.Next() {
		r = rawRow{fds: res.rows.fds, raw: res.rows.RawValues()}
		r.ok = len(r.fds) == 14 && len(r.raw) == 14
	}
	var (
		wrote, seq   int64
		now, created time.Time
		lease        leasedb.Lease
	)
	if r.ok {
		wrote = r.int(9)
	}
	if r.ok && wrote == 1 {
		seq, now, created = r.int(0), r.time(1), r.time(2)
		lease = r.oneTripLease()
	}
	if !r.ok {
		t.committed = true
		return false, nil, fmt.Errorf("%s: %w: its answer unread", oneTripWhat(b), leasedb.ErrCommitUnknown)
	}
	if wrote != 1 {
		// Nothing written, the empty transaction committed: tx is as
		// before, its next statement begins a new transaction.
		l.begun = false
		var held *leasedb.OneTripHeld
		if r.bool(11) {
			held = &leasedb.OneTripHeld{Now: r.time(1), Blob: &leasedb.Blob{Account: b.Account, Container: b.Container, Name: b.Name,
				ETag: r.text(12), LastModified: r.time(13), Lease: r.oneTripLease()}}
		}
		if !r.ok {
			held = nil // a column not as read: the few-statement path answers
		}
		return false, held, nil
	}
	t.committed = true
	b.ETag, b.Created, b.LastModified, b.Lease = formatETag(seq), created, now, lease
	return true, nil, nil
}

// oneTripLease is the lease columns of oneTripSQL's answer (3 to 8): the
// lease written, or the held row's.
func (r *rawRow) oneTripLease() leasedb.Lease {
	return leasedb.Lease{ID: r.text(3), State: r.text(4), Duration: int(r.int(5)), Expires: r.time(6), BreakAt: r.time(7), Since: r.time(8)}
}

// oneTripWhat names the write in its errors (built only when there is
// one).
func oneTripWhat(b *leasedb.Blob) string {
	return "leasedb/postgres: put blob " + b.Account + "/" + b.Container + "/" + b.Name
}

// oneTripError words a failed one-round-trip batch (res: BEGIN is query 0,
// oneTripSQL 1, oneTripStagedSQL 2, COMMIT 3).
func (t *tx) oneTripError(ctx context.Context, what string, res pairResult) error {
	l := t.tx
	var pgErr *pgconn.PgError
	var pe *errPrepare
	var ns *errNotSent
	switch {
	case errors.As(res.err, &pe) || errors.As(res.err, &ns):
		// Nothing was sent: as a failed BEGIN (retried when safe).
		return l.failBegin(ctx, res.err)
	case !errors.As(res.err, &pgErr):
		// The connection failed, or ctx ended it, once the batch may
		// have reached the server, COMMIT with it.
		return fmt.Errorf("%s: %w: %w: %w", what, leasedb.ErrUnavailable, leasedb.ErrCommitUnknown, sqlq.CtxErr(ctx, res.err))
	case res.failed == 0:
		return l.failBegin(ctx, res.err) // BEGIN refused (a standby)
	case res.failed == maxSent-1 && commitRefused(res.err):
		return fmt.Errorf("%s: commit: %w", what, res.err)
	case res.failed == maxSent-1:
		return fmt.Errorf("%s: commit: %w: %w: %w", what, leasedb.ErrUnavailable, leasedb.ErrCommitUnknown, res.err)
	case strings.Contains(pgErr.Message, markStale):
		return fmt.Errorf("%s: %w", what, errStale)
	case pgErr.Code == codeLockNotAvailable:
		// The locks not had by the deadline: nothing committed.
		return fmt.Errorf("%s: %w: %w", what, leasedb.ErrUnavailable, res.err)
	}
	// A statement refused, the rest skipped: nothing committed, and the
	// transaction is rolled back by run (a serialization failure or a
	// deadlock is retried there).
	return fmt.Errorf("%s: %w", what, res.err)
}

// oneTripDate reports whether an If-Modified-Since or If-Unmodified-Since
// date can be oneTripSQL's parameter: stored exactly by a timestamptz, and
// not the zero time, which timeArg sends as NULL (no condition), whereas
// an If-Unmodified-Since of 0001-01-01 fails over every blob.
func oneTripDate(t time.Time) bool { return !t.IsZero() && t.Truncate(time.Microsecond).Equal(t) }

// quoteETag is a conditional header's ETag (unquoted) in the stored
// form's quotes; "*" stays "*".
func quoteETag(v string) string {
	if v == "*" {
		return v
	}
	return `"` + v + `"`
}
