package pgtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/blobgw/blobgw/leasedb/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// Each test gets its own database: what one writes, another does not see.
func TestFreshDatabases(t *testing.T) {
	ctx := context.Background()
	a, b := pgtest.Start(t), pgtest.Start(t)
	if a == b {
		t.Fatalf("two calls returned the same database %s", a)
	}
	ca, cb := pgtest.Connect(t, a), pgtest.Connect(t, b)
	if _, err := ca.Exec(ctx, `CREATE TABLE only_in_a (x int)`); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := cb.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE tablename = 'only_in_a'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("database b sees a's table")
	}
}

// A database is dropped when its test ends, even with connections open.
func TestDatabaseDroppedAtCleanup(t *testing.T) {
	var name string
	var live *pgx.Conn
	defer func() {
		if live != nil {
			live.Close(context.Background())
		}
	}()
	t.Run("owner", func(t *testing.T) {
		dsn := pgtest.Start(t)
		// Still connected when the test ends: the drop must cope with a
		// live connection.
		var err error
		live, err = pgx.Connect(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		if err := live.QueryRow(context.Background(), `SELECT current_database()`).Scan(&name); err != nil {
			t.Fatal(err)
		}
	})
	srv := pgtest.SharedServer(t)
	conn := pgtest.Connect(t, srv.DSN("postgres"))
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_database WHERE datname = $1`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("database %s still exists after its test ended", name)
	}
}

// A private server: started, used, stopped, and nothing left behind.
func TestPrivateServer(t *testing.T) {
	srv, err := pgtest.StartServer()
	if err != nil {
		t.Skipf("%v", err) // the shared-server tests above already fail in CI
	}
	t.Cleanup(func() { srv.Stop() })
	var dsn string
	t.Run("use", func(t *testing.T) {
		dsn = srv.NewDatabase(t)
		conn := pgtest.Connect(t, dsn)
		var one int
		if err := conn.QueryRow(context.Background(), `SELECT 1`).Scan(&one); err != nil || one != 1 {
			t.Fatalf("SELECT 1 = %d, %v", one, err)
		}
	})
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if c, err := pgx.Connect(ctx, dsn); err == nil {
		c.Close(ctx)
		t.Errorf("server on port %d still accepts connections after Stop", srv.Port())
	}
}
