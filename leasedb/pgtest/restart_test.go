package pgtest_test

import (
	"context"
	"os"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/blobgw/blobgw/leasedb/pgtest"
)

// Restart is an immediate stop and a start on the same port: an open
// connection breaks, a new one to the same DSN works, and a commit made
// under synchronous_commit = on survives; a second postmaster pid proves
// the server really went down.
func TestRestart(t *testing.T) {
	srv, err := pgtest.StartServer()
	if err != nil {
		t.Skipf("%v", err)
	}
	t.Cleanup(func() { srv.Stop() })
	dsn := srv.NewDatabase(t)
	ctx := context.Background()
	conn := pgtest.Connect(t, dsn)
	var db string
	if err := conn.QueryRow(ctx, `SELECT current_database()`).Scan(&db); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{db}.Sanitize()+` SET synchronous_commit = on`); err != nil {
		t.Fatal(err)
	}
	conn2 := pgtest.Connect(t, dsn)
	if _, err := conn2.Exec(ctx, `CREATE TABLE kept (v int); INSERT INTO kept VALUES (7)`); err != nil {
		t.Fatal(err)
	}
	var pidBefore int
	if err := conn2.QueryRow(ctx, `SELECT pg_postmaster_start_time() IS NOT NULL, pg_backend_pid()`).Scan(new(bool), &pidBefore); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := conn2.QueryRow(ctx, `SELECT 1`).Scan(new(int)); err == nil {
		t.Fatal("a connection opened before the restart still answers")
	}
	if p, err := os.FindProcess(pidBefore); err == nil && p.Signal(syscall.Signal(0)) == nil {
		t.Errorf("backend %d of the old server is still alive", pidBefore)
	}
	conn3 := pgtest.Connect(t, dsn)
	var v int
	if err := conn3.QueryRow(ctx, `SELECT v FROM kept`).Scan(&v); err != nil || v != 7 {
		t.Fatalf("after restart: v = %d, %v", v, err)
	}
}
