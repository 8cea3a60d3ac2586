package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

// driver is what Postgres gives the Tx methods written once in sqlq.Tx.
var driver = sqlq.Driver[pgtype.Timestamptz]{
	Name:        "leasedb/postgres",
	Placeholder: dialect.Placeholder,
	FromTime:    fromTS,
	ToTime:      ts,
	ForeignKey: func(err error) bool {
		var pgErr *pgconn.PgError
		return errors.As(err, &pgErr) && pgErr.Code == codeForeignKeyViolation
	},
}

// txQuerier is a transaction as sqlq.Querier.
type txQuerier struct{ tx *lazyTx }

func (q txQuerier) Query(ctx context.Context, scan func(sqlq.Rows) error, query string, args ...any) error {
	rows, err := q.tx.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if err := scan(rows); err != nil {
		return err
	}
	rows.Close() // pgx reports some failures only once the rows are closed
	return rows.Err()
}

func (q txQuerier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := q.tx.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}
