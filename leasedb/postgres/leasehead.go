package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

// A lease action's two round trips: LockBlob (BEGIN with it) reads the
// row's head locked, CommitBlobLease writes the lease columns with
// COMMIT.

var (
	_ leasedb.BlobLocker         = (*tx)(nil)
	_ leasedb.BlobLeaseCommitter = (*tx)(nil)
)

// lockBlobSQL is LockBlob's statement ($4 containerLockKey): the
// container's advisory lock shared, as LockForReplace and LockBlobTier
// take it (a pseudo-constant qualifier, run once before the scan and so
// before the row lock), then the head of the row (sqlq.BlobHeadCols),
// never its extents, which a small blob's TOASTed bytes are in. Without
// the container's lock a container soft delete, which copies the
// container's rows without locking them once it holds the container
// exclusive, could copy a row as it was before a lease change it then
// let commit and be acknowledged (TestTagsTierHoldContainer). The row is
// locked in a MATERIALIZED CTE, so the outer SELECT (and
// clock_timestamp() in it) runs only once the locks are granted: a clock
// read in the locking SELECT's own output list could be read before a
// wait on the lock and come out stale. At READ COMMITTED a row changed by
// the transaction that held the lock is re-read (its newest version, or
// none when it was deleted or moved).
var lockBlobSQL = sqlq.OneBlobHead(dialect.Placeholder, lockedHeadCTE(sqlq.BlobHeadCols), "locked", "clock_timestamp()")

// lockedHeadCTE is the WITH clause of lockBlobSQL and lockBlobTierSQL:
// cols of the row a/c/name ($1..$3) FOR UPDATE as locked, once the
// container's advisory lock ($4) is held shared.
func lockedHeadCTE(cols string) string {
	return `WITH locked AS MATERIALIZED (SELECT name, ` + cols + ` FROM blobs
	WHERE account = $1 AND container = $2 AND name = $3 AND (SELECT pg_advisory_xact_lock_shared($4)::text) IS NOT NULL FOR UPDATE) `
}

// commitBlobLeaseSQL is CommitBlobLease's write: one row back when the
// row was there.
var commitBlobLeaseSQL = sqlq.SetBlobLease(dialect.Placeholder) + ` RETURNING 1`

// LockBlob implements leasedb.BlobLocker: the container held shared, the
// row's head FOR UPDATE, the container check and the clock in one
// statement, without the advisory name lock Blob takes with
// LockExclusive (an absent row is not locked).
func (t *tx) LockBlob(ctx context.Context, account, container, name string) (*leasedb.BlobHead, bool, time.Time, error) {
	return lockHead(ctx, t, lockBlobSQL, scanOneBlobHead, account, container, name,
		[]any{account, container, name, containerLockKey(account, container)})
}

// lockHead runs q, a statement that locks and reads the head of the row
// account/container/name, the container check and the clock (LockBlob,
// LockBlobTier), with args (the name first), and reads its row with
// scan.
func lockHead[H any](ctx context.Context, t *tx, q string, scan func(pgx.Rows, leasedb.BlobRef, ...*time.Time) (*H, bool, error),
	account, container, name string, args []any) (*H, bool, time.Time, error) {
	if err := checkText(account, container, name); err != nil {
		return nil, false, time.Time{}, err
	}
	ref := leasedb.BlobRef{Account: account, Container: container, Name: name}
	if t.readOnly {
		return nil, false, time.Time{}, fmt.Errorf("leasedb/postgres: lock blob %s: read-only transaction", ref)
	}
	// The transaction's first statement: BEGIN goes with it in one
	// round trip.
	var (
		h  *H
		ok bool
	)
	// The clock is scanned into the transaction (already on the heap):
	// a local's address handed to scan, a function value, would move
	// the local there.
	err := t.tx.queryBegin(ctx, func(rows pgx.Rows) error {
		var err error
		if h, ok, err = scan(rows, ref, &t.headClock); err != nil {
			return err
		}
		rows.Close()
		return rows.Err()
	}, q, args...)
	if err != nil {
		return nil, false, time.Time{}, fmt.Errorf("leasedb/postgres: lock blob %s: %w", ref, sqlq.CtxErr(ctx, err))
	}
	if h != nil {
		t.leasing = ref
	}
	// The clock of the transaction is read once, after its first lock.
	if t.now.IsZero() {
		t.now = t.headClock.Add(t.offset).UTC().Truncate(time.Microsecond)
	}
	return h, ok, t.now, nil
}

