package sqlq

import (
	"database/sql"
	"strings"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

// OneBlob builds the one-statement read of a blob row with its container
// check (Store.ReadBlob): exactly one row of BlobCols (all NULL when the
// blob is absent), then whether the row was found, whether the container
// exists (true when the row was found), then extra (say the clock) evaluated after the
// blob row was read. from is where the blob row comes from: "blobs" for a
// plain read, or the name of a CTE the caller defines before the query
// (with says how, "" for none); the query reads it LEFT JOINed to a
// one-row table, so it always returns one row.
func OneBlob(placeholder func(n int) string, with, from, extra string) string {
	return oneRow(placeholder, BlobCols, with, from, extra)
}

// BlobHeadCols are the columns of a blob row a lease action reads
// (leasedb.BlobHead): neither the extents nor anything else a lease rule
// does not use. The extents of a small blob hold its bytes (in base64):
// on Postgres a TOASTed value every read would detoast and send.
const BlobHeadCols = `etag, last_modified, tags, lease_id, lease_state, lease_duration, lease_expires, lease_break_at, lease_since`

// OneBlobHead is OneBlob with BlobHeadCols for BlobCols (Tx.LockBlob):
// from must have the name column too.
func OneBlobHead(placeholder func(n int) string, with, from, extra string) string {
	return oneRow(placeholder, BlobHeadCols, with, from, extra)
}

// BlobTierCols are the columns of a blob row Set Blob Tags and Set Blob
// Tier read (leasedb.BlobTierHead): BlobHeadCols, then what Set Blob
// Tier's rule reads, the type, size and access tier. Never the extents.
const BlobTierCols = BlobHeadCols + `, blob_type, size, access_tier`

// OneBlobTierHead is OneBlobHead with BlobTierCols (Tx.LockBlobTier).
func OneBlobTierHead(placeholder func(n int) string, with, from, extra string) string {
	return oneRow(placeholder, BlobTierCols, with, from, extra)
}

// oneRow is OneBlob reading cols of the blob row.
func oneRow(placeholder func(n int) string, blobCols, with, from, extra string) string {
	p1, p2, p3 := placeholder(1), placeholder(2), placeholder(3)
	where := ""
	if from == "blobs" {
		where = ` AND b.account = ` + p1 + ` AND b.container = ` + p2 + ` AND b.name = ` + p3
	}
	cols := strings.Fields(strings.ReplaceAll(blobCols, ",", " "))
	for i, c := range cols {
		cols[i] = "b." + c
	}
	// A blob row never outlives its container (foreign key): the
	// container is looked up only when the row is absent (OR evaluates
	// its operands in order and stops at the first true one).
	q := with + `SELECT ` + strings.Join(cols, ", ") + `, b.name IS NOT NULL,
	b.name IS NOT NULL OR EXISTS (SELECT 1 FROM containers WHERE account = ` + p1 + ` AND name = ` + p2 + `)`
	if extra != "" {
		q += `, ` + extra
	}
	return q + ` FROM (SELECT 1 AS one_) AS one_ LEFT JOIN ` + from + ` AS b ON TRUE` + where
}

// ScanOneBlob reads the row of OneBlob: the blob (nil when absent), the
// container check, and the extra columns into extra. skip returns a scan
// destination that accepts and drops any value, NULL included (pgx: nil;
// database/sql: a new *any).
func ScanOneBlob[T any](rows Rows, fromTime func(T) time.Time, skip func() any, extra ...any) (*leasedb.Blob, bool, error) {
	found, containerExists, err := scanOneRow(rows, blobColCount, skip, extra)
	if err != nil || !found {
		return nil, containerExists, err
	}
	// The same row again, through the one blob row decoder, with the
	// trailing columns dropped (both drivers let a row be scanned twice).
	bs, err := ScanBlobs(&sameRow{Rows: rows}, fromTime, func(*leasedb.Blob) []any {
		tail := make([]any, 2+len(extra))
		for i := range tail {
			tail[i] = skip()
		}
		return tail
	})
	if err != nil {
		return nil, false, err
	}
	return bs[0], containerExists, nil
}

// blobHeadRow holds one row of BlobHeadCols as scanned.
type blobHeadRow[T any] struct {
	h                   leasedb.BlobHead
	lm, exp, brk, since T
	tags                sql.NullString
}

func (r *blobHeadRow[T]) dest() []any {
	h := &r.h
	return []any{&h.ETag, &r.lm, &r.tags, &h.Lease.ID, &h.Lease.State, &h.Lease.Duration, &r.exp, &r.brk, &r.since}
}

func (r *blobHeadRow[T]) decode(ref leasedb.BlobRef, fromTime func(T) time.Time) (*leasedb.BlobHead, error) {
	h := &r.h
	h.Ref = ref
	var err error
	if h.Tags, err = DecodeTags(r.tags); err != nil {
		return nil, err
	}
	h.LastModified = fromTime(r.lm)
	h.Lease.Expires, h.Lease.BreakAt, h.Lease.Since = fromTime(r.exp), fromTime(r.brk), fromTime(r.since)
	return h, nil
}

// blobHeadColCount is the number of columns of BlobHeadCols.
const blobHeadColCount = 9

// ScanBlobHead reads the first row of BlobHeadCols, the head of ref's
// row (nil when there is none).
func ScanBlobHead[T any](rows Rows, ref leasedb.BlobRef, fromTime func(T) time.Time) (*leasedb.BlobHead, error) {
	return scanHead[T, leasedb.BlobHead](rows, &blobHeadRow[T]{}, ref, fromTime)
}

// headRow is a row of the head's columns as scanned (blobHeadRow,
// blobTierRow): its scan destinations and what they decode to.
type headRow[T, H any] interface {
	dest() []any
	decode(ref leasedb.BlobRef, fromTime func(T) time.Time) (*H, error)
}

// scanHead reads the first row of rows into r (nil when there is none).
func scanHead[T, H any](rows Rows, r headRow[T, H], ref leasedb.BlobRef, fromTime func(T) time.Time) (*H, error) {
	if !rows.Next() {
		return nil, rows.Err()
	}
	if err := rows.Scan(r.dest()...); err != nil {
		return nil, err
	}
	return r.decode(ref, fromTime)
}

// scanOneHead reads the row of a oneRow statement of n blob columns into
// r (nil when the blob is absent), the container check, and extra.
func scanOneHead[T, H any](rows Rows, n int, r headRow[T, H], ref leasedb.BlobRef, fromTime func(T) time.Time, skip func() any, extra []any) (*H, bool, error) {
	found, containerExists, err := scanOneRow(rows, n, skip, extra)
	if err != nil || !found {
		return nil, containerExists, err
	}
	// The same row again into the head (both drivers let a row be
	// scanned twice), the trailing columns dropped.
	dest := r.dest()
	for range 2 + len(extra) {
		dest = append(dest, skip())
	}
	if err := rows.Scan(dest...); err != nil {
		return nil, false, err
	}
	h, err := r.decode(ref, fromTime)
	return h, containerExists, err
}

// ScanOneBlobHead is ScanOneBlob for the row of OneBlobHead: the head of
// ref's row (nil when absent).
func ScanOneBlobHead[T any](rows Rows, ref leasedb.BlobRef, fromTime func(T) time.Time, skip func() any, extra ...any) (*leasedb.BlobHead, bool, error) {
	return scanOneHead[T, leasedb.BlobHead](rows, blobHeadColCount, &blobHeadRow[T]{}, ref, fromTime, skip, extra)
}

// blobTierRow holds one row of BlobTierCols as scanned.
type blobTierRow[T any] struct {
	head blobHeadRow[T]
	typ  string
	size int64
	tier sql.NullString
}

func (r *blobTierRow[T]) dest() []any {
	return append(r.head.dest(), &r.typ, &r.size, &r.tier)
}

func (r *blobTierRow[T]) decode(ref leasedb.BlobRef, fromTime func(T) time.Time) (*leasedb.BlobTierHead, error) {
	h, err := r.head.decode(ref, fromTime)
	if err != nil {
		return nil, err
	}
	return &leasedb.BlobTierHead{BlobHead: *h, Type: r.typ, Size: r.size, AccessTier: r.tier.String}, nil
}

// blobTierColCount is the number of columns of BlobTierCols.
const blobTierColCount = blobHeadColCount + 3

// ScanBlobTierHead reads the first row of BlobTierCols, the head of
// ref's row (nil when there is none).
func ScanBlobTierHead[T any](rows Rows, ref leasedb.BlobRef, fromTime func(T) time.Time) (*leasedb.BlobTierHead, error) {
	return scanHead[T, leasedb.BlobTierHead](rows, &blobTierRow[T]{}, ref, fromTime)
}

// ScanOneBlobTierHead is ScanOneBlobHead for the row of OneBlobTierHead.
func ScanOneBlobTierHead[T any](rows Rows, ref leasedb.BlobRef, fromTime func(T) time.Time, skip func() any, extra ...any) (*leasedb.BlobTierHead, bool, error) {
	return scanOneHead[T, leasedb.BlobTierHead](rows, blobTierColCount, &blobTierRow[T]{}, ref, fromTime, skip, extra)
}

// scanOneRow scans the row of a oneRow statement whose blob row has n
// columns (dropped) for whether the row was found, whether the container
// exists, and extra.
func scanOneRow(rows Rows, n int, skip func() any, extra []any) (found, containerExists bool, err error) {
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return false, false, err
		}
		return false, false, errNoRow
	}
	dest := make([]any, 0, n+2+len(extra))
	for range n {
		dest = append(dest, skip())
	}
	dest = append(dest, &found, &containerExists)
	dest = append(dest, extra...)
	if err := rows.Scan(dest...); err != nil {
		return false, false, err
	}
	if !found {
		return false, containerExists, rows.Err()
	}
	return true, containerExists, nil
}

// sameRow is rows positioned on their current row, offered once more.
type sameRow struct {
	Rows
	done bool
}

func (r *sameRow) Next() bool {
	if r.done {
		return false
	}
	r.done = true
	return true
}

type noRowError struct{}

func (noRowError) Error() string { return "sqlq: the one-row query returned no row" }

var errNoRow error = noRowError{}
