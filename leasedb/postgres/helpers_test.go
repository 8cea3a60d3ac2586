package postgres_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/blobgw/blobgw/internal/testproc"
	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
	"github.com/blobgw/blobgw/leasedb/postgres"
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

// raceNameLock holds the lock of a/c/name on s as the Tx sequence takes
// it (the container shared, the row exclusive), waits (through watcher)
// until put waits for that lock, then does change in the same
// transaction and commits; it returns put's error. It is how the
// few-statement writes are shown to see what another writer did while
// they waited for the name's lock.
func raceNameLock(t *testing.T, s leasedb.Store, watcher *pgx.Conn, name string, change func(tx leasedb.Tx, now time.Time) error, put func() error) error {
	t.Helper()
	ctx := context.Background()
	locked, proceed := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		held <- s.Update(ctx, func(tx leasedb.Tx) error {
			if _, err := tx.Container(ctx, "a", "c", leasedb.LockShare); err != nil {
				return err
			}
			if _, err := tx.Blob(ctx, "a", "c", name, leasedb.LockExclusive); err != nil {
				return err
			}
			now, err := tx.Now(ctx)
			if err != nil {
				return err
			}
			close(locked)
			<-proceed
			return change(tx, now)
		})
	}()
	<-locked
	done := make(chan error, 1)
	go func() { done <- put() }()
	if waited, err := awaitLockWait(t, watcher, done); !waited {
		t.Fatalf("Put Blob did not wait for the name's lock: %v", err)
	}
	close(proceed)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	return <-done
}

// nameLockRacer opens a store on a fresh database with container a/c and
// returns it with race: raceNameLock on that store, through a watcher
// connection of its own.
func nameLockRacer(t *testing.T) (s *postgres.Store, race func(name string, change func(tx leasedb.Tx, now time.Time) error, put func() error) error) {
	t.Helper()
	dsn := pgtest.Start(t)
	s = open(t, dsn)
	watcher := pgtest.Connect(t, dsn)
	addContainer(t, s)
	return s, func(name string, change func(tx leasedb.Tx, now time.Time) error, put func() error) error {
		t.Helper()
		return raceNameLock(t, s, watcher, name, change, put)
	}
}

// holdReplaceLock takes ref's locks as LockForReplace takes them, in a
// transaction of s that holds them until the returned release is called
// (at the latest when t ends, before the store closes) and then commits
// nothing; release returns that transaction's error.
func holdReplaceLock(t *testing.T, s leasedb.Store, ref leasedb.BlobRef) (release func() error) {
	t.Helper()
	ctx := context.Background()
	held, letGo, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- s.Update(ctx, func(tx leasedb.Tx) error {
			_, err := tx.(leasedb.BlobWriteLocker).LockForReplace(ctx, ref, leasedb.ReadWhole)
			close(held)
			<-letGo
			return err
		})
	}()
	<-held
	release = sync.OnceValue(func() error {
		close(letGo)
		return <-done
	})
	t.Cleanup(func() { _ = release() })
	return release
}

// readBlob is the row of a/c/name in s (nil when there is none), failing
// t on an error.
func readBlob(t *testing.T, s leasedb.Store, name string) *leasedb.Blob {
	t.Helper()
	return readBlobIn(t, s, "a", name)
}

// readBlobIn is the row of account/c/name in s (nil when there is none),
// failing t on an error.
func readBlobIn(t *testing.T, s leasedb.Store, account, name string) *leasedb.Blob {
	t.Helper()
	ctx := context.Background()
	var b *leasedb.Blob
	if err := s.View(ctx, func(tx leasedb.Tx) error {
		var err error
		b, err = tx.Blob(ctx, account, "c", name, leasedb.LockNone)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return b
}

// stagedBlocks are the staged blocks of a/c/name in s, failing t on an
// error.
func stagedBlocks(t *testing.T, s leasedb.Store, name string) []leasedb.Block {
	t.Helper()
	ctx := context.Background()
	var bs []leasedb.Block
	if err := s.View(ctx, func(tx leasedb.Tx) error {
		var err error
		bs, err = tx.Blocks(ctx, "a", "c", name)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return bs
}

// statementsDB is a new database on a Postgres server of the test's own
// that loads pg_stat_statements and tracks planning (the extension is
// not created in it), stopped when the test ends; the test is skipped
// when Postgres is not installed, outside CI.
func statementsDB(t *testing.T) string {
	t.Helper()
	srv, err := pgtest.StartServerArgs("-c", "shared_preload_libraries=pg_stat_statements", "-c", "pg_stat_statements.track_planning=on")
	if errors.Is(err, pgtest.ErrNotInstalled) && !testproc.InCI() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	return srv.NewDatabase(t)
}

// containerStore is a store on a new database holding container a/c,
// with the database's DSN and a leasedb.DB over the store.
func containerStore(t *testing.T) (string, *postgres.Store, *leasedb.DB) {
	t.Helper()
	dsn := pgtest.Start(t)
	s := open(t, dsn)
	addContainer(t, s)
	return dsn, s, &leasedb.DB{Store: s}
}

// smallBlobStore is a store on a new database holding container a/c and
// in it blob b, 4 bytes inline: what the allocation tests read, lock and
// overwrite.
func smallBlobStore(t *testing.T) *postgres.Store {
	t.Helper()
	ctx := context.Background()
	s := open(t, pgtest.Start(t))
	updateNow(t, s, func(tx leasedb.Tx, now time.Time) error {
		if err := tx.InsertContainer(ctx, &leasedb.Container{Account: "a", Name: "c", ETag: `"0x1"`, LastModified: now}); err != nil {
			return err
		}
		return tx.PutBlob(ctx, &leasedb.Blob{Account: "a", Container: "c", Name: "b", Type: "BlockBlob", ETag: `"0x8D0000000000ABC"`,
			Created: now, LastModified: now, Size: 4, Props: leasedb.Props{ContentType: "application/octet-stream"},
			Metadata: map[string]string{}, Extents: []leasedb.Extent{{Size: 4, Data: []byte("data")}}, Lease: leasedb.Lease{State: "available"}})
	})
	return s
}

// wantAllocs runs op once (to warm what it caches), then fails t when op
// allocates more than ceiling times on average over runs runs.
func wantAllocs(t *testing.T, what string, runs, ceiling int, op func()) {
	t.Helper()
	op()
	if n := testing.AllocsPerRun(runs, op); n > float64(ceiling) {
		t.Errorf("%s: %.0f allocations, want at most %d", what, n, ceiling)
	} else {
		t.Logf("%s: %.0f allocations", what, n)
	}
}

// addContainer creates container a/c in s.
func addContainer(t testing.TB, s leasedb.Store) {
	t.Helper()
	updateNow(t, s, func(tx leasedb.Tx, now time.Time) error {
		return tx.InsertContainer(context.Background(), &leasedb.Container{Account: "a", Name: "c", ETag: `"0x1"`, LastModified: now})
	})
}