// CommitBlobLease implements leasedb.BlobLeaseCommitter: the UPDATE of
// the lease columns and COMMIT in one round trip (lazyTx.commitPair,
// detached from ctx as run's COMMIT is). A refused UPDATE makes the
// server skip COMMIT, and run rolls the transaction back; a connection
// lost once the pair was sent leaves the outcome unknown.
func (t *tx) CommitBlobLease(ctx context.Context, ref leasedb.BlobRef, l leasedb.Lease) error {
	if err := checkText(ref.Account, ref.Container, ref.Name, l.ID); err != nil {
		return err
	}
	return t.commitHead(ctx, "lease", ref, commitBlobLeaseSQL, []any{ref.Account, ref.Container, ref.Name,
		l.ID, l.State, l.Duration, driver.ToTime(l.Expires), driver.ToTime(l.BreakAt), driver.ToTime(l.Since)})
}

// commitHead sends sql, a write of the row LockBlob or LockBlobTier
// locked (its statement returns one row), with COMMIT in one round trip
// (lazyTx.commitPair); what names the write in errors.
func (t *tx) commitHead(ctx context.Context, what string, ref leasedb.BlobRef, sql string, args []any) error {
	if t.leasing != ref {
		return fmt.Errorf("leasedb/postgres: commit %s of %s: no LockBlob of the transaction locked it", what, ref)
	}
	werr, cerr, rolledBack := t.tx.commitPair(ctx, sql, args)
	if werr == nil && cerr == nil && !rolledBack {
		t.committed = true // the error's text is built only when there is one
		return nil
	}
	return commitHeadError(what, ref, werr, cerr)
}

// commitHeadError words commitHead's failure (commitPairError).
func commitHeadError(what string, ref leasedb.BlobRef, werr, cerr error) error {
	msg := "leasedb/postgres: commit " + what + " of " + ref.String()
	if errors.Is(werr, pgx.ErrNoRows) {
		// The row LockBlob locked is gone: it cannot be, as no one
		// else may delete it before this transaction ends.
		return fmt.Errorf("%s: %w", msg, leasedb.ErrNotFound)
	}
	return commitPairError(msg, werr, cerr)
}

// scanOneBlobHead is sqlq.ScanOneBlobHead for the row of lockBlobSQL,
// decoded from the column bytes as received, as scanOneBlob decodes a
// whole row (a column in another form sends the row through
// sqlq.ScanOneBlobHead). extra are *time.Time destinations.
func scanOneBlobHead(rows pgx.Rows, ref leasedb.BlobRef, extra ...*time.Time) (*leasedb.BlobHead, bool, error) {
	if !rows.Next() {
		return sqlq.ScanOneBlobHead(rows, ref, fromTS, skipColumn, timeDest(extra)...)
	}
	generic := func() (*leasedb.BlobHead, bool, error) {
		return sqlq.ScanOneBlobHead(&positioned{Rows: rows}, ref, fromTS, skipColumn, timeDest(extra)...)
	}
	r, found, containerExists := rawOneRow(rows, blobHeadColCount, extra)
	switch {
	case !r.ok:
		return generic()
	case !found:
		return nil, containerExists, nil
	}
	hd, tags := rawHead(&r, ref)
	if !r.ok {
		return generic()
	}
	h := &hd
	var err error
	if h.Tags, err = sqlq.DecodeTags(tags); err != nil {
		return nil, false, err
	}
	return h, containerExists, nil
}

// timeDest is extra as scan destinations.
func timeDest(extra []*time.Time) []any {
	d := make([]any, len(extra))
	for i, e := range extra {
		d[i] = e
	}
	return d
}

// rawOneRow is the current row of a sqlq oneRow statement (n blob
// columns, the two checks, then the clocks extra) as received: whether
// the blob was found and whether its container exists, and extra
// decoded. r.ok is false when the row is in a form not decoded here.
func rawOneRow(rows pgx.Rows, n int, extra []*time.Time) (r rawRow, found, containerExists bool) {
	r = rawRow{fds: rows.FieldDescriptions(), raw: rows.RawValues(), ok: true}
	if len(r.fds) != len(r.raw) || len(r.raw) != n+2+len(extra) {
		r.ok = false
		return r, false, false
	}
	found, containerExists = r.bool(n), r.bool(n+1)
	for i, e := range extra {
		*e = r.time(n + 2 + i)
	}
	return r, found, containerExists
}

// rawHead is the head of ref's row from r's first columns
// (sqlq.BlobHeadCols), its tags left in their column's text.
func rawHead(r *rawRow, ref leasedb.BlobRef) (leasedb.BlobHead, sql.NullString) {
	return leasedb.BlobHead{Ref: ref, ETag: r.text(0), LastModified: r.time(1),
		Lease: leasedb.Lease{ID: r.text(3), State: r.text(4), Duration: int(r.int(5)),
			Expires: r.time(6), BreakAt: r.time(7), Since: r.time(8)}}, r.nullText(2)
}

// blobHeadColCount is the number of columns of sqlq.BlobHeadCols.
const blobHeadColCount = 9
