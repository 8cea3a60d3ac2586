package postgres_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
	"github.com/blobgw/blobgw/leasedb/postgres"
	"github.com/blobgw/blobgw/leasedb/postgres/postgrestest"
	"github.com/blobgw/blobgw/leasedb/storetest"
	"github.com/blobgw/blobgw/migrations"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// open opens and migrates a store on dsn, closed when t ends.
func open(t testing.TB, dsn string) *postgres.Store {
	t.Helper()
	return postgrestest.Open(t, dsn)
}

// TestConformance runs the store conformance suite; after each test, every
// blob row it left has the extents_keys column that agrees with its
// extents (whatever wrote it: Put Blob, Put Block List, Append Block, a
// copy, a snapshot's promotion, an undelete, a version's restore...).
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) leasedb.Store {
		dsn := pgtest.Start(t)
		s := open(t, dsn)
		t.Cleanup(func() { checkExtentsKeys(t, dsn) })
		return s
	})
}

// checkExtentsKeys fails t for a blob row whose extents_keys is not
// whether its extents name an object (ExtentsKeys of its decoded extents).
func checkExtentsKeys(t *testing.T, dsn string) {
	ctx := context.Background()
	conn := pgtest.Connect(t, dsn)
	rows, err := conn.Query(ctx, `SELECT name, extents, extents_keys FROM blobs`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name, text string
		var keys *bool
		if err := rows.Scan(&name, &text, &keys); err != nil {
			t.Fatal(err)
		}
		x, err := leasedb.DecodeExtents(text)
		if err != nil {
			t.Fatal(err)
		}
		if want := postgres.ExtentsKeys(x); keys == nil || *keys != want {
			t.Errorf("blob %s: extents_keys %v; want %v (extents %.200s)", name, keys, want, text)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// Two stores on one database are two gateway replicas: separate pools,
// serialized only by the database's locks.
func TestTwoReplicas(t *testing.T) {
	t.Run("CreateOnce", func(t *testing.T) {
		dsn := pgtest.Start(t)
		storetest.CreateOnce(t, open(t, dsn), open(t, dsn))
	})
	t.Run("Counter", func(t *testing.T) {
		dsn := pgtest.Start(t)
		storetest.Counter(t, open(t, dsn), open(t, dsn), open(t, dsn))
	})
}

// The harness creates databases whose default collation is not byte order,
// so the ordering tests above prove the schema's COLLATE "C".
func TestDefaultCollationIsNotBytewise(t *testing.T) {
	ctx := context.Background()
	conn := pgtest.Connect(t, pgtest.Start(t))
	var lt bool
	if err := conn.QueryRow(ctx, `SELECT 'a_b'::text < 'aB'::text`).Scan(&lt); err != nil {
		t.Fatal(err)
	}
	if !lt {
		t.Logf("default collation of the test database is byte order; ordering tests are weaker here")
	}
}

// Two transactions lock two names in opposite order: Postgres detects the
// deadlock, aborts one, and Update runs it again.
func TestDeadlockIsRetried(t *testing.T) {
	s := open(t, pgtest.Start(t))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Update(ctx, func(tx leasedb.Tx) error {
		return tx.InsertContainer(ctx, &leasedb.Container{Account: "a", Name: "c", ETag: `"e"`})
	}); err != nil {
		t.Fatal(err)
	}
	var ready sync.WaitGroup
	ready.Add(2)
	var runs atomic.Int32
	lockBoth := func(first, second string) error {
		attempt := 0
		return s.Update(ctx, func(tx leasedb.Tx) error {
			runs.Add(1)
			attempt++
			if _, err := tx.Blob(ctx, "a", "c", first, leasedb.LockExclusive); err != nil {
				return err
			}
			if attempt == 1 {
				ready.Done()
				ready.Wait() // both hold their first lock
			}
			if _, err := tx.Blob(ctx, "a", "c", second, leasedb.LockExclusive); err != nil {
				return err
			}
			return tx.PutBlob(ctx, &leasedb.Blob{Account: "a", Container: "c", Name: first + second, Type: "BlockBlob", ETag: `"e"`})
		})
	}
	errs := make(chan error, 2)
	go func() { errs <- lockBoth("x", "y") }()
	go func() { errs <- lockBoth("y", "x") }()
	for i := 0; i < 2; i++ {
		if err := <-errs; err != nil {
			t.Errorf("Update: %v", err)
		}
	}
	if n := runs.Load(); n < 3 {
		t.Errorf("fn ran %d times; a deadlock should have forced a re-run", n)
	}
}

// A serialization failure or deadlock returned by fn is retried a bounded
// number of times, then returned as leasedb.ErrUnavailable (503
// ServerBusy: contention, not a bug) that still matches fn's error and
// says nothing committed; any other error of fn is not retried and is
// returned unchanged.
func TestRetryBounded(t *testing.T) {
	s := open(t, pgtest.Start(t))
	ctx := context.Background()
	for _, code := range []string{"40001", "40P01"} {
		contended := &pgconn.PgError{Code: code, Message: "fake contention"}
		runs := 0
		err := s.Update(ctx, func(tx leasedb.Tx) error {
			runs++
			return contended
		})
		if !errors.Is(err, contended) || !errors.Is(err, leasedb.ErrUnavailable) || leasedb.MayHaveCommitted(err) {
			t.Fatalf("%s: Update returned %v, want fn's error as leasedb.ErrUnavailable, certainly not committed", code, err)
		}
		if runs < 2 || runs > 20 {
			t.Errorf("%s: fn ran %d times; want a bounded number of retries", code, runs)
		}
	}
	runs := 0
	other := &pgconn.PgError{Code: "23505", Message: "unique violation"}
	runs = 0
	if err := s.Update(ctx, func(tx leasedb.Tx) error { runs++; return other }); err != other || runs != 1 {
		t.Errorf("Update = %v after %d runs; want fn's error after 1 run", err, runs)
	}
}

func TestMigrate(t *testing.T) {
	ctx := context.Background()
	s, dsn, latest := emptyStore(t)
	if v, err := s.SchemaVersion(ctx); err != nil || v != 0 {
		t.Fatalf("SchemaVersion of an empty database = %d, %v; want 0", v, err)
	}
	// Replicas starting at once: all succeed, exactly one migrates.
	const n = 6
	var wg sync.WaitGroup
	froms := make([]int, n)
	tos := make([]int, n)
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := postgres.Open(ctx, dsn)
			if err != nil {
				errs[i] = err
				return
			}
			defer r.Close()
			froms[i], tos[i], errs[i] = r.Migrate(ctx)
		}()
	}
	wg.Wait()
	zero := 0
	for i := 0; i < n; i++ {
		if errs[i] != nil {
			t.Errorf("migrator %d: %v", i, errs[i])
			continue
		}
		if tos[i] != latest {
			t.Errorf("migrator %d ended at %d, want %d", i, tos[i], latest)
		}
		if froms[i] == 0 {
			zero++
		}
	}
	if zero != 1 {
		t.Errorf("%d migrators started from version 0, want 1", zero)
	}
	if v, err := s.SchemaVersion(ctx); err != nil || v != latest {
		t.Fatalf("SchemaVersion = %d, %v; want %d", v, err, latest)
	}

	conn := pgtest.Connect(t, dsn)
	storetest.RefuseNewerSchema(t, s, latest, func(t *testing.T, version int) {
		if _, err := conn.Exec(ctx, `INSERT INTO schema_version (version, name) VALUES ($1, 'future.sql')`, version); err != nil {
			t.Fatal(err)
		}
	})
}

func TestOpenBadDSN(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := postgres.Open(ctx, "postgres://nobody:s3cret@127.0.0.1:1/nope?sslmode=disable&connect_timeout=2")
	if err == nil {
		s.Close()
		t.Fatal("Open of an unreachable server succeeded")
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error leaks the password: %v", err)
	}
}

// A database a version-1 blobgw wrote migrates to the newest schema with
// its rows intact, and the new columns and tables work on it.
func TestMigrateFromVersion1(t *testing.T) {
	ctx := context.Background()
	s, dsn, latest := emptyStore(t)
	storetest.MigrateFromVersion1(t, s, latest, func(t *testing.T, lm time.Time) {
		conn := pgtest.Connect(t, dsn)
		if _, err := conn.Exec(ctx, `INSERT INTO containers (account, name, etag, last_modified, metadata, public_access,
				lease_id, lease_state, lease_duration, lease_expires, lease_break_at)
			VALUES ('acct', 'c', '"0x1"', $1, '{"k":"v"}', 'blob', '11111111-2222-3333-4444-555555555555', 'leased', -1, NULL, NULL)`, lm); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `INSERT INTO blobs (account, container, name, blob_type, etag, created, last_modified, size,
				content_type, metadata, extents, block_count, lease_id, lease_state, lease_duration, lease_expires, lease_break_at)
			VALUES ('acct', 'c', 'b', 'BlockBlob', '"0x2"', $1, $1, 5, 'text/plain', '{}', '[{"k":"obj/1","n":5}]', 0, '', 'broken', 0, NULL, NULL)`, lm); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `INSERT INTO gc_queue (key, due_at, is_intent) VALUES ('intent/1', now() + interval '1 hour', TRUE)`); err != nil {
			t.Fatal(err)
		}
	})
}

