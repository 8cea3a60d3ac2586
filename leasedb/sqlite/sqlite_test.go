package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/sqlite"
	"github.com/blobgw/blobgw/leasedb/storetest"
	"github.com/blobgw/blobgw/migrations"
)

// open opens and migrates the store at path, closed when t ends.
func open(t testing.TB, path string) *sqlite.Store {
	t.Helper()
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if _, _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) leasedb.Store {
		return open(t, filepath.Join(t.TempDir(), "meta.db"))
	})
}

// Two *Store on one file have separate connection pools; only SQLite's
// file lock (BEGIN IMMEDIATE) can serialize them.
func TestTwoStoresSameFile(t *testing.T) {
	t.Run("CreateOnce", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "meta.db")
		storetest.CreateOnce(t, open(t, path), open(t, path))
	})
	t.Run("Counter", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "meta.db")
		storetest.Counter(t, open(t, path), open(t, path), open(t, path))
	})
}

const helperEnv = "BLOBGW_SQLITE_HELPER_DB"

// increment adds 1 to Metadata["n"] of blob c/counter, n times.
func increment(ctx context.Context, s leasedb.Store, n int) error {
	for i := 0; i < n; i++ {
		err := s.Update(ctx, func(tx leasedb.Tx) error {
			b, err := tx.Blob(ctx, "acct", "c", "counter", leasedb.LockExclusive)
			if err != nil {
				return err
			}
			if b == nil {
				return errors.New("counter missing")
			}
			v, err := strconv.Atoi(b.Metadata["n"])
			if err != nil {
				return err
			}
			b.Metadata["n"] = strconv.Itoa(v + 1)
			if b.ETag, err = tx.NextETag(ctx); err != nil {
				return err
			}
			return tx.PutBlob(ctx, b)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// TestHelperProcess is the child side of TestCrossProcess.
func TestHelperProcess(t *testing.T) {
	path := os.Getenv(helperEnv)
	if path == "" {
		t.Skip("child process of TestCrossProcess only")
	}
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := increment(ctx, s, 50); err != nil {
		t.Fatal(err)
	}
}

// TestCrossProcess runs increments from three processes at once: no
// increment is lost.
func TestCrossProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	path := filepath.Join(t.TempDir(), "meta.db")
	s := open(t, path)
	ctx := context.Background()
	if err := s.Update(ctx, func(tx leasedb.Tx) error {
		if err := tx.InsertContainer(ctx, &leasedb.Container{Account: "acct", Name: "c", ETag: `"e"`}); err != nil {
			return err
		}
		return tx.PutBlob(ctx, &leasedb.Blob{Account: "acct", Container: "c", Name: "counter", Type: "BlockBlob",
			ETag: `"e"`, Metadata: map[string]string{"n": "0"}})
	}); err != nil {
		t.Fatal(err)
	}
	const children = 2
	var wg sync.WaitGroup
	errs := make(chan error, children+1)
	for i := 0; i < children; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
			cmd.Env = append(os.Environ(), helperEnv+"="+path)
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("child: %v\n%s", err, out)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := increment(ctx, s, 50); err != nil {
			errs <- err
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var n string
	if err := s.View(ctx, func(tx leasedb.Tx) error {
		b, err := tx.Blob(ctx, "acct", "c", "counter", leasedb.LockNone)
		if err == nil {
			n = b.Metadata["n"]
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if n != strconv.Itoa(50*(children+1)) {
		t.Errorf("counter = %s, want %d", n, 50*(children+1))
	}
}

func TestMigrate(t *testing.T) {
	ctx := context.Background()
	latest, err := migrations.Latest(migrations.SQLite)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "meta.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := s.SchemaVersion(ctx); err != nil || v != 0 {
		t.Fatalf("SchemaVersion of an empty database = %d, %v; want 0", v, err)
	}
	if from, to, err := s.Migrate(ctx); err != nil || from != 0 || to != latest {
		t.Fatalf("Migrate = %d, %d, %v; want 0, %d", from, to, err, latest)
	}
	if from, to, err := s.Migrate(ctx); err != nil || from != latest || to != latest {
		t.Fatalf("second Migrate = %d, %d, %v; want %d, %d", from, to, err, latest, latest)
	}
	if v, err := s.SchemaVersion(ctx); err != nil || v != latest {
		t.Fatalf("SchemaVersion = %d, %v; want %d", v, err, latest)
	}

	// A newer blobgw migrated this database: refuse it.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`INSERT INTO schema_version (version, name, applied_at) VALUES (?, 'future.sql', 0)`, latest+1); err != nil {
		t.Fatal(err)
	}
	from, to, err := s.Migrate(ctx)
	if !errors.Is(err, leasedb.ErrSchemaTooNew) {
		t.Fatalf("Migrate of a newer schema: %v, want ErrSchemaTooNew", err)
	}
	if from != latest+1 || to != latest+1 {
		t.Errorf("Migrate of a newer schema = %d, %d; want %d, %d", from, to, latest+1, latest+1)
	}
	for _, want := range []string{strconv.Itoa(latest + 1), strconv.Itoa(latest)} {
		if !contains(err.Error(), want) {
			t.Errorf("error %q does not name version %s", err, want)
		}
	}
}

// Concurrent migrators on one new file: all succeed, one does the work.
func TestMigrateConcurrent(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "meta.db")
	const n = 8
	var wg sync.WaitGroup
	froms := make([]int, n)
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := sqlite.Open(ctx, path)
			if err != nil {
				errs[i] = err
				return
			}
			defer s.Close()
			froms[i], _, errs[i] = s.Migrate(ctx)
		}()
	}
	wg.Wait()
	zero := 0
	for i := 0; i < n; i++ {
		if errs[i] != nil {
			t.Errorf("migrator %d: %v", i, errs[i])
		} else if froms[i] == 0 {
			zero++
		}
	}
	if zero != 1 {
		t.Errorf("%d migrators started from version 0, want 1", zero)
	}
}

func TestOpenRefusesURIs(t *testing.T) {
	for _, p := range []string{"", ":memory:", "file:x.db", "x.db?mode=ro", "a#b"} {
		if s, err := sqlite.Open(context.Background(), p); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", p)
		}
	}
}

// A View must not wait for a writer, and sees the last commit.
func TestViewDuringWrite(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "meta.db"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Update(ctx, func(tx leasedb.Tx) error {
		return tx.InsertContainer(ctx, &leasedb.Container{Account: "a", Name: "old", ETag: `"e"`})
	}); err != nil {
		t.Fatal(err)
	}
	inWrite := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.Update(ctx, func(tx leasedb.Tx) error {
			if err := tx.InsertContainer(ctx, &leasedb.Container{Account: "a", Name: "new", ETag: `"e"`}); err != nil {
				return err
			}
			close(inWrite)
			<-release
			return nil
		})
	}()
	<-inWrite
	err := s.View(ctx, func(tx leasedb.Tx) error {
		cs, err := tx.ListContainers(ctx, "a", "", "", 10)
		if len(cs) != 1 {
			t.Errorf("View during a write saw %d containers, want the 1 committed", len(cs))
		}
		return err
	})
	close(release)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A write transaction holds the write lock from BEGIN, before its first
// statement: a second writer (another Store on the file) cannot start.
func TestWriteLockTakenAtBegin(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	a, b := open(t, path), open(t, path)
	ctx := context.Background()
	began := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- a.Update(ctx, func(tx leasedb.Tx) error {
			close(began)
			<-release
			return nil
		})
	}()
	<-began
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	ran := false
	err := b.Update(short, func(tx leasedb.Tx) error {
		ran = true
		return tx.InsertContainer(short, &leasedb.Container{Account: "a", Name: "c", ETag: `"e"`})
	})
	close(release)
	if err == nil || ran {
		t.Errorf("second writer ran (%v) while the first held BEGIN IMMEDIATE: err %v", ran, err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("second writer: got %v, want context.DeadlineExceeded", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Once the first commits, the second gets in.
	if err := b.Update(ctx, func(tx leasedb.Tx) error {
		return tx.InsertContainer(ctx, &leasedb.Container{Account: "a", Name: "c", ETag: `"e"`})
	}); err != nil {
		t.Fatal(err)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// A database a version-1 blobgw wrote migrates to the newest schema with
// its rows intact, and the new columns and tables work on it.
func TestMigrateFromVersion1(t *testing.T) {
	ctx := context.Background()
	latest, err := migrations.Latest(migrations.SQLite)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "meta.db")
	s, err := sqlite.Open(ctx, path)
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
	db, err := sql.Open("sqlite", path+"?_pragma=foreign_keys(1)&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	lm := time.Date(2024, 1, 2, 3, 4, 5, 6000, time.UTC)
	for _, q := range []string{
		`INSERT INTO containers (account, name, etag, last_modified, metadata, public_access,
			lease_id, lease_state, lease_duration, lease_expires, lease_break_at)
		VALUES ('acct', 'c', '"0x1"', ` + strconv.FormatInt(lm.UnixMicro(), 10) + `, '{"k":"v"}', 'blob',
			'11111111-2222-3333-4444-555555555555', 'leased', -1, NULL, NULL)`,
		`INSERT INTO blobs (account, container, name, blob_type, etag, created, last_modified, size,
			content_type, metadata, extents, block_count, lease_id, lease_state, lease_duration, lease_expires, lease_break_at)
		VALUES ('acct', 'c', 'b', 'BlockBlob', '"0x2"', ` + strconv.FormatInt(lm.UnixMicro(), 10) + `, ` + strconv.FormatInt(lm.UnixMicro(), 10) + `, 5,
			'text/plain', '{}', '[{"k":"obj/1","n":5}]', 0, '', 'broken', 0, NULL, NULL)`,
		`INSERT INTO gc_queue (key, due_at, is_intent) VALUES ('intent/1', 0, 1)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
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
	path := filepath.Join(t.TempDir(), "meta.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, _, err := s.MigrateTo(ctx, 8); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	insert := func(t *testing.T, container, name, tags string) {
		var tv any
		if tags != "" {
			tv = tags
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO blobs (account, container, name, blob_type, etag, tags)
			VALUES ('acct', ?, ?, 'BlockBlob', '"e"', ?)`, container, name, tv); err != nil {
			t.Fatal(err)
		}
	}
	storetest.TagIndexBackfill(t, s, insert, func(t *testing.T) {
		if _, to, err := s.Migrate(ctx); err != nil || to < 9 {
			t.Fatalf("Migrate: %d, %v", to, err)
		}
	})
}
