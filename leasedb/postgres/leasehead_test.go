package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
	"github.com/blobgw/blobgw/leasedb/postgres"
	"github.com/blobgw/blobgw/leasedb/postgres/postgrestest"
	"github.com/blobgw/blobgw/svcerr"
)

// TestLeaseBlobReadsHead: a Lease Blob action on a 4 KiB inline blob (its
// extents TOASTed) reads the row's head alone, no statement names the
// extents, and the lease UPDATE goes with COMMIT: 2 round trips (BEGIN
// with the locked read, the UPDATE with COMMIT). The head returned is
// the row's (Blob.Head) with the new lease, and the bytes read back
// whole.
func TestLeaseBlobReadsHead(t *testing.T) {
	ctx := context.Background()
	s, db, ref, data := inlineLeaseBlob(t, map[string]string{"t": "v"})
	var c postgres.Counter
	for _, req := range leaseCycle {
		c.Reset()
		h, _, err := db.LeaseBlob(postgres.CountInto(ctx, &c), ref, req, leasedb.Conditions{}, "")
		if err != nil {
			t.Fatalf("%s: %v", req.Action, err)
		}
		got := c.Counts()
		sql := strings.Join(got.SQL, "\n")
		if got.Transactions != 1 || got.Statements > 4 || got.RoundTrips > 2 {
			t.Errorf("%s: %d transactions, %d statements, %d round trips; want 1, at most 4, at most 2:\n%s",
				req.Action, got.Transactions, got.Statements, got.RoundTrips, sql)
		}
		if strings.Contains(sql, "extents") {
			t.Errorf("%s: a statement names the extents:\n%s", req.Action, sql)
		}
		if want := readBlob(t, s, "b").Head(); h == nil || !headEqual(h, want) {
			t.Errorf("%s: LeaseBlob returned %+v, the row's head is %+v", req.Action, h, want)
		}
	}
	b := readBlob(t, s, "b")
	if b.Lease.State != "available" || len(b.Extents) != 1 || !bytes.Equal(b.Extents[0].Data, data) {
		t.Fatalf("after the lease cycle: lease %+v, extents %d", b.Lease, len(b.Extents))
	}
}

// inlineLeaseBlob is a counting store with container a/c and in it blob
// b of 4 KiB inline (its extents TOASTed once encoded), with tags.
func inlineLeaseBlob(t *testing.T, tags map[string]string) (*postgres.Store, *leasedb.DB, leasedb.BlobRef, []byte) {
	t.Helper()
	s := postgrestest.OpenCounting(t, pgtest.Start(t))
	addContainer(t, s)
	db := &leasedb.DB{Store: s}
	data := bytes.Repeat([]byte("0123456789abcdef"), 256)
	ref := leasedb.BlobRef{Account: "a", Container: "c", Name: "b"}
	if _, _, err := db.PutBlob(context.Background(), leasedb.PutBlobRequest{Ref: ref, Type: "BlockBlob",
		Extents:     []leasedb.Extent{{Size: int64(len(data)), Data: data}},
		BlobContent: leasedb.BlobContent{Tags: tags}}); err != nil {
		t.Fatal(err)
	}
	return s, db, ref, data
}

// leaseCycle is lease-cycle's actions: acquire, renew, release.
var leaseCycle = []leasedb.LeaseRequest{
	{Action: leasedb.LeaseAcquire, ProposedID: "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa", Duration: 15, BreakPeriod: -1},
	{Action: leasedb.LeaseRenew, ID: "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa", BreakPeriod: -1},
	{Action: leasedb.LeaseRelease, ID: "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa", BreakPeriod: -1},
}

