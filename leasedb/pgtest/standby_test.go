package pgtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/blobgw/blobgw/leasedb/pgtest"
)

// A pair fails over without losing an acknowledged commit: rows committed
// on the primary are on the standby after the primary is SIGKILLed and the
// standby promoted; in between the multi-host DSN connects nowhere (the
// standby is read-only), and afterwards it reaches the promoted standby,
// which accepts writes.
func TestPairFailover(t *testing.T) {
	p := pgtest.StartPair(t)
	dsn := p.NewDatabase(t)
	ctx := context.Background()
	conn := pgtest.Connect(t, dsn)
	var port int
	if err := conn.QueryRow(ctx, `SELECT inet_server_port()`).Scan(&port); err != nil {
		t.Fatal(err)
	}
	if port != p.Primary.Port() {
		t.Fatalf("multi-host DSN reached port %d, want the primary's %d", port, p.Primary.Port())
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE acked (n int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	const rows = 200
	for i := range rows {
		if _, err := conn.Exec(ctx, `INSERT INTO acked VALUES ($1)`, i); err != nil {
			t.Fatal(err)
		}
	}
	var state string
	if err := conn.QueryRow(ctx, `SHOW synchronous_commit`).Scan(&state); err != nil || state != "on" {
		t.Fatalf("synchronous_commit = %q (%v), want on", state, err)
	}

	if err := p.KillPrimary(); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SELECT 1`); err == nil {
		t.Fatal("a connection to the killed primary still works")
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	if c, err := pgx.Connect(cctx, dsn); err == nil {
		c.Close(ctx)
		cancel()
		t.Fatal("multi-host DSN connected while only a read-only standby is up")
	}
	cancel()

	if err := p.Promote(); err != nil {
		t.Fatal(err)
	}
	conn = pgtest.Connect(t, dsn)
	if err := conn.QueryRow(ctx, `SELECT inet_server_port()`).Scan(&port); err != nil {
		t.Fatal(err)
	}
	if port != p.Standby.Port() {
		t.Fatalf("after promotion the DSN reached port %d, want the standby's %d", port, p.Standby.Port())
	}
	var n, maxN int
	if err := conn.QueryRow(ctx, `SELECT count(*), max(n) FROM acked`).Scan(&n, &maxN); err != nil {
		t.Fatal(err)
	}
	if n != rows || maxN != rows-1 {
		t.Fatalf("promoted standby holds %d rows (max %d), want %d acknowledged", n, maxN, rows)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO acked VALUES ($1)`, rows); err != nil {
		t.Fatalf("write after promotion: %v", err)
	}
}
