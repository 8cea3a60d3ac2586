package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
	"github.com/blobgw/blobgw/leasedb/postgres"
)

// An operator who makes the database read-only for maintenance
// (default_transaction_read_only = on) gets every write refused as an
// outage (leasedb.ErrUnavailable: 503 ServerBusy), certainly not
// committed, and nothing written, while reads go on: the store's BEGIN
// must not override the setting with READ WRITE. Set per database
// (ALTER DATABASE ... SET), it reaches the sessions opened after it.
func TestReadOnlyDatabaseRefusesWrites(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t)
	writable(t, open(t, dsn))
	side := pgtest.Connect(t, dsn)
	if _, err := side.Exec(ctx, `DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET default_transaction_read_only = on', current_database()); END $$`); err != nil {
		t.Fatal(err)
	}
	s, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	checkReadOnlyRefused(t, s, side)
}

// The same for the setting made server-wide and reloaded (ALTER SYSTEM,
// pg_reload_conf()), which reaches the sessions already open: the store's
// pooled connections.
func TestReadOnlyServerReloadRefusesWrites(t *testing.T) {
	ctx := context.Background()
	srv := pgtest.PrivateServer(t)
	dsn := srv.NewDatabase(t)
	s := open(t, dsn)
	writable(t, s) // a pooled connection, opened before the reload
	side := pgtest.Connect(t, dsn)
	for _, q := range []string{`ALTER SYSTEM SET default_transaction_read_only = on`, `SELECT pg_reload_conf()`} {
		if _, err := side.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	reloaded(t, side, "on")
	checkReadOnlyRefused(t, s, side)
	// Back to read-write, the same connections write again.
	for _, q := range []string{`ALTER SYSTEM RESET default_transaction_read_only`, `SELECT pg_reload_conf()`} {
		if _, err := side.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	reloaded(t, side, "off")
	db := &leasedb.DB{Store: s}
	// The first statement of a connection after the reload may still
	// see the old setting; a write refused then is retried by clients.
	var perr error
	for i := 0; i < 3; i++ {
		if _, _, perr = db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: leasedb.BlobRef{Account: "a", Container: "c", Name: "after"},
			Type: "BlockBlob", Extents: []leasedb.Extent{{Key: "k-after", Size: 1}}}); perr == nil {
			break
		}
	}
	if perr != nil {
		t.Fatalf("Put Blob once the server is read-write again: %v", perr)
	}
}