// TestTagIndexBackfill: migration 0009 indexes the tags of existing rows.
func TestTagIndexBackfill(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t)
	s, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, _, err := s.MigrateTo(ctx, 8); err != nil {
		t.Fatal(err)
	}
	conn := pgtest.Connect(t, dsn)
	insert := func(t *testing.T, container, name, tags string) {
		var tv any
		if tags != "" {
			tv = tags
		}
		if _, err := conn.Exec(ctx, `INSERT INTO blobs (account, container, name, blob_type, etag, tags)
			VALUES ('acct', $1, $2, 'BlockBlob', '"e"', $3)`, container, name, tv); err != nil {
			t.Fatal(err)
		}
	}
	storetest.TagIndexBackfill(t, s, insert, func(t *testing.T) {
		if _, to, err := s.Migrate(ctx); err != nil || to < 9 {
			t.Fatalf("Migrate: %d, %v", to, err)
		}
	})
}

// emptyStore opens a store on a fresh, empty database (dsn, closed when t
// ends) and returns it with the newest schema version.
func emptyStore(t *testing.T) (s *postgres.Store, dsn string, latest int) {
	latest, err := migrations.Latest(migrations.Postgres)
	if err != nil {
		t.Fatal(err)
	}
	dsn = pgtest.Start(t)
	s, err = postgres.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dsn, latest
}
