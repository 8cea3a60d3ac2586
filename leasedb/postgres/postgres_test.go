package postgres_test

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
	"github.com/blobgw/blobgw/leasedb/postgres"
	"github.com/blobgw/blobgw/leasedb/storetest"
	"github.com/blobgw/blobgw/migrations"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// open opens and migrates a store on dsn, closed when t ends.
func open(t testing.TB, dsn string) *postgres.Store {
	t.Helper()
	ctx := context.Background()
	s, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) leasedb.Store {
		return open(t, pgtest.Start(t))
	})
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
	conn, err := pgx.Connect(ctx, pgtest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
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

// A serialization failure returned by fn is retried a bounded number of
// times, then returned unchanged; any other error of fn is not retried.
func TestRetryBounded(t *testing.T) {
	s := open(t, pgtest.Start(t))
	ctx := context.Background()
	serial := &pgconn.PgError{Code: "40001", Message: "fake serialization failure"}
	runs := 0
	err := s.Update(ctx, func(tx leasedb.Tx) error {
		runs++
		return serial
	})
	if err != serial {
		t.Fatalf("Update returned %v, want fn's error unchanged", err)
	}
	if runs < 2 || runs > 20 {
		t.Errorf("fn ran %d times; want a bounded number of retries", runs)
	}
	other := &pgconn.PgError{Code: "23505", Message: "unique violation"}
	runs = 0
	if err := s.Update(ctx, func(tx leasedb.Tx) error { runs++; return other }); err != other || runs != 1 {
		t.Errorf("Update = %v after %d runs; want fn's error after 1 run", err, runs)
	}
}

func TestMigrate(t *testing.T) {
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

	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO schema_version (version, name) VALUES ($1, 'future.sql')`, latest+1); err != nil {
		t.Fatal(err)
	}
	from, to, err := s.Migrate(ctx)
	if !errors.Is(err, leasedb.ErrSchemaTooNew) {
		t.Fatalf("Migrate of a newer schema: %v, want ErrSchemaTooNew", err)
	}
	if from != latest+1 || to != latest+1 {
		t.Errorf("Migrate of a newer schema = %d, %d", from, to)
	}
	for _, want := range []string{strconv.Itoa(latest + 1), strconv.Itoa(latest)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name version %s", err, want)
		}
	}
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
	if from, to, err := s.MigrateTo(ctx, 1); err != nil || from != 0 || to != 1 {
		t.Fatalf("MigrateTo(1) = %d, %d, %v; want 0, 1", from, to, err)
	}
	if v, err := s.SchemaVersion(ctx); err != nil || v != 1 {
		t.Fatalf("SchemaVersion = %d, %v; want 1", v, err)
	}

	// Rows as version 1 wrote them (this driver writes columns version 1
	// lacks, so plain SQL).
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	lm := time.Date(2024, 1, 2, 3, 4, 5, 6000, time.UTC)
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
	// The store really is at version 1: the current driver cannot read it.
	if err := s.View(ctx, func(tx leasedb.Tx) error {
		_, err := tx.Container(ctx, "acct", "c", leasedb.LockNone)
		return err
	}); err == nil {
		t.Fatalf("reading a version-1 row with the new columns succeeded; is the schema really at version 1?")
	}

	// MigrateTo a version already reached does nothing; past the newest fails.
	if from, to, err := s.MigrateTo(ctx, 1); err != nil || from != 1 || to != 1 {
		t.Errorf("MigrateTo(1) again = %d, %d, %v; want 1, 1", from, to, err)
	}
	if _, _, err := s.MigrateTo(ctx, latest+1); err == nil {
		t.Errorf("MigrateTo(%d) succeeded", latest+1)
	}
	if from, to, err := s.Migrate(ctx); err != nil || from != 1 || to != latest {
		t.Fatalf("Migrate = %d, %d, %v; want 1, %d", from, to, err, latest)
	}

	// Old rows read back unchanged, with no lease_since.
	err = s.View(ctx, func(tx leasedb.Tx) error {
		c, err := tx.Container(ctx, "acct", "c", leasedb.LockNone)
		if err != nil {
			return err
		}
		wantC := &leasedb.Container{Account: "acct", Name: "c", ETag: `"0x1"`, LastModified: lm,
			Metadata: map[string]string{"k": "v"}, PublicAccess: "blob",
			Lease: leasedb.Lease{ID: "11111111-2222-3333-4444-555555555555", State: "leased", Duration: -1}}
		if !reflect.DeepEqual(c, wantC) {
			t.Errorf("migrated container:\n got %#v\nwant %#v", c, wantC)
		}
		b, err := tx.Blob(ctx, "acct", "c", "b", leasedb.LockNone)
		if err != nil {
			return err
		}
		wantB := &leasedb.Blob{Account: "acct", Container: "c", Name: "b", Type: "BlockBlob", ETag: `"0x2"`,
			Created: lm, LastModified: lm, Size: 5, Props: leasedb.Props{ContentType: "text/plain"},
			Metadata: map[string]string{}, Extents: []leasedb.Extent{{Key: "obj/1", Size: 5}},
			Lease: leasedb.Lease{State: "broken"}}
		if !reflect.DeepEqual(b, wantB) {
			t.Errorf("migrated blob:\n got %#v\nwant %#v", b, wantB)
		}
		leases, err := tx.ListLeases(ctx, leasedb.LeaseFilter{})
		if err != nil {
			return err
		}
		if len(leases) != 2 || leases[0].Blob != "" || leases[1].Blob != "b" {
			t.Errorf("ListLeases on the migrated rows: %+v", leases)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := s.CollectionKeys(ctx)
	if err != nil || !reflect.DeepEqual(keys, []string{"intent/1"}) {
		t.Errorf("CollectionKeys = %q, %v", keys, err)
	}

	// The new columns and table work on the migrated database.
	since := lm.Add(time.Hour)
	err = s.Update(ctx, func(tx leasedb.Tx) error {
		c, err := tx.Container(ctx, "acct", "c", leasedb.LockExclusive)
		if err != nil {
			return err
		}
		c.Lease.Since = since
		if err := tx.UpdateContainer(ctx, c); err != nil {
			return err
		}
		if c, err = tx.Container(ctx, "acct", "c", leasedb.LockNone); err != nil {
			return err
		}
		if !c.Lease.Since.Equal(since) {
			t.Errorf("Since = %v, want %v", c.Lease.Since, since)
		}
		if _, err := tx.StageBlock(ctx, "acct", "c", "b", leasedb.Block{ID: "YQ==", Key: "blk/1", Size: 3, StagedAt: since}); err != nil {
			return err
		}
		// A snapshot of the migrated blob shares its extent.
		snap := &leasedb.Blob{Account: "acct", Container: "c", Name: "b", Snapshot: "2024-01-02T03:04:05.0000060Z",
			Type: "BlockBlob", ETag: `"0x3"`, Created: lm, LastModified: since, Size: 8,
			Extents: []leasedb.Extent{{Key: "obj/1", Size: 5}, {Key: "obj/2", Size: 3}}}
		if err := tx.PutSnapshot(ctx, snap); err != nil {
			return err
		}
		got, err := tx.Snapshot(ctx, "acct", "c", "b", snap.Snapshot)
		if err != nil {
			return err
		}
		if got == nil || got.Snapshot != snap.Snapshot || !reflect.DeepEqual(got.Extents, snap.Extents) {
			t.Errorf("Snapshot = %+v, want %+v", got, snap)
		}
		if b, err := tx.Blob(ctx, "acct", "c", "b", leasedb.LockNone); err != nil || b == nil || b.Snapshot != "" {
			t.Errorf("Blob after PutSnapshot = %+v, %v; want the base row", b, err)
		}
		keys, err := tx.DeleteContainer(ctx, "acct", "c")
		if err != nil {
			return err
		}
		if want := []string{"obj/1", "obj/2", "blk/1"}; !reflect.DeepEqual(keys, want) {
			t.Errorf("DeleteContainer = %q, want %q", keys, want)
		}
		return errors.New("roll back")
	})
	if err == nil || err.Error() != "roll back" {
		t.Fatal(err)
	}
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
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
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