// reloaded waits until side's backend runs with default_transaction_read_only
// = want. pg_reload_conf only signals the postmaster, which rereads the file
// and then signals every backend in one pass; a backend applies it before
// the next command it reads. So once side sees it, the pooled connections
// have been signalled too, and their next write sees it (a write sent
// before that pass is simply earlier than the reload).
func reloaded(t *testing.T, side *pgx.Conn, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var v string
		if err := side.QueryRow(context.Background(), `SHOW default_transaction_read_only`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		if v == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("default_transaction_read_only is %q 30 s after pg_reload_conf, want %q", v, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// writable writes, while the database is still read-write, what the
// writes of checkReadOnlyRefused need: container a/c, its blob "leased"
// (not leased, no tags) and the upload intents of keys k1, k2 and k-after.
func writable(t *testing.T, s *postgres.Store) {
	t.Helper()
	addContainer(t, s)
	db := &leasedb.DB{Store: s}
	if _, _, err := db.PutBlob(context.Background(), leasedb.PutBlobRequest{Ref: leasedb.BlobRef{Account: "a", Container: "c", Name: "leased"},
		Type: "BlockBlob", Extents: []leasedb.Extent{{Size: 1, Data: []byte("x")}}}); err != nil {
		t.Fatal(err)
	}
	updateNow(t, s, func(tx leasedb.Tx, now time.Time) error {
		for _, k := range []string{"k1", "k2", "k-after"} {
			if err := tx.AddIntent(context.Background(), k, now.Add(time.Hour)); err != nil {
				return err
			}
		}
		return nil
	})
}

// checkReadOnlyRefused runs writes of every shape on s, whose database is
// read-only, and fails t unless each is refused as an outage, certainly
// not committed, and nothing was written (counted through side).
func checkReadOnlyRefused(t *testing.T, s *postgres.Store, side *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	db := &leasedb.DB{Store: s}
	ref := leasedb.BlobRef{Account: "a", Container: "c", Name: "b"}
	leased := leasedb.BlobRef{Account: "a", Container: "c", Name: "leased"}
	for _, w := range []struct {
		what string
		op   func() error
	}{
		{"Put Blob (one round trip)", func() error {
			_, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: ref, Type: "BlockBlob", Extents: []leasedb.Extent{{Size: 4, Data: []byte("data")}}})
			return err
		}},
		{"Put Blob (few statements)", func() error {
			_, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: ref, Type: "BlockBlob", Extents: []leasedb.Extent{{Key: "k1", Size: 1}}})
			return err
		}},
		{"Lease Blob", func() error {
			_, _, err := db.LeaseBlob(ctx, leased, leasedb.LeaseRequest{Action: leasedb.LeaseAcquire, Duration: -1, BreakPeriod: -1}, leasedb.Conditions{}, "00000000-0000-0000-0000-000000000001")
			return err
		}},
		{"Set Blob Tags", func() error {
			_, err := db.SetBlobTags(ctx, leased, "", leasedb.Conditions{}, map[string]string{"k": "v"})
			return err
		}},
		{"Put Block", func() error {
			return db.StageBlock(ctx, leasedb.StageBlockRequest{Ref: leased, Block: leasedb.Block{ID: "YmxrMQ==", Key: "k2", Size: 1}})
		}},
		{"Create Container", func() error {
			return s.Update(ctx, func(tx leasedb.Tx) error {
				return tx.InsertContainer(ctx, &leasedb.Container{Account: "a", Name: "c2", ETag: `"0x2"`})
			})
		}},
		{"an Update that writes nothing", func() error {
			return s.Update(ctx, func(leasedb.Tx) error { return nil })
		}},
		{"an Update that swallows the error", func() error {
			return s.Update(ctx, func(tx leasedb.Tx) error {
				if l, ok := tx.(leasedb.BlobWriteLocker); ok {
					_, _ = l.LockForReplace(ctx, ref, leasedb.ReadWhole)
				}
				return nil
			})
		}},
	} {
		err := w.op()
		if !errors.Is(err, leasedb.ErrUnavailable) || leasedb.MayHaveCommitted(err) {
			t.Errorf("%s on a read-only database: %v, want leasedb.ErrUnavailable, certainly not committed", w.what, err)
		}
	}
	var blobs, containers, queued, blocks, tags int
	var lease string
	if err := side.QueryRow(ctx, `SELECT (SELECT count(*) FROM blobs), (SELECT count(*) FROM containers), (SELECT count(*) FROM gc_queue),
		(SELECT count(*) FROM blocks), (SELECT count(*) FROM blob_tags), (SELECT lease_state FROM blobs WHERE name = 'leased')`).Scan(&blobs, &containers, &queued, &blocks, &tags, &lease); err != nil {
		t.Fatal(err)
	}
	if blobs != 1 || containers != 1 || queued != 3 || blocks != 0 || tags != 0 || (lease != "" && lease != "available") {
		t.Errorf("a read-only database holds %d blobs, %d containers, %d queue entries, %d staged blocks, %d tags, a lease %q; want 1, 1, 3 (the intents), 0, 0, none",
			blobs, containers, queued, blocks, tags, lease)
	}
	if err := s.View(ctx, func(tx leasedb.Tx) error {
		_, err := tx.Blob(ctx, ref.Account, ref.Container, ref.Name, leasedb.LockNone)
		if errors.Is(err, leasedb.ErrNotFound) {
			return nil
		}
		return err
	}); err != nil {
		t.Errorf("a read on a read-only database: %v", err)
	}
}
