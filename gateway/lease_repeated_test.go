package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/google/uuid"
)

// TestLeaseHeadersRepeated: a lease header sent twice is one value, its
// lines joined by "," (as the request is signed, and as Azure reads a
// repeated header): two x-ms-lease-id lines are no GUID, 400
// InvalidHeaderValue, on Lease Blob and on a write. The gateway read the
// first line alone, so a write or a release naming the holder's id and
// another went ahead.
func TestLeaseHeadersRepeated(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "twice")
	if _, err := b.client.UploadBuffer(ctx, "twice", "x", []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	bc := blockClient(b.client, "twice", "x")
	id := uuid.NewString()
	if _, err := blobLease(t, bc, id).AcquireLease(ctx, -1, nil); err != nil {
		t.Fatal(err)
	}
	twice := func(method, query string, hdr map[string]string, leaseIDs ...string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, b.serviceURL(0)+"twice/x?"+query, strings.NewReader(""))
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = 0
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		req.Header["X-Ms-Lease-Id"] = leaseIDs
		b.sign(t, req)
		resp, _ := send(t, req)
		return resp
	}
	other := uuid.NewString()
	resp := twice("PUT", "comp=metadata", map[string]string{"x-ms-meta-k": "v"}, id, other)
	wantStatus(t, resp, http.StatusBadRequest, "InvalidHeaderValue", "Set Blob Metadata with two x-ms-lease-id lines")
	resp = twice("PUT", "comp=lease", map[string]string{"x-ms-lease-action": "release"}, id, other)
	wantStatus(t, resp, http.StatusBadRequest, "InvalidHeaderValue", "release with two x-ms-lease-id lines")
	p, err := bc.GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if *p.LeaseState != lease.StateTypeLeased || len(p.Metadata) != 0 {
		t.Fatalf("a refused request changed the blob: lease %s, metadata %v", *p.LeaseState, p.Metadata)
	}
	// One line is the lease id, as before.
	resp = twice("PUT", "comp=lease", map[string]string{"x-ms-lease-action": "release"}, id)
	wantStatus(t, resp, http.StatusOK, "", "release with the lease id")
}
