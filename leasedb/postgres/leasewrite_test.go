package postgres_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/postgres"
)

// TestLeaseBlobWritesLeaseColumns: a Lease Blob action on a 4 KiB inline
// blob updates the lease columns alone (leasedb.BlobLeaseWriter), not the
// whole row: no upsert that sends the extents, and with them the blob's
// bytes, to be written again (TOAST chunks on Postgres); still one
// transaction of at most 4 statements, and the bytes read back whole.
func TestLeaseBlobWritesLeaseColumns(t *testing.T) {
	ctx := context.Background()
	s, db, ref, data := inlineLeaseBlob(t, nil)
	var c postgres.Counter
	for _, req := range leaseCycle {
		c.Reset()
		if _, _, err := db.LeaseBlob(postgres.CountInto(ctx, &c), ref, req, leasedb.Conditions{}, ""); err != nil {
			t.Fatalf("%s: %v", req.Action, err)
		}
		got := c.Counts()
		sql := strings.Join(got.SQL, "\n")
		if got.Transactions != 1 || got.Statements > 4 {
			t.Errorf("%s: %d transactions, %d statements, want 1 and at most 4:\n%s", req.Action, got.Transactions, got.Statements, sql)
		}
		if strings.Contains(sql, "INSERT INTO blobs") || !strings.Contains(sql, "UPDATE blobs SET lease_id") {
			t.Errorf("%s: the lease is written with the whole row, not its lease columns:\n%s", req.Action, sql)
		}
	}
	b := readBlob(t, s, "b")
	if b.Lease.State != "available" || len(b.Extents) != 1 || !bytes.Equal(b.Extents[0].Data, data) {
		t.Fatalf("after the lease cycle: lease %+v, extents %d, bytes kept %t", b.Lease, len(b.Extents), len(b.Extents) == 1 && bytes.Equal(b.Extents[0].Data, data))
	}
}
