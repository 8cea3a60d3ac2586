package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
	"github.com/blobgw/blobgw/leasedb/postgres"
	"github.com/blobgw/blobgw/migrations"
)

// TestMigrateLockTimeout: a migration whose DDL waits behind a long open
// transaction holding its table waits at most MigrateLockTimeout, then
// rolls back with an error that says so, tagged leasedb.ErrUnavailable
// (dbopen.Open runs it again); the queries queued behind the DDL run once
// it gave up, instead of waiting for the long transaction as well. Once
// that transaction ends the migration applies.
func TestMigrateLockTimeout(t *testing.T) {
	ctx := context.Background()
	latest, err := migrations.Latest(migrations.Postgres)
	if err != nil {
		t.Fatal(err)
	}
	dsn := pgtest.Start(t)
	s, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, _, err := s.MigrateTo(ctx, latest-1); err != nil {
		t.Fatal(err)
	}
	// The last migration alters blobs (ACCESS EXCLUSIVE); a transaction
	// that read blobs holds ACCESS SHARE until it ends.
	holder := pgtest.Connect(t, dsn)
	if _, err := holder.Exec(ctx, `BEGIN`); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, `SELECT count(*) FROM blobs`); err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithTimeout(ctx, postgres.MigrateLockTimeout+15*time.Second)
	defer cancel()
	done := make(chan error, 1)
	began := time.Now()
	go func() {
		_, _, err := s.Migrate(mctx)
		done <- err
	}()
	watcher := pgtest.Connect(t, dsn)
	if waiting, err := awaitLockWait(t, watcher, done); !waiting {
		t.Fatalf("the migration did not wait for the table lock: %v", err)
	}
	// A reader of blobs queues behind the waiting DDL, and runs once the
	// migration gave up (the holder's ACCESS SHARE does not block it).
	reader := pgtest.Connect(t, dsn)
	rctx, rcancel := context.WithTimeout(ctx, postgres.MigrateLockTimeout+10*time.Second)
	defer rcancel()
	if _, err := reader.Exec(rctx, `SELECT count(*) FROM blobs`); err != nil {
		t.Fatalf("a reader queued behind the migration: %v", err)
	}
	err = <-done
	if waited := time.Since(began); waited > postgres.MigrateLockTimeout+5*time.Second {
		t.Errorf("the migration waited %v for its lock", waited)
	}
	if !errors.Is(err, leasedb.ErrUnavailable) || !strings.Contains(err.Error(), "not granted within") {
		t.Fatalf("Migrate behind a long transaction: %v, want a lock timeout that says so, unavailable", err)
	}
	if v, err := s.SchemaVersion(ctx); err != nil || v != latest-1 {
		t.Fatalf("schema version after the refused migration: %d, %v; want %d", v, err, latest-1)
	}
	if _, err := holder.Exec(ctx, `COMMIT`); err != nil {
		t.Fatal(err)
	}
	if _, to, err := s.Migrate(ctx); err != nil || to != latest {
		t.Fatalf("Migrate once the transaction ended: %d, %v", to, err)
	}
}
