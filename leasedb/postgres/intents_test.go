package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
	"github.com/blobgw/blobgw/leasedb/postgres"
	"github.com/blobgw/blobgw/leasedb/postgres/postgrestest"
)

// TestAddIntentsOneStatement: the intent pool's refill (DB.AddIntents of
// 16 keys) is one INSERT in its transaction, not one per key; a key
// already queued (or given twice) fails the whole refill with ErrExists
// and records none of its keys, as the statement-per-key version did.
func TestAddIntentsOneStatement(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t)
	s := postgrestest.OpenCounting(t, dsn)
	db := &leasedb.DB{Store: s}
	keys := func(prefix string) []string {
		var ks []string
		for i := range 16 {
			ks = append(ks, fmt.Sprintf("%s/%02d", prefix, i))
		}
		return ks
	}
	var c postgres.Counter
	if err := db.AddIntents(postgres.CountInto(ctx, &c), keys("a"), time.Hour); err != nil {
		t.Fatal(err)
	}
	// BEGIN, the clock, the INSERT, COMMIT.
	if n := c.Counts().Statements; n > 4 {
		t.Errorf("AddIntents of 16 keys: %d statements; want at most 4", n)
	}

	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	count := func(like string) (n, intents int) {
		t.Helper()
		if err := conn.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE is_intent AND claimed_at IS NULL AND due_at > now())
			FROM gc_queue WHERE key LIKE $1`, like).Scan(&n, &intents); err != nil {
			t.Fatal(err)
		}
		return n, intents
	}
	if n, intents := count("a/%"); n != 16 || intents != 16 {
		t.Fatalf("after AddIntents: %d entries, %d unclaimed intents due later; want 16, 16", n, intents)
	}
	// One key already queued: nothing of the refill stays.
	b := keys("b")
	b[7] = "a/03"
	if err := db.AddIntents(ctx, b, time.Hour); !errors.Is(err, leasedb.ErrExists) {
		t.Fatalf("AddIntents with a queued key: %v; want ErrExists", err)
	}
	// A key given twice: likewise.
	d := keys("d")
	d[9] = d[2]
	if err := db.AddIntents(ctx, d, time.Hour); !errors.Is(err, leasedb.ErrExists) {
		t.Fatalf("AddIntents with a key twice: %v; want ErrExists", err)
	}
	for _, p := range []string{"b/%", "d/%"} {
		if n, _ := count(p); n != 0 {
			t.Errorf("after the failed AddIntents: %d entries %s; want 0", n, p)
		}
	}
}
