package gateway_test

import (
	"context"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/google/uuid"
)

// TestSnapshots: a snapshot survives overwrite and (with include/only)
// deletion rules of the base; it shares the base's bytes, which are
// collected only when the last row referencing them goes.
func TestSnapshots(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind) // grace 0: due objects go at the next pass
		ctx := context.Background()
		createContainers(t, b.client, "snaps")
		up, err := b.client.UploadBuffer(ctx, "snaps", "doc", []byte("version one"), &azblob.UploadBufferOptions{Metadata: map[string]*string{"v": to.Ptr("1")}})
		if err != nil {
			t.Fatal(err)
		}
		bc := b.client.ServiceClient().NewContainerClient("snaps").NewBlobClient("doc")
		sr, err := bc.CreateSnapshot(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if sr.Snapshot == nil || *sr.ETag != *up.ETag {
			t.Fatalf("snapshot without metadata must keep the base ETag: %v %v", sr.Snapshot, sr.ETag)
		}
		snap1 := *sr.Snapshot
		// Same bytes, no copy: still 1 object.
		b.wantObjects(t, 1, "after a snapshot (shared)")
		// Overwrite the base; the snapshot keeps version one.
		if _, err := b.client.UploadBuffer(ctx, "snaps", "doc", []byte("version two!"), nil); err != nil {
			t.Fatal(err)
		}
		b.collectAll(t)
		b.wantObjects(t, 2, "after overwrite + collection (snapshot keeps v1)")
		sc, err := bc.WithSnapshot(snap1)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := sc.DownloadStream(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		data := make([]byte, 64)
		n, _ := resp.Body.Read(data)
		resp.Body.Close()
		if string(data[:n]) != "version one" {
			t.Fatalf("snapshot content %q", data[:n])
		}
		p, err := sc.GetProperties(ctx, nil)
		if err != nil || *p.ContentLength != 11 || lowerMeta(p.Metadata)["v"] != "1" {
			t.Fatalf("snapshot properties: %v %+v", err, p)
		}
		// A snapshot with its own metadata gets its own ETag.
		sr2, err := bc.CreateSnapshot(ctx, &blob.CreateSnapshotOptions{Metadata: map[string]*string{"tag": to.Ptr("two")}})
		if err != nil {
			t.Fatal(err)
		}
		cur, err := bc.GetProperties(ctx, nil)
		if err != nil {
			t.Fatalf("Get Properties: %v", err)
		}
		if *sr2.ETag == *cur.ETag || *sr2.Snapshot == snap1 {
			t.Fatal("a snapshot with metadata needs its own ETag and a new id")
		}
		// Snapshots are read-only.
		_, err = sc.SetMetadata(ctx, map[string]*string{"x": to.Ptr("y")}, nil)
		wantErr(t, err, 400, "InvalidQueryParameterValue")
		// Listing with include=snapshots: snapshots first, oldest first, then the base.
		page, err := b.client.ServiceClient().NewContainerClient("snaps").NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Include: container.ListBlobsInclude{Snapshots: true}}).NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, it := range page.Segment.BlobItems {
			s := ""
			if it.Snapshot != nil {
				s = *it.Snapshot
			}
			got = append(got, s)
		}
		if len(got) != 3 || got[0] != snap1 || got[1] != *sr2.Snapshot || got[2] != "" {
			t.Fatalf("listing with snapshots: %q", got)
		}
		// Deleting the base needs a decision about the snapshots.
		_, err = bc.Delete(ctx, nil)
		wantErr(t, err, 409, "SnapshotsPresent")
		if _, err := bc.Delete(ctx, &blob.DeleteOptions{DeleteSnapshots: to.Ptr(blob.DeleteSnapshotsOptionTypeOnly)}); err != nil {
			t.Fatal(err)
		}
		if _, err := sc.GetProperties(ctx, nil); statusOf(err) != 404 {
			t.Fatalf("snapshot after delete only: %v", err)
		}
		b.collectAll(t)
		b.wantObjects(t, 1, "after deleting the snapshots")
		// Delete one snapshot by id, then base with include.
		sr3, err := bc.CreateSnapshot(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		sc3, _ := bc.WithSnapshot(*sr3.Snapshot)
		if _, err := sc3.Delete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		b.collectAll(t)
		b.wantObjects(t, 1, "after deleting a snapshot that shares the base's bytes (they stay)")
		if _, err := bc.CreateSnapshot(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := bc.Delete(ctx, &blob.DeleteOptions{DeleteSnapshots: to.Ptr(blob.DeleteSnapshotsOptionTypeInclude)}); err != nil {
			t.Fatal(err)
		}
		b.collectAll(t)
		b.wantObjects(t, 0, "after deleting blob and snapshots")
		b.checkNoLeak(t)
	})
}

// TestSnapshotLease: Snapshot Blob checks x-ms-lease-id as a read does
// (optional on a leased blob, but it must match when sent).
func TestSnapshotLease(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "snl")
	if _, err := b.client.UploadBuffer(ctx, "snl", "x", []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	id := uuid.NewString()
	bb := blockClient(b.client, "snl", "x")
	if _, err := blobLease(t, bb, id).AcquireLease(ctx, -1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := bb.CreateSnapshot(ctx, nil); err != nil {
		t.Fatalf("snapshot without a lease id on a leased blob: %v", err)
	}
	_, err := bb.CreateSnapshot(ctx, &blob.CreateSnapshotOptions{AccessConditions: withLease(uuid.NewString())})
	wantErr(t, err, 412, "LeaseIdMismatchWithBlobOperation")
	if _, err := bb.CreateSnapshot(ctx, &blob.CreateSnapshotOptions{AccessConditions: withLease(id)}); err != nil {
		t.Fatal(err)
	}
}
