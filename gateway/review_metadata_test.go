package gateway_test

import (
	"context"
	"maps"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobgw/blobgw/internal/config"
)

// TestMetadataValueASCII: a metadata value beyond ASCII (valid UTF-8) is
// 400 InvalidMetadata on every operation that takes x-ms-meta-*, as Azure
// answers it, and nothing changes; the ASCII value next to it is stored.
func TestMetadataValueASCII(t *testing.T) {
	b := setup(t, "sqlite+disk")
	ctx := context.Background()
	c := b.client
	createContainers(t, c, "metaascii")
	cc := c.ServiceClient().NewContainerClient("metaascii")
	if _, err := c.UploadBuffer(ctx, "metaascii", "keep", []byte("k"), &azblob.UploadBufferOptions{Metadata: map[string]*string{"m": to.Ptr("old")}}); err != nil {
		t.Fatal(err)
	}
	keep := cc.NewBlockBlobClient("keep")
	if _, err := keep.StageBlock(ctx, blockID(0), nopSeeker("s"), nil); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"café", "a\u00a0b", "日本"} {
		bad := map[string]*string{"m": to.Ptr(v)}
		_, err := c.UploadBuffer(ctx, "metaascii", "new", []byte("x"), &azblob.UploadBufferOptions{Metadata: bad})
		wantErr(t, err, 400, "InvalidMetadata")
		_, err = keep.SetMetadata(ctx, bad, nil)
		wantErr(t, err, 400, "InvalidMetadata")
		_, err = keep.CommitBlockList(ctx, []string{blockID(0)}, &blockblob.CommitBlockListOptions{Metadata: bad})
		wantErr(t, err, 400, "InvalidMetadata")
		_, err = keep.CreateSnapshot(ctx, &blob.CreateSnapshotOptions{Metadata: bad})
		wantErr(t, err, 400, "InvalidMetadata")
		_, err = cc.NewBlockBlobClient("copy").StartCopyFromURL(ctx, keep.URL(), &blob.StartCopyFromURLOptions{Metadata: bad})
		wantErr(t, err, 400, "InvalidMetadata")
		_, err = c.CreateContainer(ctx, "metaascii-new", &azblob.CreateContainerOptions{Metadata: bad})
		wantErr(t, err, 400, "InvalidMetadata")
		_, err = cc.SetMetadata(ctx, &container.SetMetadataOptions{Metadata: bad})
		wantErr(t, err, 400, "InvalidMetadata")
	}
	props, err := keep.GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := lowerMeta(props.Metadata); !maps.Equal(got, map[string]string{"m": "old"}) {
		t.Fatalf("metadata after the refusals: %v", got)
	}
	if _, err := cc.NewBlockBlobClient("new").GetProperties(ctx, nil); statusOf(err) != 404 {
		t.Fatalf("a refused Put Blob stored a blob: %v", err)
	}
	if _, err := c.UploadBuffer(ctx, "metaascii", "ascii", []byte("x"), &azblob.UploadBufferOptions{Metadata: map[string]*string{"m": to.Ptr("cafe ~!")}}); err != nil {
		t.Fatal(err)
	}
}

// TestMetadataNameTwice: two x-ms-meta-* headers of one name, in one
// spelling or differing in case, are 400 InvalidMetadata on Put Blob, Set
// Blob Metadata, Create Container and Set Container Metadata, as Azure
// answers them; the values were joined with "," and stored as one.
// Nothing changes.
func TestMetadataNameTwice(t *testing.T) {
	b := setup(t, "sqlite+disk")
	ctx := context.Background()
	createContainers(t, b.client, "metatwice")
	if _, err := b.client.UploadBuffer(ctx, "metatwice", "keep", []byte("k"), &azblob.UploadBufferOptions{Metadata: map[string]*string{"Old": to.Ptr("o")}}); err != nil {
		t.Fatal(err)
	}
	p := "/" + config.DevAccountName + "/"
	w := dialWire(t, b, b.servers[0].Listener.Addr().String())
	for _, twice := range [][][2]string{
		{{"x-ms-meta-Dup", "a"}, {"x-ms-meta-Dup", "b"}},
		{{"x-ms-meta-Dup", "a"}, {"x-ms-meta-dUP", "b"}},
		{{"x-ms-meta-dup", "a"}, {"x-ms-meta-DUP", "a"}},
	} {
		for _, c := range []struct{ method, path string }{
			{"PUT", p + "metatwice/new"},
			{"PUT", p + "metatwice/keep?comp=metadata"},
			{"PUT", p + "metatwice-new?restype=container"},
			{"PUT", p + "metatwice?restype=container&comp=metadata"},
		} {
			hdr := append([][2]string{{"x-ms-blob-type", "BlockBlob"}}, twice...)
			if status, _, body := w.do(c.method, c.path, hdr, nil); status != 400 || !strings.Contains(string(body), "<Code>InvalidMetadata</Code>") {
				t.Errorf("%s %s with %q: %d %s", c.method, c.path, twice, status, body)
			}
		}
	}
	if got := w.metaOf("HEAD", p+"metatwice/keep"); !maps.Equal(got, map[string]string{"Old": "o"}) {
		t.Errorf("keep's metadata after the refusals: %v", got)
	}
	if got := w.metaOf("HEAD", p+"metatwice?restype=container"); len(got) != 0 {
		t.Errorf("the container's metadata after the refusals: %v", got)
	}
	if _, err := b.client.ServiceClient().NewContainerClient("metatwice").NewBlobClient("new").GetProperties(ctx, nil); statusOf(err) != 404 {
		t.Errorf("a refused Put Blob stored a blob: %v", err)
	}
	if _, err := b.client.ServiceClient().NewContainerClient("metatwice-new").GetProperties(ctx, nil); statusOf(err) != 404 {
		t.Errorf("a refused Create Container made it: %v", err)
	}
}
