package postgres_test

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
	"github.com/blobgw/blobgw/leasedb/postgres"
)

// TestStandbyRefusesWrites: a store whose DSN reaches a hot standby (in
// recovery) reads, yet every write fails (503 ServerBusy at the gateway):
// leasedb.WritesRefused says so, so /readyz takes the replica out of
// rotation, as for SQLite after a failed WAL flush. The primary's store
// refuses nothing.
func TestStandbyRefusesWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a primary and a standby")
	}
	p := pgtest.StartPair(t)
	dsn := p.NewDatabase(t)
	ctx := context.Background()
	primary, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer primary.Close()
	if _, _, err := primary.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = "127.0.0.1:" + strconv.Itoa(p.Standby.Port())
	u.RawQuery = "sslmode=disable"
	standby, err := postgres.Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer standby.Close()
	if err := leasedb.WritesRefused(primary); err != nil {
		t.Fatalf("the primary's store: WritesRefused %v, want nil", err)
	}
	// The standby reads (the schema replayed) ...
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := standby.View(ctx, func(tx leasedb.Tx) error {
			_, err := tx.Container(ctx, "a", "c", leasedb.LockNone)
			return err
		})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("reading on the standby: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// ... but takes no write ...
	err = standby.Update(ctx, func(tx leasedb.Tx) error { _, err := tx.NextETag(ctx); return err })
	if !errors.Is(err, leasedb.ErrUnavailable) {
		t.Fatalf("a write on the standby: %v, want ErrUnavailable", err)
	}
	// ... and says so.
	if err := leasedb.WritesRefused(standby); err == nil {
		t.Fatal("the standby's store: WritesRefused nil, want the refusal")
	}
}
