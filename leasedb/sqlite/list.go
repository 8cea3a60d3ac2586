package sqlite

import (
	"context"
	"fmt"
	"strconv"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

// dialect is SQLite's for the queries sqlq builds. Parameters are
// numbered (?NNN): sqlq does not write them in the order it binds them.
var dialect = sqlq.Dialect{Placeholder: func(n int) string { return "?" + strconv.Itoa(n) }, Strpos: "instr"}

// ListDelimited implements leasedb.Tx: one query, a recursive walk that
// seeks past each prefix (see sqlq.ListDelimited), then the entries of
// the names it found, read by key.
func (t *tx) ListDelimited(ctx context.Context, account, container, prefix, delimiter, after string, limit int, inc leasedb.ListInclude) ([]leasedb.ListItem, error) {
	if err := checkText(account, container, prefix, delimiter, after); err != nil {
		return nil, err
	}
	if limit <= 0 || delimiter == "" {
		return nil, fmt.Errorf("leasedb/sqlite: list delimited %s/%s: limit %d, delimiter %q", account, container, limit, delimiter)
	}
	q, args := sqlq.ListDelimited(dialect, account, container, prefix, delimiter, after, limit, inc)
	rows, err := t.tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("leasedb/sqlite: list delimited %s/%s: %w", account, container, err)
	}
	out, err := scanItems(rows)
	if err != nil {
		return nil, fmt.Errorf("leasedb/sqlite: list delimited %s/%s: %w", account, container, err)
	}
	return out, nil
}
