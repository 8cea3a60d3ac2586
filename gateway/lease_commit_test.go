package gateway_test

import (
	"bytes"
	"context"
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"

	"github.com/blobgw/blobgw/leasedb/pgtest"
	"github.com/blobgw/blobgw/svcerr"
)

// commitCuts are the two cuts of a connection at a COMMIT: right after
// the server carried it out (committed, the answer lost), and right as it
// is sent (never seen).
var commitCuts = []struct {
	name      string
	cut       pgtest.Cut
	committed bool
}{
	{"after-commit", pgtest.CutAfterReply, true},
	{"at-commit", pgtest.CutBefore, false},
}

// TestUncertainLeaseCommit: Lease Blob's UPDATE and COMMIT travel in one
// round trip on Postgres; when the connection is cut right after that
// COMMIT was carried out (the answer never arrives) or right as it is
// sent, the client gets 503 ServerBusy, never a lease it was not given
// nor a refusal of one it was: afterwards the blob is leased by the id
// when the commit happened and available when it did not, and its bytes
// read back whole.
func TestUncertainLeaseCommit(t *testing.T) {
	forKinds(t, []string{"postgres+disk"}, func(t *testing.T, kind string) {
		b, proxy := setupProxied(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "cut")
		data := bytes.Repeat([]byte("lease"), 1000)
		for _, c := range commitCuts {
			t.Run(c.name, func(t *testing.T) {
				name := "lease-" + c.name
				if _, err := b.client.UploadBuffer(ctx, "cut", name, data, nil); err != nil {
					t.Fatal(err)
				}
				const id = "0f0e0d0c-0b0a-4908-8706-050403020100"
				lc := blobLease(t, blockClient(b.client, "cut", name), id)
				before := proxy.Cuts()
				proxy.SetCut(pgtest.CutOnce(func(q pgtest.Query) bool {
					return q.IsCommit() && q.InTx("UPDATE blobs SET lease_id")
				}, c.cut))
				_, err := lc.AcquireLease(ctx, -1, nil)
				proxy.SetCut(nil)
				if got := proxy.Cuts() - before; got != 1 {
					t.Fatalf("the proxy cut %d commits, want 1", got)
				}
				wantErr(t, err, http.StatusServiceUnavailable, string(svcerr.ServerBusy))
				props, err := blockClient(b.client, "cut", name).GetProperties(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				want := lease.StateTypeAvailable
				if c.committed {
					want = lease.StateTypeLeased
				}
				if props.LeaseState == nil || *props.LeaseState != want {
					t.Fatalf("lease state after the cut: %v, want %s", props.LeaseState, want)
				}
				if c.committed {
					// The lease is the client's: its renew succeeds.
					if _, err := lc.RenewLease(ctx, nil); err != nil {
						t.Fatalf("renew of the lease whose commit was cut after COMMIT: %v", err)
					}
				}
				if got := download(t, b.client, "cut", name); !bytes.Equal(got, data) {
					t.Fatalf("read back %d bytes, want %d", len(got), len(data))
				}
			})
		}
	})
}
