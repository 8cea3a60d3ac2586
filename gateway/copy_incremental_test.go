package gateway_test

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/pageblob"
	"github.com/blobgw/blobgw/internal/config"
	"github.com/blobgw/blobgw/leasedb"
)

// TestIncrementalCopy: Incremental Copy Blob of a page blob snapshot of
// this gateway (its URL with a SAS) makes an incremental copy blob
// (x-ms-incremental-copy, x-ms-copy-status success,
// x-ms-copy-destination-snapshot) whose destination snapshot shares the
// source snapshot's objects and reads as it; a newer snapshot copies
// again into a new destination snapshot, the older staying readable; the
// destination itself is read through its snapshots only and refuses
// every write but a newer incremental copy of its source and Delete
// Blob; Azure's refusals for sources and destinations hold.
func TestIncrementalCopy(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		c := b.client
		createContainers(t, c, "disks", "backup")
		const size = 16 << 10
		src := pageClient(c, "disks", "os.vhd")
		if _, err := src.Create(ctx, size, &pageblob.CreateOptions{SequenceNumber: to.Ptr(int64(5)),
			Metadata: map[string]*string{"vm": to.Ptr("web1")}}); err != nil {
			t.Fatal(err)
		}
		model1 := make([]byte, size)
		d1 := randBytes(4096, 61)
		if _, err := src.UploadPages(ctx, rsc{bytes.NewReader(d1)}, rangeOf(1024, 4096), nil); err != nil {
			t.Fatal(err)
		}
		copy(model1[1024:], d1)
		s1, err := src.CreateSnapshot(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		sasURL := withSAS(t, src.URL(), b.cred, "disks", "os.vhd", "r")

		dst := pageClient(c, "backup", "os.bak")
		resp, err := dst.StartCopyIncremental(ctx, sasURL, *s1.Snapshot, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.CopyStatus == nil || *resp.CopyStatus != blob.CopyStatusTypeSuccess || resp.CopyID == nil {
			t.Fatalf("incremental copy answered status %v id %v", resp.CopyStatus, resp.CopyID)
		}
		props, err := dst.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if props.IsIncrementalCopy == nil || !*props.IsIncrementalCopy || props.DestinationSnapshot == nil ||
			*props.CopyStatus != blob.CopyStatusTypeSuccess || *props.CopyID != *resp.CopyID ||
			*props.BlobType != blob.BlobTypePageBlob || *props.ContentLength != size || *props.BlobSequenceNumber != 5 {
			t.Fatalf("destination properties: incremental %v dest snapshot %v status %v type %v length %v seq %v",
				props.IsIncrementalCopy, props.DestinationSnapshot, props.CopyStatus, *props.BlobType, *props.ContentLength, *props.BlobSequenceNumber)
		}
		ds1 := *props.DestinationSnapshot
		dsc1, _ := dst.WithSnapshot(ds1)
		if got := downloadRange(t, dsc1, 0, 0); !bytes.Equal(got, model1) {
			t.Fatal("the destination snapshot does not read as the source snapshot")
		}
		if got := pageRanges(t, dsc1, nil); !slices.Equal(got, [][2]int64{{1024, 5119}}) {
			t.Fatalf("destination snapshot page ranges %v", got)
		}
		sp, err := dsc1.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if sp.IsIncrementalCopy == nil || !*sp.IsIncrementalCopy || *sp.DestinationSnapshot != ds1 || *sp.Metadata["Vm"] != "web1" {
			t.Fatalf("destination snapshot properties: incremental %v dest snapshot %v meta %v", sp.IsIncrementalCopy, sp.DestinationSnapshot, sp.Metadata)
		}
		// No byte copied: the destination snapshot names the source
		// snapshot's objects.
		srcRef := leasedb.BlobRef{Account: config.DevAccountName, Container: "disks", Name: "os.vhd"}
		dstRef := leasedb.BlobRef{Account: config.DevAccountName, Container: "backup", Name: "os.bak"}
		sr, _, err := b.db.GetSnapshot(ctx, srcRef, *s1.Snapshot, leasedb.Conditions{})
		if err != nil {
			t.Fatal(err)
		}
		dr, _, err := b.db.GetSnapshot(ctx, dstRef, ds1, leasedb.Conditions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(sr.Extents) == 0 || !slices.EqualFunc(sr.Extents, dr.Extents, leasedb.Extent.Equal) {
			t.Fatalf("destination snapshot runs %v, source snapshot runs %v", dr.Extents, sr.Extents)
		}

		// The destination itself: read through its snapshots, written by
		// incremental copies only.
		_, err = dst.DownloadStream(ctx, nil)
		wantErr(t, err, 409, "OperationNotAllowedOnIncrementalCopyBlob")
		_, err = dst.NewGetPageRangesPager(nil).NextPage(ctx)
		wantErr(t, err, 409, "OperationNotAllowedOnIncrementalCopyBlob")
		_, err = dst.UploadPages(ctx, rsc{bytes.NewReader(make([]byte, 512))}, rangeOf(0, 512), nil)
		wantErr(t, err, 409, "OperationNotAllowedOnIncrementalCopyBlob")
		_, err = dst.ClearPages(ctx, rangeOf(0, 512), nil)
		wantErr(t, err, 409, "OperationNotAllowedOnIncrementalCopyBlob")
		_, err = dst.Resize(ctx, 512, nil)
		wantErr(t, err, 409, "OperationNotAllowedOnIncrementalCopyBlob")
		_, err = dst.SetMetadata(ctx, map[string]*string{"x": to.Ptr("y")}, nil)
		wantErr(t, err, 409, "OperationNotAllowedOnIncrementalCopyBlob")
		_, err = dst.SetHTTPHeaders(ctx, blob.HTTPHeaders{BlobContentType: to.Ptr("text/plain")}, nil)
		wantErr(t, err, 409, "OperationNotAllowedOnIncrementalCopyBlob")
		_, err = dst.CreateSnapshot(ctx, nil)
		wantErr(t, err, 409, "OperationNotAllowedOnIncrementalCopyBlob")
		_, err = dst.Create(ctx, 512, nil)
		wantErr(t, err, 409, "OperationNotAllowedOnIncrementalCopyBlob")
		_, err = dst.StartCopyFromURL(ctx, src.URL(), nil)
		wantErr(t, err, 409, "OperationNotAllowedOnIncrementalCopyBlob")
		after, err := dst.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *after.ETag != *props.ETag {
			t.Fatal("a refused write changed the incremental copy blob")
		}

		// A newer snapshot: copied into a new destination snapshot.
		model2 := slices.Clone(model1)
		d2 := randBytes(1024, 62)
		if _, err := src.UploadPages(ctx, rsc{bytes.NewReader(d2)}, rangeOf(8192, 1024), nil); err != nil {
			t.Fatal(err)
		}
		copy(model2[8192:], d2)
		if _, err := src.ClearPages(ctx, rangeOf(1024, 512), nil); err != nil {
			t.Fatal(err)
		}
		clear(model2[1024:1536])
		s2, err := src.CreateSnapshot(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dst.StartCopyIncremental(ctx, sasURL, *s2.Snapshot, nil); err != nil {
			t.Fatal(err)
		}
		props2, err := dst.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		ds2 := *props2.DestinationSnapshot
		if ds2 <= ds1 {
			t.Fatalf("second destination snapshot %s, first %s", ds2, ds1)
		}
		dsc2, _ := dst.WithSnapshot(ds2)
		if got := downloadRange(t, dsc2, 0, 0); !bytes.Equal(got, model2) {
			t.Fatal("the second destination snapshot does not read as the newer source snapshot")
		}
		if got := downloadRange(t, dsc1, 0, 0); !bytes.Equal(got, model1) {
			t.Fatal("the first destination snapshot changed")
		}
		changed, cleared, err := diffRanges(t, dsc2, &pageblob.GetPageRangesDiffOptions{PrevSnapshot: to.Ptr(ds1)})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(changed, [][2]int64{{8192, 9215}}) || !slices.Equal(cleared, [][2]int64{{1024, 1535}}) {
			t.Fatalf("diff of the destination snapshots: changed %v cleared %v", changed, cleared)
		}
		// An earlier or the same snapshot again.
		_, err = dst.StartCopyIncremental(ctx, sasURL, *s1.Snapshot, nil)
		wantErr(t, err, 409, "IncrementalCopyOfEarlierSnapshotNotAllowed")
		_, err = dst.StartCopyIncremental(ctx, sasURL, *s2.Snapshot, nil)
		wantErr(t, err, 409, "IncrementalCopyOfEarlierSnapshotNotAllowed")

		// Listing shows the incremental copy blob and its snapshots.
		pager := c.NewListBlobsFlatPager("backup", &container.ListBlobsFlatOptions{Include: container.ListBlobsInclude{Copy: true, Snapshots: true}})
		var listed int
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range page.Segment.BlobItems {
				listed++
				if it.Properties.IncrementalCopy == nil || !*it.Properties.IncrementalCopy || it.Properties.DestinationSnapshot == nil {
					t.Fatalf("listed %s (snapshot %v): incremental %v dest snapshot %v", *it.Name, it.Snapshot, it.Properties.IncrementalCopy, it.Properties.DestinationSnapshot)
				}
			}
		}
		if listed != 3 {
			t.Fatalf("listed %d rows of the incremental copy blob, want the blob and 2 snapshots", listed)
		}

		// Sources and destinations Azure refuses.
		other := pageClient(c, "disks", "data.vhd")
		if _, err := other.Create(ctx, 4096, nil); err != nil {
			t.Fatal(err)
		}
		os1, err := other.CreateSnapshot(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		otherSAS := withSAS(t, other.URL(), b.cred, "disks", "data.vhd", "r")
		_, err = dst.StartCopyIncremental(ctx, otherSAS, *os1.Snapshot, nil)
		wantErr(t, err, 409, "IncrementalCopyBlobMismatch")
		plain := pageClient(c, "backup", "plain")
		if _, err := plain.Create(ctx, 4096, nil); err != nil {
			t.Fatal(err)
		}
		_, err = plain.StartCopyIncremental(ctx, sasURL, *s1.Snapshot, nil)
		wantErr(t, err, 409, "IncrementalCopyBlobMismatch")
		bb := blockClient(c, "backup", "block")
		if _, err := bb.Upload(ctx, nopSeeker("x"), nil); err != nil {
			t.Fatal(err)
		}
		_, err = pageClient(c, "backup", "block").StartCopyIncremental(ctx, sasURL, *s1.Snapshot, nil)
		wantErr(t, err, 409, "InvalidBlobType")
		bs, err := bb.CreateSnapshot(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = pageClient(c, "backup", "fromblock").StartCopyIncremental(ctx, withSAS(t, bb.URL(), b.cred, "backup", "block", "r"), *bs.Snapshot, nil)
		wantErr(t, err, 409, "InvalidBlobType")
		fresh := pageClient(c, "backup", "fresh")
		// Within one account Shared Key is not enough: a SAS or a public
		// container.
		_, err = fresh.StartCopyIncremental(ctx, src.URL(), *s1.Snapshot, nil)
		wantErr(t, err, 403, "CannotVerifyCopySource")
		_, err = fresh.StartCopyIncremental(ctx, "https://elsewhere.example.com/disks/os.vhd", *s1.Snapshot, nil)
		wantErr(t, err, 409, "CannotVerifyCopySource")
		_, err = fresh.StartCopyIncremental(ctx, sasURL, "2001-01-01T00:00:00.0000000Z", nil)
		wantErr(t, err, 404, "BlobNotFound")
		// The source must name a snapshot (the SDK always adds one).
		resp2, _ := b.do(t, http.MethodPut, "backup/fresh?comp=incrementalcopy", "", map[string]string{"x-ms-copy-source": sasURL})
		wantStatus(t, resp2, 409, "IncrementalCopySourceMustBeSnapshot", "a source that is no snapshot")
		resp2, _ = b.do(t, http.MethodPut, "backup/fresh?comp=incrementalcopy", "", nil)
		wantStatus(t, resp2, 400, "MissingRequiredHeader", "no x-ms-copy-source")
		resp2, _ = b.do(t, http.MethodPut, "backup/fresh?comp=incrementalcopy", "", map[string]string{
			"x-ms-copy-source": sasURL + "&snapshot=" + *s1.Snapshot, "x-ms-meta-a": "b"})
		wantStatus(t, resp2, 400, "UnsupportedHeader", "metadata on an incremental copy")
		if _, err := fresh.GetProperties(ctx, nil); statusOf(err) != 404 {
			t.Fatalf("a refused incremental copy left a blob (status %d)", statusOf(err))
		}

		// A source in a public container needs no SAS.
		if _, err := c.ServiceClient().NewContainerClient("disks").SetAccessPolicy(ctx, &container.SetAccessPolicyOptions{
			Access: to.Ptr(container.PublicAccessTypeBlob)}); err != nil {
			t.Fatal(err)
		}
		if _, err := fresh.StartCopyIncremental(ctx, src.URL(), *s2.Snapshot, nil); err != nil {
			t.Fatal(err)
		}
		fp, err := fresh.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		fsc, _ := fresh.WithSnapshot(*fp.DestinationSnapshot)
		if got := downloadRange(t, fsc, 0, 0); !bytes.Equal(got, model2) {
			t.Fatal("an incremental copy from a public container differs")
		}
		if _, err := fresh.Delete(ctx, &blob.DeleteOptions{DeleteSnapshots: to.Ptr(blob.DeleteSnapshotsOptionTypeInclude)}); err != nil {
			t.Fatal(err)
		}

		// Delete Blob takes the destination with its snapshots; the
		// objects go when no name holds them.
		_, err = dst.Delete(ctx, nil)
		wantErr(t, err, 409, "SnapshotsPresent")
		if _, err := dst.Delete(ctx, &blob.DeleteOptions{DeleteSnapshots: to.Ptr(blob.DeleteSnapshotsOptionTypeInclude)}); err != nil {
			t.Fatal(err)
		}
		if _, err := src.Delete(ctx, &blob.DeleteOptions{DeleteSnapshots: to.Ptr(blob.DeleteSnapshotsOptionTypeInclude)}); err != nil {
			t.Fatal(err)
		}
		b.collectNoLeak(t)
	})
}