// lockBlobThen is a transaction of the Lease Blob shape on s's blob
// a/c/b: LockBlob, then then on the head it read.
func lockBlobThen(t *testing.T, s *postgres.Store, then func(tx leasedb.Tx, h *leasedb.BlobHead) error) func() {
	return func() {
		ctx := context.Background()
		if err := s.Update(ctx, func(tx leasedb.Tx) error {
			h, _, _, err := tx.(leasedb.BlobLocker).LockBlob(ctx, "a", "c", "b")
			if err != nil {
				return err
			}
			if h == nil {
				t.Fatal("blob not found")
			}
			return then(tx, h)
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// headEqual compares two heads field by field (Tags is a map).
func headEqual(a, b *leasedb.BlobHead) bool {
	if a.Ref != b.Ref || a.ETag != b.ETag || !a.LastModified.Equal(b.LastModified) || a.Lease != b.Lease || len(a.Tags) != len(b.Tags) {
		return false
	}
	for k, v := range a.Tags {
		if w, ok := b.Tags[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestLeaseBlobUpdateRefused: when the server refuses the lease UPDATE
// sent with COMMIT (a trigger raises), nothing is committed, the
// transaction is rolled back (the one connection of the pool serves the
// next action at once, the row's lock released) and the error is the
// server's, not an unknown outcome.
func TestLeaseBlobUpdateRefused(t *testing.T) {
	ctx := context.Background()
	const refused = "dddddddd-dddd-4ddd-8ddd-dddddddddddd"
	s, db, ref := refusingStore(t, nil, "NEW.lease_id = '"+refused+"'")
	_, _, err := db.LeaseBlob(ctx, ref, leasedb.LeaseRequest{Action: leasedb.LeaseAcquire, ProposedID: refused, Duration: -1, BreakPeriod: -1}, leasedb.Conditions{}, "")
	if err == nil || !strings.Contains(err.Error(), "write refused by the test") || errors.Is(err, leasedb.ErrCommitUnknown) {
		t.Fatalf("refused UPDATE: %v, want the server's refusal, not an unknown outcome", err)
	}
	if l := readBlob(t, s, "b").Lease; l.ID != "" || l.State == "leased" {
		t.Fatalf("after a refused UPDATE the lease is %+v", l)
	}
	const id = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"
	tctx, cancel := context.WithTimeout(ctx, 10e9)
	defer cancel()
	if _, res, err := db.LeaseBlob(tctx, ref, leasedb.LeaseRequest{Action: leasedb.LeaseAcquire, ProposedID: id, Duration: -1, BreakPeriod: -1}, leasedb.Conditions{}, ""); err != nil || res.ID != id {
		t.Fatalf("acquire after the refused one: %+v, %v", res, err)
	}
	if l := readBlob(t, s, "b").Lease; l.ID != id {
		t.Fatalf("lease after the acquire: %+v", l)
	}
	// A second acquire with another id is the lease rules' refusal.
	_, _, err = db.LeaseBlob(ctx, ref, leasedb.LeaseRequest{Action: leasedb.LeaseAcquire, ProposedID: refused, Duration: -1, BreakPeriod: -1}, leasedb.Conditions{}, "")
	if e, ok := svcerr.As(err); !ok || e.Code != svcerr.LeaseAlreadyPresent {
		t.Fatalf("acquire over a lease: %v", err)
	}
}

// refusingStore is a store of one connection (so that a transaction
// left open would stall the next one) with container a/c and in it blob b
// of 4 bytes inline with tags, and a trigger that refuses, with "write
// refused by the test", every UPDATE of a blob row whose new values meet
// when (SQL on NEW).
func refusingStore(t *testing.T, tags map[string]string, when string) (*postgres.Store, *leasedb.DB, leasedb.BlobRef) {
	t.Helper()
	ctx := context.Background()
	dsn := pgtest.Start(t)
	s := open(t, dsn+"&pool_max_conns=1")
	addContainer(t, s)
	db := &leasedb.DB{Store: s}
	ref := leasedb.BlobRef{Account: "a", Container: "c", Name: "b"}
	if _, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: ref, Type: "BlockBlob",
		Extents: []leasedb.Extent{{Size: 4, Data: []byte("data")}}, BlobContent: leasedb.BlobContent{Tags: tags}}); err != nil {
		t.Fatal(err)
	}
	if _, err := pgtest.Connect(t, dsn).Exec(ctx, `CREATE FUNCTION refuse_write() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'write refused by the test'; END $$;
		CREATE TRIGGER refuse_write BEFORE UPDATE ON blobs FOR EACH ROW
		WHEN (`+when+`) EXECUTE FUNCTION refuse_write()`); err != nil {
		t.Fatal(err)
	}
	return s, db, ref
}

// TestLockBlobCommitLeaseAllocs pins the allocations of a lease action's
// transaction below leasedb: LockBlob (BEGIN with it) and
// CommitBlobLease (the UPDATE with COMMIT), two pairs: 15 measured.
func TestLockBlobCommitLeaseAllocs(t *testing.T) {
	ctx := context.Background()
	cycle := lockBlobThen(t, smallBlobStore(t), func(tx leasedb.Tx, h *leasedb.BlobHead) error {
		return tx.(leasedb.BlobLeaseCommitter).CommitBlobLease(ctx, h.Ref, h.Lease)
	})
	wantAllocs(t, "LockBlob and CommitBlobLease", 100, 20, cycle)
}
