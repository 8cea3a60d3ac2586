package pgtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Connect opens a plain connection to dsn, beside whatever the test under
// way opened (to hold a row lock, watch pg_stat_activity or write rows a
// store would not), closed when tb ends. Connecting may take 10 seconds.
func Connect(tb testing.TB, dsn string) *pgx.Conn {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// RaceBehindLock runs writers at once behind a lock: lockSQL (say a
// SELECT ... FOR UPDATE) runs in a transaction of a side connection to dsn,
// the writers start, and once every one of them waits for a lock
// (pg_stat_activity) the transaction commits; it returns when all have
// finished, failing tb on the first writer's error. It is how a test makes
// writers overlap for certain: each has done what it does before its first
// lock wait when the next lock is granted.
func RaceBehindLock(tb testing.TB, dsn, lockSQL string, args []any, writers ...func() error) {
	tb.Helper()
	ctx := context.Background()
	holder := Connect(tb, dsn)
	tx, err := holder.Begin(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, lockSQL, args...); err != nil {
		tb.Fatal(err)
	}
	done := make(chan error, len(writers))
	for _, w := range writers {
		go func() { done <- w() }()
	}
	awaitLockWaiters(tb, Connect(tb, dsn), len(writers))
	if err := tx.Commit(ctx); err != nil {
		tb.Fatal(err)
	}
	for range writers {
		if err := <-done; err != nil {
			tb.Fatal(err)
		}
	}
}

// awaitLockWaiters polls pg_stat_activity through conn until n backends of
// its database wait for a lock, failing tb after 20 seconds.
func awaitLockWaiters(tb testing.TB, conn *pgx.Conn, n int) {
	tb.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
		var got int
		if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&got); err != nil {
			tb.Fatal(err)
		}
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d backends wait for a lock, want %d", got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
