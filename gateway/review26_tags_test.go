package gateway_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
)

// TestVersionTagsLeaseCurrent: Set Blob Tags and Get Blob Tags addressed
// to the current version by its ?versionid= take the same lease rules as
// without it: a leased blob's tags are not replaced without x-ms-lease-id
// (412 LeaseIdMissing), and a lease id that does not match the active
// lease is refused (412 LeaseIdMismatchWithBlobOperation), on Set and Get
// alike.
func TestVersionTagsLeaseCurrent(t *testing.T) {
	forKinds(t, versionKinds, func(t *testing.T, kind string) {
		b, _ := setupVersioned(t, kind, "vtags")
		ctx := context.Background()
		up, err := b.client.UploadBuffer(ctx, "vtags", "v", []byte("x"), &azblob.UploadBufferOptions{Tags: map[string]string{"t": "1"}})
		if err != nil {
			t.Fatal(err)
		}
		bc := blockClient(b.client, "vtags", "v")
		cur, err := bc.WithVersionID(*up.VersionID)
		if err != nil {
			t.Fatal(err)
		}
		leaseID := "11111111-2222-3333-4444-555555555555"
		other := "99999999-2222-3333-4444-555555555555"
		if _, err := blobLease(t, bc, leaseID).AcquireLease(ctx, -1, nil); err != nil {
			t.Fatal(err)
		}
		_, err = cur.SetTags(ctx, map[string]string{"t": "2"}, nil)
		wantErr(t, err, 412, "LeaseIdMissing")
		_, err = cur.SetTags(ctx, map[string]string{"t": "2"}, &blob.SetTagsOptions{AccessConditions: withLease(other)})
		wantErr(t, err, 412, "LeaseIdMismatchWithBlobOperation")
		_, err = cur.GetTags(ctx, &blob.GetTagsOptions{BlobAccessConditions: withLease(other)})
		wantErr(t, err, 412, "LeaseIdMismatchWithBlobOperation")
		if got := getTags(t, bc); !reflect.DeepEqual(got, map[string]string{"t": "1"}) {
			t.Fatalf("refused Set Blob Tags changed the tags: %v", got)
		}
		if _, err := cur.SetTags(ctx, map[string]string{"t": "3"}, &blob.SetTagsOptions{AccessConditions: withLease(leaseID)}); err != nil {
			t.Fatal(err)
		}
		resp, err := cur.GetTags(ctx, &blob.GetTagsOptions{BlobAccessConditions: withLease(leaseID)})
		if err != nil {
			t.Fatal(err)
		}
		if got := tagMap(resp.BlobTagSet); !reflect.DeepEqual(got, map[string]string{"t": "3"}) {
			t.Fatalf("tags = %v, want t=3", got)
		}
		// The lease stays on the blob.
		p := getProps(t, bc)
		if p.LeaseState == nil || *p.LeaseState != "leased" {
			t.Fatalf("lease state after Set Blob Tags = %v", p.LeaseState)
		}
	})
}
