package sqlite

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

// TestLeaseBlobStatements: a Lease Blob action on a 4 KiB inline blob
// takes BEGIN IMMEDIATE once and COMMIT once, and between them reads the
// row's head (no statement names the extents, which hold the bytes) and
// writes the lease columns: 2 statements.
func TestLeaseBlobStatements(t *testing.T) {
	s, db, _ := hotStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ref := leasedb.BlobRef{Account: "acct", Container: "c", Name: "b"}
	const id = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"
	cycle := []leasedb.LeaseRequest{
		{Action: leasedb.LeaseAcquire, ProposedID: id, Duration: 15, BreakPeriod: -1},
		{Action: leasedb.LeaseRenew, ID: id, BreakPeriod: -1},
		{Action: leasedb.LeaseRelease, ID: id, BreakPeriod: -1},
	}
	run := func() {
		for _, req := range cycle {
			if _, _, err := db.LeaseBlob(ctx, ref, req, leasedb.Conditions{}, ""); err != nil {
				t.Fatalf("%s: %v", req.Action, err)
			}
		}
	}
	run() // warm the statement caches
	var begins, commits, other int
	var reads []string
	s.stmts.trace = func(q string) {
		switch q {
		case "BEGIN IMMEDIATE":
			begins++
		case "COMMIT":
			commits++
		default:
			other++
			reads = append(reads, q)
		}
	}
	run()
	s.stmts.trace = nil
	if n := len(cycle); begins != n || commits != n || other != 2*n {
		t.Errorf("%d lease actions: %d BEGIN IMMEDIATE, %d COMMIT, %d other statements; want %d, %d, %d:\n%s",
			n, begins, commits, other, n, n, 2*n, strings.Join(reads, "\n"))
	}
	for _, q := range reads {
		if strings.Contains(q, "extents") {
			t.Errorf("a lease action's statement names the extents: %s", q)
		}
	}
	b, _, err := db.GetBlob(ctx, ref, "", leasedb.Conditions{})
	if err != nil || b.Lease.ID != "" || len(b.Extents) != 1 || string(b.Extents[0].Data) != string(hotBody) {
		t.Fatalf("after the cycle: %+v, %v", b, err)
	}
}
