package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
	"github.com/blobgw/blobgw/leasedb/postgres"
	"github.com/blobgw/blobgw/leasedb/postgres/postgrestest"
)

// A Put Blob's two pairs (BEGIN with LockForReplace, CommitReplace's write
// with COMMIT) are counted by the connection's tracer as two round trips
// of two statements each, whether they go through the pair sender (pgx's
// default statement cache mode) or through pgx.Batch (another mode, here cache_describe),
// and both write the same row. (The one-round-trip Put Blob, which the
// pair sender would take for these small bodies, is off: its count is
// TestPutBlobOneTrip's.)
func TestPairCountedBothWays(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t)
	for _, mode := range []string{"", "&default_query_exec_mode=cache_describe"} {
		s := postgrestest.OpenCounting(t, dsn+mode)
		postgres.NoOneTrip(s)
		updateNow(t, s, func(tx leasedb.Tx, now time.Time) error {
			return tx.InsertContainer(ctx, &leasedb.Container{Account: "a", Name: "c" + mode, ETag: `"0x1"`, LastModified: now})
		})
		db := &leasedb.DB{Store: s}
		ref := leasedb.BlobRef{Account: "a", Container: "c" + mode, Name: "b"}
		for i := range 3 { // a create, then overwrites
			var c postgres.Counter
			body := []byte(strings.Repeat("x", 100+i))
			if _, _, err := db.PutBlob(postgres.CountInto(ctx, &c), leasedb.PutBlobRequest{Ref: ref, Type: "BlockBlob",
				Extents:     []leasedb.Extent{{Size: int64(len(body)), Data: body}},
				BlobContent: leasedb.BlobContent{Props: leasedb.Props{ContentType: "text/plain"}}}); err != nil {
				t.Fatalf("mode %q: put %d: %v", mode, i, err)
			}
			got := c.Counts()
			if got.Statements != 4 || got.RoundTrips != 2 || got.Transactions != 1 ||
				!strings.HasPrefix(got.SQL[0], "begin") || got.SQL[3] != "COMMIT" {
				t.Fatalf("mode %q: put %d counted as %d statements, %d round trips, %d transactions:\n\t%s",
					mode, i, got.Statements, got.RoundTrips, got.Transactions, strings.Join(got.SQL, "\n\t"))
			}
			b, ok, _, err := s.ReadBlob(ctx, ref.Account, ref.Container, ref.Name)
			if err != nil || !ok || b.Size != int64(len(body)) || b.Props.ContentType != "text/plain" || len(b.Extents) != 1 || string(b.Extents[0].Data) != string(body) {
				t.Fatalf("mode %q: put %d: read back %+v %v %v", mode, i, b, ok, err)
			}
		}
	}
}

// A pair that the server refuses keeps the server's error (the markers
// and codes CommitReplace and LockForReplace tell apart): a Put Blob into
// a container that does not exist is leasedb.ErrNotFound (the container
// check), and the connection stays usable for the next transaction.
func TestPairRefusedKeepsConnection(t *testing.T) {
	ctx := context.Background()
	s := open(t, pgtest.Start(t)+"&pool_max_conns=1")
	db := &leasedb.DB{Store: s}
	ref := leasedb.BlobRef{Account: "a", Container: "none", Name: "b"}
	for range 3 {
		if _, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: ref, Type: "BlockBlob"}); err == nil {
			t.Fatal("Put Blob into a container that does not exist succeeded")
		}
	}
	updateNow(t, s, func(tx leasedb.Tx, now time.Time) error {
		return tx.InsertContainer(ctx, &leasedb.Container{Account: "a", Name: "none", ETag: `"0x1"`, LastModified: now})
	})
	if _, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: ref, Type: "BlockBlob"}); err != nil {
		t.Fatal(err)
	}
}

// TestLockBlobCommitAllocs pins the allocations of a transaction of the
// Lease Blob shape: LockBlob (BEGIN with it in one round trip) and
// COMMIT sent by Store.run. Through pgx (a batch, then COMMIT as an Exec
// on a context detached with a timeout, watched by pgconn) it cost 50;
// through the pair sender (LockBlob's pair, then COMMIT alone, unwatched,
// its deadline on the connection) 14; with LockBlob reading the row's
// head (BlobHead) alone 10.
func TestLockBlobCommitAllocs(t *testing.T) {
	lock := lockBlobThen(t, smallBlobStore(t), func(leasedb.Tx, *leasedb.BlobHead) error { return nil })
	wantAllocs(t, "LockBlob and COMMIT", 100, 14, lock)
}

// A pair whose context ends while the server runs it (LockForReplace
// waiting for the name's lock, held by another transaction) returns at
// once with the context's error, and the store goes on serving: the pair
// sender watches a context that can end as pgx does.
func TestPairCanceledWhileWaiting(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t)
	s := open(t, dsn+"&pool_max_conns=3")
	addContainer(t, s)
	db := &leasedb.DB{Store: s}
	ref := leasedb.BlobRef{Account: "a", Container: "c", Name: "b"}
	put := func(ctx context.Context) error {
		_, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: ref, Type: "BlockBlob"})
		return err
	}
	if err := put(ctx); err != nil {
		t.Fatal(err)
	}
	release := holdReplaceLock(t, s, ref)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- put(cctx) }()
	watcher, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close(ctx)
	if waited, err := awaitLockWait(t, watcher, done); !waited {
		t.Fatalf("Put Blob did not wait for the lock: %v", err)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Put Blob canceled while waiting: %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Put Blob still waiting 30 s after its context ended")
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := put(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// A statement the connection prepared whose result type the schema
// changed under it ("cached plan must not change result type", a
// migration another replica ran) fails, and the connection is then
// closed so that it is prepared afresh on a new one. The statement failed
// before COMMIT, so Update runs the transaction again there: no Put Blob
// fails (it was a 500 once per pooled connection).
func TestPairPreparedAgainAfterSchemaChange(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t)
	s := open(t, dsn+"&pool_max_conns=1")
	addContainer(t, s)
	db := &leasedb.DB{Store: s}
	put := func() error {
		_, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: leasedb.BlobRef{Account: "a", Container: "c", Name: "b"}, Type: "BlockBlob"})
		return err
	}
	// A statement of the Tx sequence, in pgx's statement cache.
	read := func() error {
		return s.Update(ctx, func(tx leasedb.Tx) error {
			_, err := tx.Blob(ctx, "a", "c", "b", leasedb.LockShare)
			return err
		})
	}
	if err := put(); err != nil {
		t.Fatal(err)
	}
	if err := read(); err != nil {
		t.Fatal(err)
	}
	// A one-statement read on the pool (Get Blob's), cached too.
	if _, _, _, err := s.ReadBlob(ctx, "a", "c", "b"); err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, `ALTER TABLE blobs ALTER COLUMN content_type TYPE varchar`); err != nil {
		t.Fatal(err)
	}
	// The Tx read first, on the connection that cached both (one
	// connection: pool_max_conns=1).
	if err := read(); err != nil {
		t.Errorf("a Tx read after the schema change: %v", err)
	}
	if _, _, _, err := s.ReadBlob(ctx, "a", "c", "b"); err != nil {
		t.Errorf("ReadBlob after the schema change: %v", err)
	}
	failed := 0
	for i := range 4 {
		if err := put(); err != nil {
			t.Logf("put %d after the change: %v", i, err)
			failed++
		}
	}
	if failed > 0 {
		t.Fatalf("%d of 4 Put Blobs failed after the schema change, want none", failed)
	}
}
