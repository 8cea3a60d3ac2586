package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb/pgtest"
)

// pairConn.encode sends an empty text as the empty string, never as
// NULL, also where it is the first value a connection's pair sender
// encodes or follows only NULLs (the parameter buffer still nil), as
// pgx's ExtendedQueryBuilder does: tm.Encode appends nothing for "", and
// an append of nothing to a nil buffer is nil, which encode takes for
// NULL.
func TestPairEncodesEmptyText(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t)
	for _, args := range [][]any{{"", "x"}, {nil, ""}} {
		conn := pgtest.Connect(t, dsn) // a new connection: nothing encoded yet
		res := pairConnOf(conn).sendOne(ctx, nil, true, time.Time{},
			pairQuery{sql: "SELECT $1::text IS NULL, $2::text IS NULL", args: args})
		if res.err != nil {
			t.Fatal(res.err)
		}
		var null1, null2 bool
		if !res.rows.Next() {
			t.Fatal("no row")
		}
		if err := res.rows.Scan(&null1, &null2); err != nil {
			t.Fatal(err)
		}
		if null1 != (args[0] == nil) || null2 != (args[1] == nil) {
			t.Errorf("args %q arrived as NULL: %v, %v", args, null1, null2)
		}
	}
}
