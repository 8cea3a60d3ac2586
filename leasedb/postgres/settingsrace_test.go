package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
	"github.com/blobgw/blobgw/leasedb/postgres"
)

// A write decides on the account's settings (versioning, blob soft
// delete) read by the statement that takes its locks, whose snapshot
// (READ COMMITTED) is taken before the lock waits. Here a Put Blob waits
// for the container's lock (a Delete Container's, say); meanwhile
// versioning is turned on (committed and answered), and only then does
// another writer take the name, overwrite the blob and commit. The Put
// Blob, granted the locks after both, overwrites that writer's content:
// since versioning was on before that content was even written, the
// content must be kept as a version (Azure: every overwrite with
// versioning enabled keeps the previous content). The write must act on
// the settings as they are under its locks, not as its snapshot had them.
func TestWriteSeesSettingsCommittedWhileLocksAwaited(t *testing.T) {
	for _, path := range []string{"one round trip", "few statements"} {
		t.Run(path, func(t *testing.T) {
			ctx := context.Background()
			dsn, db, put := inlineBlob(t, path == "few statements")
			// The container's lock, held as Delete Container holds it.
			cont := pgtest.Connect(t, dsn)
			lock(t, cont, postgres.ContainerLockKey("a", "c"))
			done := make(chan error, 1)
			go func() { done <- put("late") }()
			if waiting, err := awaitLockWait(t, pgtest.Connect(t, dsn), done); !waiting {
				t.Fatalf("the Put Blob did not wait for the container's lock: %v", err)
			}
			if err := db.SetVersioning(ctx, "a", true); err != nil {
				t.Fatal(err)
			}
			// A writer that starts after versioning was turned on takes
			// the name and overwrites the blob (its content "w0").
			w0 := pgtest.Connect(t, dsn)
			lock(t, w0, postgres.NameLockKey("a", "c", "b"))
			if _, err := w0.Exec(ctx, `UPDATE blobs SET etag = '"w0"' WHERE account = 'a' AND container = 'c' AND name = 'b'`); err != nil {
				t.Fatal(err)
			}
			if _, err := cont.Exec(ctx, `COMMIT`); err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond) // the Put Blob now waits for the name
			if _, err := w0.Exec(ctx, `COMMIT`); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			var kept int
			if err := w0.QueryRow(ctx, `SELECT count(*) FROM versions WHERE account = 'a' AND container = 'c' AND name = 'b' AND etag = '"w0"'`).Scan(&kept); err != nil {
				t.Fatal(err)
			}
			if kept != 1 {
				t.Errorf("the content overwritten with versioning on is kept as %d versions, want 1", kept)
			}
		})
	}
}

// inlineBlob is a store (noOneTrip: without the one-round-trip Put Blob)
// on a database of its own (dsn) holding container a/c and its inline
// blob b ("v0"); put writes b again.
func inlineBlob(t *testing.T, noOneTrip bool) (dsn string, db *leasedb.DB, put func(data string) error) {
	t.Helper()
	dsn = pgtest.Start(t)
	s := open(t, dsn)
	if noOneTrip {
		postgres.NoOneTrip(s)
	}
	addContainer(t, s)
	db = &leasedb.DB{Store: s}
	put = func(data string) error {
		_, _, err := db.PutBlob(context.Background(), leasedb.PutBlobRequest{Ref: leasedb.BlobRef{Account: "a", Container: "c", Name: "b"},
			Type: "BlockBlob", Extents: []leasedb.Extent{{Size: int64(len(data)), Data: []byte(data)}}})
		return err
	}
	if err := put("v0"); err != nil {
		t.Fatal(err)
	}
	return dsn, db, put
}

// lock begins a transaction on conn and takes the advisory lock key in it.
func lock(t *testing.T, conn *pgx.Conn, key int64) {
	t.Helper()
	ctx := context.Background()
	if _, err := conn.Exec(ctx, `BEGIN`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, key); err != nil {
		t.Fatal(err)
	}
}

// Delete Blob reads the account's settings with the clock, in a statement
// of its own after the row's lock was granted (leasedb's withBlob: the
// container, the row FOR UPDATE, then Now), so a blob soft delete
// retention set while it waited for the row is applied: the blob is
// soft-deleted, not deleted for good.
func TestDeleteSeesRetentionSetWhileLockAwaited(t *testing.T) {
	ctx := context.Background()
	dsn, db, _ := inlineBlob(t, false)
	ref := leasedb.BlobRef{Account: "a", Container: "c", Name: "b"}
	holder := pgtest.Connect(t, dsn)
	if _, err := holder.Exec(ctx, `BEGIN`); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, `SELECT 1 FROM blobs WHERE account = 'a' AND container = 'c' AND name = 'b' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- db.DeleteBlob(ctx, ref, "", leasedb.Conditions{}, leasedb.KeepSnapshots) }()
	if waiting, err := awaitLockWait(t, pgtest.Connect(t, dsn), done); !waiting {
		t.Fatalf("the Delete Blob did not wait for the row: %v", err)
	}
	if err := db.SetServicePropertiesRetention(ctx, "a", "<StorageServiceProperties/>", 7); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, `COMMIT`); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var kept int
	if err := holder.QueryRow(ctx, `SELECT count(*) FROM deleted_blobs WHERE account = 'a' AND container = 'c' AND name = 'b'`).Scan(&kept); err != nil {
		t.Fatal(err)
	}
	if kept != 1 {
		t.Errorf("the blob deleted once the retention was set left %d soft-deleted rows, want 1", kept)
	}
}
