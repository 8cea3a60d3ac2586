package sqlite

import (
	"context"
	"strings"
	"testing"

	"github.com/blobgw/blobgw/leasedb"
)

// cycleRequests is lease-cycle's actions: acquire, renew, release.
var cycleRequests = []leasedb.LeaseRequest{
	{Action: leasedb.LeaseAcquire, ProposedID: "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa", Duration: 15, BreakPeriod: -1},
	{Action: leasedb.LeaseRenew, ID: "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa", BreakPeriod: -1},
	{Action: leasedb.LeaseRelease, ID: "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa", BreakPeriod: -1},
}

// leaseCycle runs cycleRequests on ref.
func leaseCycle(t *testing.T, ctx context.Context, db *leasedb.DB, ref leasedb.BlobRef) {
	t.Helper()
	for _, req := range cycleRequests {
		if _, _, err := db.LeaseBlob(ctx, ref, req, leasedb.Conditions{}, ""); err != nil {
			t.Fatalf("%s: %v", req.Action, err)
		}
	}
}

// TestLeaseBlobStatements: a Lease Blob action on a 4 KiB inline blob
// takes BEGIN IMMEDIATE once and COMMIT once, and between them reads the
// row's head (no statement names the extents, which hold the bytes) and
// writes the lease columns: 2 statements.
func TestLeaseBlobStatements(t *testing.T) {
	s, db, _ := hotStore(t)
	ctx := hotCtx(t)
	ref := hotRef
	run := func() { leaseCycle(t, ctx, db, ref) }
	run() // warm the statement caches
	begins, commits, reads := traceRun(s, run)
	other := len(reads)
	if n := len(cycleRequests); begins != n || commits != n || other != 2*n {
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

// traceRun runs run and counts the statements s runs meanwhile:
// BEGIN IMMEDIATE, COMMIT, and the others' texts.
func traceRun(s *Store, run func()) (begins, commits int, other []string) {
	s.stmts.trace = func(q string) {
		switch q {
		case "BEGIN IMMEDIATE":
			begins++
		case "COMMIT":
			commits++
		default:
			other = append(other, q)
		}
	}
	defer func() { s.stmts.trace = nil }()
	run()
	return begins, commits, other
}

// TestLeaseBlobAllocs: allocations of a lease cycle (acquire, renew,
// release) on a 4 KiB inline blob, store and leasedb included: 209
// measured. Reading the whole row (its extents decoded, the inline bytes
// among them) it took 440; the head with its columns' names and declared
// types read as Go strings by the driver, 263.
func TestLeaseBlobAllocs(t *testing.T) {
	_, db, _ := hotStore(t)
	ctx := hotCtx(t)
	ref := hotRef
	cycle := func() { leaseCycle(t, ctx, db, ref) }
	cycle()
	n := testing.AllocsPerRun(50, cycle)
	t.Logf("lease cycle: %.0f allocations", n)
	if n > 225 {
		t.Errorf("lease cycle: %.0f allocations, want at most %d", n, 225)
	}
}
