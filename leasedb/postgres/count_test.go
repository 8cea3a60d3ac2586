package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
	"github.com/blobgw/blobgw/leasedb/postgres"
	"github.com/blobgw/blobgw/leasedb/postgres/postgrestest"
)

// TestCountStatements: a store opened with OpenCounting counts what runs on
// a context tagged with CountInto (BEGIN and COMMIT included) and nothing
// on other contexts; a store opened with Open counts nothing at all.
func TestCountStatements(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t)
	counting := postgrestest.OpenCounting(t, dsn)
	plain := open(t, dsn)
	update := func(s leasedb.Store, ctx context.Context) {
		t.Helper()
		if err := s.Update(ctx, func(tx leasedb.Tx) error {
			if _, err := tx.Now(ctx); err != nil {
				return err
			}
			_, err := tx.Container(ctx, "acct", "none", leasedb.LockNone)
			if err == leasedb.ErrNotFound {
				err = nil
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	var c postgres.Counter
	update(counting, postgres.CountInto(ctx, &c))
	got := c.Counts()
	if got.Statements != 4 || got.RoundTrips != 4 || got.Transactions != 1 ||
		!strings.HasPrefix(got.SQL[0], "begin") || got.SQL[3] != "commit" {
		t.Fatalf("one transaction of two statements counted as %+v", got)
	}
	c.Reset()
	update(counting, ctx)
	update(plain, postgres.CountInto(ctx, &c))
	if got := c.Counts(); got.Statements != 0 || len(got.SQL) != 0 {
		t.Fatalf("untagged context or a store opened without counting: counted %+v", got)
	}
}
