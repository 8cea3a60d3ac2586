package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
)

// seedBlob creates container c and blob c/b in account a.
func seedBlob(t *testing.T, s leasedb.Store) {
	t.Helper()
	ctx := context.Background()
	updateNow(t, s, func(tx leasedb.Tx, now time.Time) error {
		if err := tx.InsertContainer(ctx, &leasedb.Container{Account: "a", Name: "c", ETag: `"0x1"`, LastModified: now}); err != nil {
			return err
		}
		return tx.PutBlob(ctx, &leasedb.Blob{Account: "a", Container: "c", Name: "b", Type: "BlockBlob", ETag: `"0x2"`,
			Created: now, LastModified: now, Size: 3, Lease: leasedb.Lease{ID: "x", State: "leased", Duration: -1, Since: now}})
	})
}

// LockBlob reads the clock once its lock is granted, not before it waits:
// a lease decided on a clock read before the wait would be decided in
// the past. Another transaction holds the row lock (without changing the
// row), reads its clock once LockBlob waits for it, and ends; the clock
// LockBlob returns must not be earlier.
func TestLockBlobClockAfterLock(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t)
	s := open(t, dsn)
	seedBlob(t, s)
	holder := pgtest.Connect(t, dsn)
	watcher := pgtest.Connect(t, dsn)
	htx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := htx.Exec(ctx, `SELECT 1 FROM blobs WHERE account = 'a' AND container = 'c' AND name = 'b' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	type result struct {
		now time.Time
		err error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		r.err = s.Update(ctx, func(tx leasedb.Tx) error {
			var err error
			_, _, r.now, err = tx.(leasedb.BlobLocker).LockBlob(ctx, "a", "c", "b")
			return err
		})
		done <- r
	}()
	if waited, r := awaitLockWait(t, watcher, done); !waited {
		t.Fatalf("LockBlob did not wait for the row lock: %+v", r)
	}
	var held time.Time
	if err := htx.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&held); err != nil {
		t.Fatal(err)
	}
	if err := htx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if held = held.UTC().Truncate(time.Microsecond); r.now.Before(held) {
		t.Errorf("LockBlob's clock %v is before %v, when the lock was still held", r.now, held)
	}
}
