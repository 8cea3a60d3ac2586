package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
	"github.com/blobgw/blobgw/gateway"
)

// TestFsckInline: a store whose blobs, snapshots and soft-deleted rows
// hold inline extents (bytes in the row, no key) is clean for fsck: no
// missing object is reported for them, and the one backend object (a
// blob over the threshold) is referenced.
func TestFsckInline(t *testing.T) {
	for _, kind := range []string{"sqlite+disk", "postgres+s3"} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			e := newFsckEnv(t, kind, gateway.Options{InlineMaxBytes: 4 << 10})
			if _, err := e.az.CreateContainer(ctx, "fsi", nil); err != nil {
				t.Fatal(err)
			}
			for _, n := range []string{"a", "b", "c"} {
				if _, err := e.az.UploadBuffer(ctx, "fsi", n, []byte("inline bytes of "+n), nil); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := e.az.UploadBuffer(ctx, "fsi", "large", bytes.Repeat([]byte("L"), 5<<10), nil); err != nil {
				t.Fatal(err)
			}
			bc := e.az.ServiceClient().NewContainerClient("fsi").NewBlobClient("b")
			if _, err := bc.CreateSnapshot(ctx, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := e.az.ServiceClient().SetProperties(ctx, &service.SetPropertiesOptions{DeleteRetentionPolicy: &service.RetentionPolicy{Enabled: to.Ptr(true), Days: to.Ptr(int32(2))}}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.az.ServiceClient().NewContainerClient("fsi").NewBlobClient("c").Delete(ctx, &blob.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			rep, code := e.fsckJSON(t)
			if code != 0 || rep.Missing != 0 || rep.Unreferenced != 0 || rep.QueuedReferenced != 0 || rep.Objects != 1 {
				t.Fatalf("fsck --json on a store with inline blobs: exit %d, %+v", code, rep)
			}
		})
	}
}
