package gateway_test

import (
	"context"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
)

// TestAccountInfoSKU: Get Account Information, on the service, a container
// and a blob, at the primary and at the secondary endpoint, answers the
// SKU the account behaves as: Standard_RAGRS, since every account's
// secondary endpoint serves reads (before: Standard_LRS, which has no
// secondary); a general-purpose v2 account (StorageV2) without a
// hierarchical namespace.
func TestAccountInfoSKU(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "info")
	if _, err := b.client.UploadBuffer(ctx, "info", "b", []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	type info struct {
		sku  *service.SKUName
		kind *service.AccountKind
		hns  *bool
	}
	for _, c := range []struct {
		name string
		svc  *service.Client
	}{{"primary", b.client.ServiceClient()}, {"secondary", secondaryClient(t, b, b.cred).ServiceClient()}} {
		get := map[string]func() (info, error){
			"service": func() (info, error) {
				r, err := c.svc.GetAccountInfo(ctx, nil)
				return info{r.SKUName, r.AccountKind, r.IsHierarchicalNamespaceEnabled}, err
			},
			"container": func() (info, error) {
				r, err := c.svc.NewContainerClient("info").GetAccountInfo(ctx, nil)
				return info{r.SKUName, r.AccountKind, r.IsHierarchicalNamespaceEnabled}, err
			},
			"blob": func() (info, error) {
				r, err := c.svc.NewContainerClient("info").NewBlobClient("b").GetAccountInfo(ctx, nil)
				return info{r.SKUName, r.AccountKind, r.IsHierarchicalNamespaceEnabled}, err
			},
		}
		for scope, f := range get {
			got, err := f()
			if err != nil {
				t.Fatalf("%s %s: %v", c.name, scope, err)
			}
			if got.sku == nil || *got.sku != service.SKUNameStandardRAGRS {
				t.Errorf("%s %s: x-ms-sku-name %v, want Standard_RAGRS", c.name, scope, deref(got.sku))
			}
			if got.kind == nil || *got.kind != service.AccountKindStorageV2 {
				t.Errorf("%s %s: x-ms-account-kind %v, want StorageV2", c.name, scope, deref(got.kind))
			}
			if got.hns == nil || *got.hns {
				t.Errorf("%s %s: x-ms-is-hns-enabled %v, want false", c.name, scope, deref(got.hns))
			}
		}
	}
}
