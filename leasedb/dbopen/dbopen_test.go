package dbopen_test

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/dbopen"
	"github.com/blobgw/blobgw/leasedb/pgtest"
	"github.com/blobgw/blobgw/migrations"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestParse(t *testing.T) {
	for _, tc := range []struct{ dsn, driver, target string }{
		{"postgres://u@h/db", dbopen.Postgres, "postgres://u@h/db"},
		{"postgresql://u@h/db?sslmode=disable", dbopen.Postgres, "postgresql://u@h/db?sslmode=disable"},
		{"POSTGRES://u@h/db", dbopen.Postgres, "POSTGRES://u@h/db"},
		{"/var/lib/blobgw/meta.db", dbopen.SQLite, "/var/lib/blobgw/meta.db"},
		{"meta.db", dbopen.SQLite, "meta.db"},
		{"sqlite:meta.db", dbopen.SQLite, "meta.db"},
		{"sqlite:///var/meta.db", dbopen.SQLite, "/var/meta.db"},
		{"file:/var/meta.db", dbopen.SQLite, "/var/meta.db"},
	} {
		d, target, err := dbopen.Parse(tc.dsn)
		if err != nil || d != tc.driver || target != tc.target {
			t.Errorf("Parse(%q) = %q, %q, %v; want %q, %q", tc.dsn, d, target, err, tc.driver, tc.target)
		}
	}
	for _, bad := range []string{"", "sqlite:", "file:"} {
		if _, _, err := dbopen.Parse(bad); err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
}

func smoke(t *testing.T, s leasedb.Store) {
	t.Helper()
	ctx := context.Background()
	if err := s.Update(ctx, func(tx leasedb.Tx) error {
		return tx.InsertContainer(ctx, &leasedb.Container{Account: "a", Name: "c", ETag: `"e"`})
	}); err != nil {
		t.Fatal(err)
	}
}

func TestSQLite(t *testing.T) {
	ctx := context.Background()
	latest, _ := migrations.Latest(migrations.SQLite)
	path := filepath.Join(t.TempDir(), "meta.db")

	// blobgw migrate on a new file, then again.
	if from, to, err := dbopen.Migrate(ctx, "sqlite:"+path); err != nil || from != 0 || to != latest {
		t.Fatalf("Migrate = %d, %d, %v", from, to, err)
	}
	if from, to, err := dbopen.Migrate(ctx, path); err != nil || from != latest || to != latest {
		t.Fatalf("second Migrate = %d, %d, %v", from, to, err)
	}
	s, err := dbopen.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	smoke(t, s)
	s.Close()

	// Open migrates an empty database by itself.
	s, err = dbopen.Open(ctx, filepath.Join(t.TempDir(), "new.db"))
	if err != nil {
		t.Fatal(err)
	}
	smoke(t, s)
	s.Close()
}

func TestPostgres(t *testing.T) {
	ctx := context.Background()
	latest, _ := migrations.Latest(migrations.Postgres)
	dsn := pgtest.Start(t)
	if v, err := dbopen.SchemaVersion(ctx, dsn); err != nil || v != 0 {
		t.Fatalf("SchemaVersion = %d, %v; want 0", v, err)
	}
	s, err := dbopen.Open(ctx, dsn) // migrates the empty database
	if err != nil {
		t.Fatal(err)
	}
	smoke(t, s)
	s.Close()
	if v, err := dbopen.SchemaVersion(ctx, dsn); err != nil || v != latest {
		t.Fatalf("SchemaVersion = %d, %v; want %d", v, err, latest)
	}
	if from, to, err := dbopen.Migrate(ctx, dsn); err != nil || from != latest || to != latest {
		t.Fatalf("Migrate = %d, %d, %v", from, to, err)
	}

	// A newer blobgw's database is refused, naming both versions.
	conn := pgtest.Connect(t, dsn)
	if _, err := conn.Exec(ctx, `INSERT INTO schema_version (version, name) VALUES ($1, 'future.sql')`, latest+7); err != nil {
		t.Fatal(err)
	}
	s, err = dbopen.Open(ctx, dsn)
	if err == nil {
		s.Close()
		t.Fatal("Open of a newer schema succeeded")
	}
	if !errors.Is(err, leasedb.ErrSchemaTooNew) {
		t.Errorf("Open: %v, want ErrSchemaTooNew", err)
	}
	for _, v := range []int{latest + 7, latest} {
		if !strings.Contains(err.Error(), strconv.Itoa(v)) {
			t.Errorf("error %q does not name version %d", err, v)
		}
	}
	if _, _, err := dbopen.Migrate(ctx, dsn); !errors.Is(err, leasedb.ErrSchemaTooNew) {
		t.Errorf("Migrate: %v, want ErrSchemaTooNew", err)
	}
}

// TestPostgresMigrateCut: a connection lost while the schema is migrated,
// before COMMIT reaches the server or after the server committed but
// before its answer, does not stop Open: it migrates again, and the
// database ends at the newest schema with each migration applied once.
func TestPostgresMigrateCut(t *testing.T) {
	ctx := context.Background()
	latest, _ := migrations.Latest(migrations.Postgres)
	for _, cut := range []pgtest.Cut{pgtest.CutBefore, pgtest.CutAfterReply} {
		dsn := pgtest.Start(t)
		p := pgtest.StartProxy(t, dsn)
		p.SetCut(pgtest.CutOnce(func(q pgtest.Query) bool {
			return q.IsCommit() && q.InTx("schema_version")
		}, cut))
		s, err := dbopen.Open(ctx, p.DSN(dsn))
		if err != nil {
			t.Fatalf("cut %d: Open: %v", cut, err)
		}
		smoke(t, s)
		s.Close()
		if p.Cuts() != 1 {
			t.Fatalf("cut %d: %d connections cut, want 1", cut, p.Cuts())
		}
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		var n, maxV int
		if err := conn.QueryRow(ctx, `SELECT count(*), max(version) FROM schema_version`).Scan(&n, &maxV); err != nil {
			t.Fatal(err)
		}
		conn.Close(ctx)
		if n != latest || maxV != latest {
			t.Errorf("cut %d: schema_version has %d rows up to %d, want %d", cut, n, maxV, latest)
		}
	}
}
