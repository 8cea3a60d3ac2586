package gateway_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/blobgw/blobgw/leasedb"
)

// TestCopyFromSnapshot: a snapshot is a copy source (restore a blob from its
// own snapshot, or copy it to another name), with the async and the sync
// form; a snapshot time that does not exist is 404, a version is 501.
func TestCopyFromSnapshot(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "snaps")
		v1 := randBytes(300<<10+5, 31)
		base := putBlocks(t, b.client, "snaps", "doc", v1, 100<<10)
		sr, err := base.CreateSnapshot(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		snap, err := base.WithSnapshot(*sr.Snapshot)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.client.UploadBuffer(ctx, "snaps", "doc", []byte("version two"), nil); err != nil {
			t.Fatal(err)
		}

		// Restore the base from its snapshot: the restored row shares the
		// snapshot's objects, no byte is copied.
		objects := b.countObjects(t)
		resp, err := base.StartCopyFromURL(ctx, snap.URL(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.CopyStatus == nil || *resp.CopyStatus != blob.CopyStatusTypeSuccess {
			t.Fatalf("copy status %v", resp.CopyStatus)
		}
		if got := download(t, b.client, "snaps", "doc"); !bytes.Equal(got, v1) {
			t.Fatalf("restored base: %d bytes, want the snapshot's %d", len(got), len(v1))
		}
		b.wantObjects(t, objects, "restore from a snapshot (more than before: bytes were copied)")
		// Sharing is refused in the commit when the extents are not the
		// name's any more (the source changed after it was read).
		_, _, err = b.db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: leasedb.BlobRef{Account: "devstoreaccount1", Container: "snaps", Name: "doc"},
			Type: "BlockBlob", Extents: []leasedb.Extent{{Key: "b/00/00/not-this-names", Size: 1}}, Copy: leasedb.CopyTarget{SharedExtents: true}})
		if !errors.Is(err, leasedb.ErrSourceGone) {
			t.Fatalf("sharing extents the name does not reference: %v", err)
		}
		// Copy the snapshot to another name (sync form; the snapshot has
		// no stored MD5 to answer with, so the bytes are streamed).
		other := blockClient(b.client, "snaps", "copy-of-snapshot")
		objects = b.countObjects(t)
		if _, err := other.CopyFromURL(ctx, snap.URL(), nil); err != nil {
			t.Fatal(err)
		}
		b.wantObjects(t, objects+1, "copy to another name (one new object)")
		if got := download(t, b.client, "snaps", "copy-of-snapshot"); !bytes.Equal(got, v1) {
			t.Fatal("copy of the snapshot differs")
		}
		// The snapshot itself is untouched, and its bytes survive deleting
		// the base and the snapshot's copies.
		if _, err := base.Delete(ctx, &blob.DeleteOptions{DeleteSnapshots: to.Ptr(blob.DeleteSnapshotsOptionTypeInclude)}); err != nil {
			t.Fatal(err)
		}
		b.collectAll(t)
		if got := download(t, b.client, "snaps", "copy-of-snapshot"); !bytes.Equal(got, v1) {
			t.Fatal("copy of the snapshot lost its bytes when the source went")
		}

		// A snapshot time that does not exist.
		missing, _ := other.WithSnapshot("2001-01-01T00:00:00.0000000Z")
		_, err = blockClient(b.client, "snaps", "x").StartCopyFromURL(ctx, missing.URL(), nil)
		wantErr(t, err, 404, "BlobNotFound")
		// Versioning is off: a source version is a missing source.
		_, err = blockClient(b.client, "snaps", "x").StartCopyFromURL(ctx, other.URL()+"?versionid=2001-01-01T00:00:00.0000000Z", nil)
		wantErr(t, err, 404, "BlobNotFound")
		b.checkNoLeak(t)
	})
}
