package sqlite

import (
	"context"
	"database/sql"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

// driver is what SQLite gives the Tx methods written once in sqlq.Tx.
var driver = sqlq.Driver[sql.NullInt64]{
	Name:        "leasedb/sqlite",
	Placeholder: dialect.Placeholder,
	FromTime:    fromMicros,
	ToTime:      micros,
	ForeignKey:  func(err error) bool { return code(err) == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY },
}

// querier is a transaction's sqlExec (writetx.go) as sqlq.Querier.
type querier struct{ tx sqlExec }

func (q querier) Query(ctx context.Context, scan func(sqlq.Rows) error, query string, args ...any) error {
	rows, err := q.tx.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if err := scan(rows); err != nil {
		return err
	}
	return rows.Err()
}

func (q querier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := q.tx.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
