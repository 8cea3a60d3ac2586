package gateway_test

import (
	"context"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
	"github.com/blobgw/blobgw/internal/config"
	"github.com/blobgw/blobgw/leasedb/pgtest"
)

// TestSetServicePropertiesRacingReplicas: two Set Blob Service Properties
// on two replicas at once, one turning the DeleteRetentionPolicy off, the
// other setting CORS rules, each naming only its own element. Each merges
// into the document the other wrote (Azure keeps the elements a request
// leaves out), so the stored document has both changes, and the retention
// the document shows is the one deletes act on. A side connection holds
// the document's row lock until both requests wait for it, so they
// certainly overlap; merging a document read before that lock lost one of
// the two changes, and could leave a document that shows soft delete
// enabled while every delete hard-deleted.
func TestSetServicePropertiesRacingReplicas(t *testing.T) {
	b := setup(t, "postgres", setupOpts{replicas: 2})
	ctx := context.Background()
	svc := func(i int) *service.Client { return b.clientFor(t, i).ServiceClient() }
	if _, err := svc(0).SetProperties(ctx, &service.SetPropertiesOptions{
		DeleteRetentionPolicy: &service.RetentionPolicy{Enabled: to.Ptr(true), Days: to.Ptr[int32](7)}}); err != nil {
		t.Fatal(err)
	}
	createContainers(t, b.client, "cont")

	pgtest.RaceBehindLock(t, b.dsn, `SELECT doc FROM service_properties WHERE account = $1 FOR UPDATE`, []any{config.DevAccountName},
		func() error {
			_, err := svc(0).SetProperties(ctx, &service.SetPropertiesOptions{
				DeleteRetentionPolicy: &service.RetentionPolicy{Enabled: to.Ptr(false)}})
			return err
		},
		func() error {
			_, err := svc(1).SetProperties(ctx, &service.SetPropertiesOptions{CORS: testCORSRules()})
			return err
		})

	for i := range b.servers {
		props, err := svc(i).GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(props.CORS) != 2 {
			t.Errorf("replica %d: %d CORS rules after both sets, want 2 (the CORS change was lost)", i, len(props.CORS))
		}
		if p := props.DeleteRetentionPolicy; p == nil || p.Enabled == nil || *p.Enabled {
			t.Errorf("replica %d: DeleteRetentionPolicy %+v after both sets, want disabled (the retention change was lost)", i, p)
		}
	}
	// Deletes act on what the document says: off, so nothing is kept.
	bc := b.client.ServiceClient().NewContainerClient("cont").NewBlockBlobClient("b")
	if _, err := bc.UploadBuffer(ctx, []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := bc.Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}
	kept := listFlat(t, b.client.ServiceClient().NewContainerClient("cont"), container.ListBlobsInclude{Deleted: true}, 10)
	if len(kept) != 0 {
		t.Errorf("soft delete off, yet the deleted blob is kept: %s", render(kept))
	}
}
