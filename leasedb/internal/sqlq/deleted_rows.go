package sqlq

import (
	"context"
	"strings"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

// qualified is cols (a comma-separated list) with each column prefixed by
// alias and a dot.
func qualified(alias, cols string) string {
	parts := strings.Split(cols, ",")
	for i, p := range parts {
		parts[i] = alias + "." + strings.TrimSpace(p)
	}
	return strings.Join(parts, ", ")
}

// ListDeletedRows builds Tx.ListDeletedContainerRows' query: ListDeleted's
// page of records joined with the container row each one's hidden account
// (leasedb.DeletedAccount: account/version) holds, DeletedCols then
// ContainerCols, in ListDeleted's order. A record whose row is gone drops
// out of the join (List Containers skips it anyway), so one statement
// replaces a lookup per record.
func ListDeletedRows(placeholder func(n int) string, account, prefix, after, afterVersion string, limit int) (string, []any) {
	page, args := ListDeleted(placeholder, account, prefix, after, afterVersion, limit)
	return `SELECT ` + qualified("d", DeletedCols) + `, ` + qualified("c", ContainerCols) + ` FROM (` + page + `) AS d
		JOIN containers AS c ON c.account = d.account || '/' || d.version AND c.name = d.name
		ORDER BY d.name, d.version`, args
}

// ScanDeletedRows reads the rows of ListDeletedRows: each record with its
// container row, whose Account is the live account again.
func ScanDeletedRows[T any](rows Rows, fromTime func(T) time.Time) ([]leasedb.ListedContainer, error) {
	var out []leasedb.ListedContainer
	for rows.Next() {
		var (
			d        leasedb.DeletedContainer
			del, exp T
			r        containerRow[T]
		)
		if err := rows.Scan(append([]any{&d.Account, &d.Name, &d.Version, &del, &exp}, r.dest()...)...); err != nil {
			return nil, err
		}
		c, err := r.decode(fromTime)
		if err != nil {
			return nil, err
		}
		d.DeletedAt, d.ExpiresAt = fromTime(del), fromTime(exp)
		c.Account = d.Account
		out = append(out, leasedb.ListedContainer{Container: c, Deleted: &d})
	}
	return out, rows.Err()
}

// ListDeletedContainerRows implements leasedb.Tx: one statement
// (ListDeletedRows).
func (t Tx[T]) ListDeletedContainerRows(ctx context.Context, account, prefix, after, afterVersion string, limit int) ([]leasedb.ListedContainer, error) {
	if err := CheckText(t.D.Name, account, prefix, after, afterVersion); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	q, args := ListDeletedRows(t.D.Placeholder, account, prefix, after, afterVersion, limit)
	var out []leasedb.ListedContainer
	err := t.Q.Query(ctx, func(rows Rows) error {
		var err error
		out, err = ScanDeletedRows(rows, t.D.FromTime)
		return err
	}, q, args...)
	if err != nil {
		return nil, t.errorf(ctx, err, "deleted containers of %s", account)
	}
	return out, nil
}
