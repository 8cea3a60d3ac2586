package sqlite

import "strings"

// Result columns the driver reads no Go string for.
//
// modernc.org/sqlite reads the name and the declared type of every result
// column of every query as Go strings (its newRows), whether or not anyone
// asks for them: for the blob row's 29 columns that was two allocations a
// column, a quarter of a small Put Blob's. Nothing in this package reads
// a result column by name or type (database/sql scans by position, and
// the driver converts a value by its declared type only for DATE,
// DATETIME and TIMESTAMP, which no table here declares). So the hot reads
// name their columns quietly: a name of one byte costs no allocation (Go
// takes a one-byte string from a static table), and an expression has no
// declared type. "+col AS a" is such an expression with the column's value
// unchanged: unary + is SQLite's no-op operator, compiled to nothing.

// quiet rewrites a comma-separated list of column names (sqlq.BlobCols,
// say) into result columns named and typed as above, in the same order.
func quiet(cols string) string {
	parts := strings.Split(cols, ",")
	for i, c := range parts {
		parts[i] = "+" + strings.TrimSpace(c) + " AS " + quietName(i)
	}
	return strings.Join(parts, ", ")
}

// quietName is the one-byte name of the i-th result column: a letter
// while there are letters; names need not be distinct.
func quietName(i int) string {
	switch {
	case i < 26:
		return string(rune('a' + i))
	case i < 52:
		return string(rune('A' + i - 26))
	}
	return "_"
}
