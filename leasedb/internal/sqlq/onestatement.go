package sqlq

import (
	"strings"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

// OneBlob builds the one-statement read of a blob row with its container
// check (Store.ReadBlob, Tx.LockBlob): exactly one row of BlobCols (all
// NULL when the blob is absent), then whether the row was found, whether
// the container exists, then extra (say the clock) evaluated after the
// blob row was read. from is where the blob row comes from: "blobs" for a
// plain read, or the name of a CTE the caller defines before the query
// (with says how, "" for none); the query reads it LEFT JOINed to a
// one-row table, so it always returns one row.
func OneBlob(placeholder func(n int) string, with, from, extra string) string {
	p1, p2, p3 := placeholder(1), placeholder(2), placeholder(3)
	where := ""
	if from == "blobs" {
		where = ` AND b.account = ` + p1 + ` AND b.container = ` + p2 + ` AND b.name = ` + p3
	}
	cols := strings.Fields(strings.ReplaceAll(BlobCols, ",", " "))
	for i, c := range cols {
		cols[i] = "b." + c
	}
	q := with + `SELECT ` + strings.Join(cols, ", ") + `, b.name IS NOT NULL,
	EXISTS (SELECT 1 FROM containers WHERE account = ` + p1 + ` AND name = ` + p2 + `)`
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
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, false, err
		}
		return nil, false, errNoRow
	}
	var found, containerExists bool
	dest := make([]any, 0, blobColCount+2+len(extra))
	for range blobColCount {
		dest = append(dest, skip())
	}
	dest = append(dest, &found, &containerExists)
	dest = append(dest, extra...)
	if err := rows.Scan(dest...); err != nil {
		return nil, false, err
	}
	if !found {
		return nil, containerExists, rows.Err()
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
