package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
	"github.com/blobgw/blobgw/leasedb/postgres"
)

// A server-side timeout an operator sets on the store's connections
// (statement_timeout, lock_timeout in the DSN or the role's settings)
// that cuts a write waiting for a lock another session holds says the
// database could not serve the request in time: an outage
// (leasedb.ErrUnavailable, which the gateway answers 503 ServerBusy), not
// a failure of the request (500), and certainly not committed (the
// statement failed before COMMIT was sent).
func TestServerTimeoutIsUnavailable(t *testing.T) {
	for _, tc := range []struct{ name, param string }{
		{"statement_timeout", "statement_timeout=200"},
		{"lock_timeout", "lock_timeout=200"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn := pgtest.Start(t)
			open(t, dsn) // migrated without the timeout
			ctx := context.Background()
			s, err := postgres.Open(ctx, dsn+"&"+tc.param)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			// Another session holds the table: the insert waits for it
			// until the server's timeout cuts the statement.
			holder := pgtest.Connect(t, dsn)
			if _, err := holder.Exec(ctx, `BEGIN; LOCK TABLE containers IN ACCESS EXCLUSIVE MODE`); err != nil {
				t.Fatal(err)
			}
			err = s.Update(ctx, func(tx leasedb.Tx) error {
				return tx.InsertContainer(ctx, &leasedb.Container{Account: "a", Name: "c", ETag: `"e"`})
			})
			if _, rerr := holder.Exec(ctx, `ROLLBACK`); rerr != nil {
				t.Fatal(rerr)
			}
			if err == nil {
				t.Fatal("the insert committed while another session held the table")
			}
			if !errors.Is(err, leasedb.ErrUnavailable) {
				t.Errorf("Update cut by the server's %s: %v, want leasedb.ErrUnavailable", tc.name, err)
			}
			if leasedb.MayHaveCommitted(err) {
				t.Errorf("a statement cut before COMMIT is marked as maybe committed: %v", err)
			}
		})
	}
}
