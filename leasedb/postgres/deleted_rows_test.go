package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
	"github.com/blobgw/blobgw/leasedb/postgres"
	"github.com/blobgw/blobgw/leasedb/postgres/postgrestest"
)

// TestListDeletedContainersStatements: a List Containers include=deleted
// page costs the same few statements however many soft-deleted containers
// it lists (their rows come joined with the records, not one lookup each),
// and each entry carries its container's row (metadata) under the live
// account.
func TestListDeletedContainersStatements(t *testing.T) {
	ctx := context.Background()
	store := postgrestest.OpenCounting(t, pgtest.Start(t))
	db := &leasedb.DB{Store: store}
	const n = 12
	for i := range n {
		name := fmt.Sprintf("gone%02d", i)
		if _, err := db.CreateContainer(ctx, "acct", name, map[string]string{"n": name}, ""); err != nil {
			t.Fatal(err)
		}
		if err := db.DeleteContainerRetained(ctx, "acct", name, "", leasedb.Conditions{}, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.CreateContainer(ctx, "acct", "live", nil, ""); err != nil {
		t.Fatal(err)
	}
	var c postgres.Counter
	out, next, _, err := db.ListContainersDeleted(postgres.CountInto(ctx, &c), "acct", "", "", 100, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != n+1 || next != "" {
		t.Fatalf("listed %d entries (next %q), want %d", len(out), next, n+1)
	}
	for i, e := range out[:n] {
		name := fmt.Sprintf("gone%02d", i)
		if e.Deleted == nil || e.Name != name || e.Account != "acct" || e.Metadata["n"] != name {
			t.Fatalf("entry %d = %+v (deleted %+v), want the soft-deleted %s with its metadata", i, e.Container, e.Deleted, name)
		}
	}
	if got := c.Counts(); got.Statements == 0 || got.Statements > 5 {
		t.Fatalf("one page of %d soft-deleted containers took %d statements (want at most 5: begin, clock, live, deleted, commit):\n%q",
			n, got.Statements, got.SQL)
	}
}
