package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
	if err := storetest.Increment(ctx, s, 50); err != nil {
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
		if err := storetest.Increment(ctx, s, 50); err != nil {
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
	s, path, latest := emptyStore(t)
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
	storetest.RefuseNewerSchema(t, s, latest, func(t *testing.T, version int) {
		if _, err := db.Exec(`INSERT INTO schema_version (version, name, applied_at) VALUES (?, 'future.sql', 0)`, version); err != nil {
			t.Fatal(err)
		}
	})
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

// A database a version-1 blobgw wrote migrates to the newest schema with
// its rows intact, and the new columns and tables work on it.
func TestMigrateFromVersion1(t *testing.T) {
	ctx := context.Background()
	s, path, latest := emptyStore(t)
	storetest.MigrateFromVersion1(t, s, latest, func(t *testing.T, lm time.Time) {
		db, err := sql.Open("sqlite", path+"?_pragma=foreign_keys(1)&_pragma=busy_timeout(5000)")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
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
	})
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

// emptyStore opens a store on a new, empty file (path, closed when t ends)
// and returns it with the newest schema version.
func emptyStore(t *testing.T) (s *sqlite.Store, path string, latest int) {
	latest, err := migrations.Latest(migrations.SQLite)
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(t.TempDir(), "meta.db")
	s, err = sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path, latest
}

// A write that cannot get the write lock because another connection to
// the file holds it (another process: `blobgw gc`, a sqlite3 shell, a
// stopped sibling) beyond the busy timeout and the retries is an outage
// of the database (leasedb.ErrUnavailable: 503 ServerBusy), not a failure
// of the request (500), and certainly not committed.
func TestBusyIsUnavailable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	s := open(t, path)
	ctx := context.Background()
	other, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	holder, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if _, err := holder.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer holder.ExecContext(ctx, "ROLLBACK")
	// The caller's deadline ends the retries after the first busy wait.
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	err = s.Update(short, func(tx leasedb.Tx) error {
		return tx.InsertContainer(short, &leasedb.Container{Account: "a", Name: "c", ETag: `"e"`})
	})
	if err == nil {
		t.Fatal("the write committed while another connection held the write lock")
	}
	if !errors.Is(err, leasedb.ErrUnavailable) {
		t.Errorf("Update while the write lock is held elsewhere: %v, want leasedb.ErrUnavailable", err)
	}
	if leasedb.MayHaveCommitted(err) {
		t.Errorf("a write refused at BEGIN is marked as maybe committed: %v", err)
	}
}
