package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/blobgw/blobgw/leasedb"
)

// updateNow runs fn in one s.Update with the transaction's clock, failing
// t on any error.
func updateNow(t testing.TB, s leasedb.Store, fn func(tx leasedb.Tx, now time.Time) error) {
	t.Helper()
	ctx := context.Background()
	if err := s.Update(ctx, func(tx leasedb.Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		return fn(tx, now)
	}); err != nil {
		t.Fatal(err)
	}
}

// awaitLockWait polls pg_stat_activity through watcher until a backend of
// the test's database waits for a lock, and returns true. done carries the
// result of the operation that should be waiting: when it arrives first,
// the operation finished without waiting, and awaitLockWait returns false
// and that result.
func awaitLockWait[R any](t testing.TB, watcher *pgx.Conn, done <-chan R) (bool, R) {
	t.Helper()
	for {
		var n int
		if err := watcher.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			var zero R
			return true, zero
		}
		select {
		case r := <-done:
			return false, r
		case <-time.After(10 * time.Millisecond):
		}
	}
}
