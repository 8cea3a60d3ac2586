package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/blobgw/blobgw/leasedb"
)

func openStmtStore(t testing.TB) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "meta.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, _, err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s, path
}

// hotOps runs the statements of a Get Blob (ReadBlob on the read pool, in
// autocommit) and of a conditional write's locked read (Blob, LockBlob and
// the clock in a write transaction).
func hotOps(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	if _, _, _, err := s.ReadBlob(ctx, "acct", "c", "b"); err != nil {
		t.Fatal(err)
	}
	err := s.Update(ctx, func(ltx leasedb.Tx) error {
		t := ltx.(*tx)
		if _, err := t.Blob(ctx, "acct", "c", "b", leasedb.LockExclusive); err != nil {
			return err
		}
		_, _, _, err := t.LockBlob(ctx, "acct", "c", "b")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The hot paths' statements are compiled once per connection, not once per
// call: after a warm-up, repeating the same operations compiles nothing.
func TestStatementCacheReuse(t *testing.T) {
	s, _ := openStmtStore(t)
	for range 5 {
		hotOps(t, s)
	}
	prepares, hits := s.stmts.prepares.Load(), s.stmts.hits.Load()
	const n = 50
	for range n {
		hotOps(t, s)
	}
	if got := s.stmts.prepares.Load() - prepares; got != 0 {
		t.Errorf("%d repetitions of the hot operations compiled %d statements, want 0 (all from the cache)", n, got)
	}
	if got := s.stmts.hits.Load() - hits; got < 3*n {
		t.Errorf("%d repetitions reused %d statements, want at least %d", n, got, 3*n)
	}
}

// A statement whose rows are still open is not handed out again on the same
// connection: the second use gets a statement of its own and both row sets
// stay intact.
func TestStatementCacheNestedSameQuery(t *testing.T) {
	s, _ := openStmtStore(t)
	ctx := context.Background()
	const q = `SELECT column1 FROM (VALUES (1), (2), (3))`
	err := s.View(ctx, func(ltx leasedb.Tx) error {
		sqlTx := ltx.(*tx).tx
		for round := range 2 { // the second round runs on cached statements
			outer, err := sqlTx.QueryContext(ctx, q)
			if err != nil {
				return err
			}
			var got []int
			for outer.Next() {
				var v int
				if err := outer.Scan(&v); err != nil {
					return err
				}
				inner, err := sqlTx.QueryContext(ctx, q)
				if err != nil {
					return err
				}
				n := 0
				for inner.Next() {
					n++
				}
				if err := inner.Close(); err != nil {
					return err
				}
				if n != 3 {
					t.Errorf("round %d: inner query returned %d rows, want 3", round, n)
				}
				if got = append(got, v); len(got) > 3 {
					// Reusing the open statement restarts it.
					t.Errorf("round %d: outer query goes on past 3 rows: %v", round, got)
					break
				}
			}
			if err := outer.Err(); err != nil {
				return err
			}
			outer.Close()
			if len(got) != 3 || got[0] != 1 || got[2] != 3 {
				t.Errorf("round %d: outer rows %v, want [1 2 3]", round, got)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A migration drops the statements compiled before it: the same text is
// compiled again afterwards.
func TestStatementCacheDroppedByMigrate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	ctx := context.Background()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, _, err := s.MigrateTo(ctx, 1); err != nil {
		t.Fatal(err)
	}
	read := func() {
		t.Helper()
		if _, err := s.SchemaVersion(ctx); err != nil {
			t.Fatal(err)
		}
	}
	read()
	read()
	before := s.stmts.prepares.Load()
	read()
	if got := s.stmts.prepares.Load() - before; got != 0 {
		t.Fatalf("a repeated read compiled %d statements, want 0", got)
	}
	if _, _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	before = s.stmts.prepares.Load()
	read()
	if got := s.stmts.prepares.Load() - before; got == 0 {
		t.Errorf("the first read after a migration compiled nothing: statements from the old schema were used")
	}
}

// Close finalizes the cached statements: the last connection to close then
// checkpoints and removes the WAL, which SQLite does not do while any
// statement of a connection is left unfinalized (the connection stays open
// as a zombie).
func TestStatementCacheClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	ctx := context.Background()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	hotOps(t, s)
	if s.stmts.hits.Load() == 0 && s.stmts.prepares.Load() == 0 {
		t.Fatal("no statement went through the cache")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-wal"); !os.IsNotExist(err) {
		t.Errorf("WAL still there after Close (stat: %v): a connection was left open by an unfinalized statement", err)
	}
}
