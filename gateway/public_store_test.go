package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/blobgw/blobgw/gateway"
	"github.com/blobgw/blobgw/internal/gwtest"
	"github.com/blobgw/blobgw/leasedb"
)

// failingReads is a store whose reads (View) fail while fail is set; it
// offers none of the optional one-statement reads, so every read of the
// container goes through View.
type failingReads struct {
	leasedb.Store
	fail atomic.Bool
}

func (s *failingReads) View(ctx context.Context, fn func(leasedb.Tx) error) error {
	if s.fail.Load() {
		return errors.New("test: the metadata store cannot be read")
	}
	return s.Store.View(ctx, fn)
}

// TestPublicReadStoreFailure: an anonymous read whose container the
// metadata store cannot read is a server error, never 401
// NoAuthenticationInformation (which tells the caller to sign, not to
// retry), as a SAS whose stored access policy cannot be read is.
func TestPublicReadStoreFailure(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	cc := b.client.ServiceClient().NewContainerClient("pubfail")
	if _, err := cc.Create(ctx, &container.CreateOptions{Access: to.Ptr(container.PublicAccessTypeContainer)}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.client.UploadBuffer(ctx, "pubfail", "a", []byte("public"), nil); err != nil {
		t.Fatal(err)
	}
	store := &failingReads{Store: b.stores[0]}
	gw := gateway.New(&leasedb.DB{Store: store}, b.backend, gwtest.DevAccounts(t), gwtest.Discard(), gateway.Options{})
	t.Cleanup(func() {
		store.fail.Store(false)
		if err := gw.Close(context.Background()); err != nil {
			t.Errorf("gateway close: %v", err)
		}
	})
	srv := serveGateway(gw)
	t.Cleanup(srv.Close)
	anon := func(path string) *http.Response {
		req, err := http.NewRequest("GET", srv.URL+"/devstoreaccount1/"+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, _ := send(t, req)
		return resp
	}
	wantStatus(t, anon("pubfail/a"), 200, "", "anonymous read of a public blob")
	store.fail.Store(true)
	for _, path := range []string{"pubfail/a", "pubfail?restype=container&comp=list"} {
		if resp := anon(path); resp.StatusCode < 500 {
			t.Errorf("anonymous GET %s with the store failing: %d %s, want a server error", path, resp.StatusCode, resp.Header.Get("x-ms-error-code"))
		}
	}
}
