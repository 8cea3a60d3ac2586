package postgres

import (
	"context"
	"fmt"
	"strconv"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

// dialect is Postgres's for the queries sqlq builds.
var dialect = sqlq.Dialect{Placeholder: func(n int) string { return "$" + strconv.Itoa(n) }, Strpos: "strpos"}

// ListDelimited implements leasedb.Tx: one query, a recursive walk that
// seeks past each prefix (see sqlq.ListDelimited, and
// sqlq.ListDelimitedBatched for a listing of committed blobs alone), then
// the entries of the names it found, read by key.
func (t *tx) ListDelimited(ctx context.Context, account, container, prefix, delimiter, after string, limit int, inc leasedb.ListInclude) ([]leasedb.ListItem, error) {
	if err := checkText(account, container, prefix, delimiter, after); err != nil {
		return nil, err
	}
	if limit <= 0 || delimiter == "" {
		return nil, fmt.Errorf("leasedb/postgres: list delimited %s/%s: limit %d, delimiter %q", account, container, limit, delimiter)
	}
	q, args := sqlq.ListDelimited(dialect, account, container, prefix, delimiter, after, limit, inc)
	if inc == (leasedb.ListInclude{}) {
		// Committed blobs alone: the walk that reads several names per
		// seek (a seek costs Postgres a dozen rows or more).
		q, args = sqlq.ListDelimitedBatched(dialect.Placeholder, account, container, prefix, delimiter, after, limit)
	}
	rows, err := t.tx.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("leasedb/postgres: list delimited %s/%s: %w", account, container, sqlq.CtxErr(ctx, err))
	}
	out, err := scanItems(rows)
	if err != nil {
		return nil, fmt.Errorf("leasedb/postgres: list delimited %s/%s: %w", account, container, sqlq.CtxErr(ctx, err))
	}
	return out, nil
}
