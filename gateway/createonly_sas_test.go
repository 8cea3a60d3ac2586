package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
)

// TestCreateOnlySASOverwrite: a create-only SAS (c without w) writing over
// an existing blob is 403 UnauthorizedBlobOverwrite on Put Blob and on Put
// Block List alike, whether the blob is leased (authorization comes
// before the lease's 412) or not, and with If-None-Match: *; nothing is
// stored.
func TestCreateOnlySASOverwrite(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "cosas")
		for _, n := range []string{"plain", "leased"} {
			if _, err := b.client.UploadBuffer(ctx, "cosas", n, []byte("old "+n), nil); err != nil {
				t.Fatal(err)
			}
		}
		lc, err := lease.NewBlobClient(b.client.ServiceClient().NewContainerClient("cosas").NewBlobClient("leased"), nil)
		if err != nil {
			t.Fatal(err)
		}
		acq, err := lc.AcquireLease(ctx, -1, nil)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now().UTC()
		co := b.sasURL(t, "cosas", sas.BlobSignatureValues{Protocol: sas.ProtocolHTTPSandHTTP, StartTime: now.Add(-time.Minute),
			ExpiryTime: now.Add(time.Hour), Permissions: (&sas.ContainerPermissions{Create: true}).String(), ContainerName: "cosas"})
		ifNoneStar := &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: to.Ptr(azcore.ETagAny)}}
		for _, n := range []string{"plain", "leased"} {
			for _, cond := range []*blob.AccessConditions{nil, ifNoneStar} {
				bb := noCredBlob(t, co[:indexQuery(co)]+"/"+n+co[indexQuery(co):])
				_, err := bb.Upload(ctx, nopSeeker("new"), &blockblob.UploadOptions{AccessConditions: cond})
				wantErr(t, err, 403, "UnauthorizedBlobOverwrite")
				// The block is staged with the account key (Put Block needs
				// w) and, on the leased blob, its lease.
				id := "YmxrMQ=="
				stage := &blockblob.StageBlockOptions{}
				if n == "leased" {
					stage.LeaseAccessConditions = &blob.LeaseAccessConditions{LeaseID: acq.LeaseID}
				}
				if _, err := b.client.ServiceClient().NewContainerClient("cosas").NewBlockBlobClient(n).StageBlock(ctx, id, nopSeeker("new"), stage); err != nil {
					t.Fatal(err)
				}
				_, err = bb.CommitBlockList(ctx, []string{id}, &blockblob.CommitBlockListOptions{AccessConditions: cond})
				wantErr(t, err, 403, "UnauthorizedBlobOverwrite")
			}
			if got := string(download(t, b.client, "cosas", n)); got != "old "+n {
				t.Fatalf("%s after refused overwrites: %q", n, got)
			}
		}
		// A new name is still created through the token.
		fresh := noCredBlob(t, co[:indexQuery(co)]+"/fresh"+co[indexQuery(co):])
		if _, err := fresh.Upload(ctx, nopSeeker("fresh"), nil); err != nil {
			t.Fatal(err)
		}
	})
}

// indexQuery is where u's query begins.
func indexQuery(u string) int {
	for i := range u {
		if u[i] == '?' {
			return i
		}
	}
	return len(u)
}
