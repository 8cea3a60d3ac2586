package gateway_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/pageblob"
)

// TestPageBlobCopyForms: Copy Blob From URL (x-ms-requires-sync) of a page
// blob is 409 CannotVerifyCopySource, as Azure answers a source that is
// not a block blob, and creates nothing; the async Copy Blob of a page
// blob in another gateway (fetched with its SAS) makes a page blob of the
// same bytes, length and sequence number that takes Put Page.
func TestPageBlobCopyForms(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		remote := setup(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "disks")
		createContainers(t, remote.client, "disks")
		const size = 8 << 10
		local := pageClient(b.client, "disks", "local")
		if _, err := local.Create(ctx, size, nil); err != nil {
			t.Fatal(err)
		}
		dst := b.client.ServiceClient().NewContainerClient("disks").NewBlobClient("sync")
		_, err := dst.CopyFromURL(ctx, local.URL(), nil)
		wantErr(t, err, 409, "CannotVerifyCopySource")
		if _, err := dst.GetProperties(ctx, nil); statusOf(err) != 404 {
			t.Fatalf("a refused sync copy left a blob (status %d)", statusOf(err))
		}

		// An append blob source too (Copy Blob From URL copies committed
		// block blobs only); async Copy Blob copies it as an append blob.
		ab := b.client.ServiceClient().NewContainerClient("disks").NewAppendBlobClient("log")
		if _, err := ab.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		_, err = dst.CopyFromURL(ctx, ab.URL(), nil)
		wantErr(t, err, 409, "CannotVerifyCopySource")
		if _, err := dst.GetProperties(ctx, nil); statusOf(err) != 404 {
			t.Fatalf("a refused sync copy of an append blob left a blob (status %d)", statusOf(err))
		}
		if _, err := dst.StartCopyFromURL(ctx, ab.URL(), nil); err != nil {
			t.Fatal(err)
		}
		if p, err := dst.GetProperties(ctx, nil); err != nil || p.BlobType == nil || *p.BlobType != "AppendBlob" {
			t.Fatalf("async copy of an append blob: %v, %+v", err, p.BlobType)
		}
		if _, err := dst.Delete(ctx, nil); err != nil {
			t.Fatal(err)
		}

		src := pageClient(remote.client, "disks", "os.vhd")
		if _, err := src.Create(ctx, size, &pageblob.CreateOptions{SequenceNumber: to.Ptr(int64(7))}); err != nil {
			t.Fatal(err)
		}
		model := make([]byte, size)
		data := randBytes(1536, 51)
		if _, err := src.UploadPages(ctx, rsc{bytes.NewReader(data)}, rangeOf(2048, 1536), nil); err != nil {
			t.Fatal(err)
		}
		copy(model[2048:], data)
		sasURL := withSAS(t, src.URL(), remote.cred, "disks", "os.vhd", "r")
		// The sync form refuses a remote page blob the same way.
		_, err = dst.CopyFromURL(ctx, sasURL, nil)
		wantErr(t, err, 409, "CannotVerifyCopySource")

		cp := pageClient(b.client, "disks", "copy.vhd")
		resp, err := cp.StartCopyFromURL(ctx, sasURL, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *resp.CopyStatus != blob.CopyStatusTypeSuccess {
			t.Fatalf("copy status %v", *resp.CopyStatus)
		}
		props, err := cp.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *props.BlobType != blob.BlobTypePageBlob || *props.ContentLength != size || props.BlobSequenceNumber == nil || *props.BlobSequenceNumber != 7 {
			t.Fatalf("remote page blob copy: type %v length %v seq %v", *props.BlobType, *props.ContentLength, props.BlobSequenceNumber)
		}
		if got := downloadRange(t, cp, 0, 0); !bytes.Equal(got, model) {
			t.Fatal("the copy of a remote page blob differs")
		}
		more := randBytes(512, 52)
		if _, err := cp.UploadPages(ctx, rsc{bytes.NewReader(more)}, rangeOf(0, 512), nil); err != nil {
			t.Fatal(err)
		}
		copy(model, more)
		if got := downloadRange(t, cp, 0, 0); !bytes.Equal(got, model) {
			t.Fatal("the copy does not take Put Page")
		}
		b.checkNoLeak(t)
	})
}
