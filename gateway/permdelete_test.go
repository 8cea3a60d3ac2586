package gateway_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
	"github.com/blobgw/blobgw/internal/config"
)

// setPermanentDelete sets a DeleteRetentionPolicy of days with
// AllowPermanentDelete allow.
func (b *bundle) setPermanentDelete(t *testing.T, days int32, allow bool) {
	t.Helper()
	p := &service.RetentionPolicy{Enabled: to.Ptr(true), Days: to.Ptr(days), AllowPermanentDelete: to.Ptr(allow)}
	if _, err := b.client.ServiceClient().SetProperties(context.Background(), &service.SetPropertiesOptions{DeleteRetentionPolicy: p}); err != nil {
		t.Fatal(err)
	}
}

var permanent = &blob.DeleteOptions{BlobDeleteType: to.Ptr(blob.DeleteTypePermanent)}

// softSnapshots returns the ids of cont/name's soft-deleted snapshots, as
// List Blobs include=snapshots,deleted lists them.
func softSnapshots(t *testing.T, cc *container.Client, name string) []string {
	t.Helper()
	var out []string
	for _, l := range listFlat(t, cc, container.ListBlobsInclude{Snapshots: true, Deleted: true}, 100) {
		if l.name == name && l.snapshot != "" && l.deleted {
			out = append(out, l.snapshot)
		}
	}
	return out
}

func (b *bundle) snapshotClient(t *testing.T, cont, name, snap string) *blob.Client {
	t.Helper()
	c, err := b.client.ServiceClient().NewContainerClient(cont).NewBlobClient(name).WithSnapshot(snap)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Delete Blob deletetype=permanent (the SDK's DeleteTypePermanent) under
// a policy with AllowPermanentDelete: a soft-deleted snapshot (the
// content an overwrite replaced, whose bytes no other row holds) goes for
// good and its bytes are collected; a soft-deleted snapshot sharing its
// bytes with the live blob goes and the bytes stay; a soft-deleted
// version goes, its bytes are collected, and Undelete Blob brings back
// neither while it restores the other soft-deleted version. Nothing
// leaks. Before, every deletetype was 501.
func TestPermanentDeleteSoftDeleted(t *testing.T) {
	forKinds(t, versionKinds, func(t *testing.T, kind string) {
		ctx := context.Background()
		b := setup(t, kind)
		b.setPermanentDelete(t, 3, true)
		cc := b.newContainer(t, "perm")
		x1, x2 := randBytes(3000, 31), randBytes(2000, 32)
		for _, x := range [][]byte{x1, x2} {
			if _, err := b.client.UploadBuffer(ctx, "perm", "a", x, nil); err != nil {
				t.Fatal(err)
			}
		}
		over := softSnapshots(t, cc, "a") // x1, kept by the overwrite
		if len(over) != 1 {
			t.Fatalf("soft-deleted snapshots after an overwrite: %v, want one", over)
		}
		snap, err := cc.NewBlobClient("a").CreateSnapshot(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.snapshotClient(t, "perm", "a", *snap.Snapshot).Delete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if got := softSnapshots(t, cc, "a"); len(got) != 2 {
			t.Fatalf("soft-deleted snapshots: %v, want two", got)
		}
		b.collectAll(t)
		b.wantObjects(t, 2, "before the permanent deletes")

		if _, err := b.snapshotClient(t, "perm", "a", over[0]).Delete(ctx, permanent); err != nil {
			t.Fatal(err)
		}
		if got := softSnapshots(t, cc, "a"); len(got) != 1 || got[0] != *snap.Snapshot {
			t.Fatalf("soft-deleted snapshots after one permanent delete: %v, want only %s", got, *snap.Snapshot)
		}
		b.collectAll(t)
		b.wantObjects(t, 1, "after permanently deleting the only row of x1")
		if _, err := b.snapshotClient(t, "perm", "a", over[0]).Delete(ctx, permanent); err == nil {
			t.Fatal("a second permanent delete of the same snapshot succeeded")
		} else {
			wantErr(t, err, 404, "BlobNotFound")
		}

		if perm := b.deleteRaw(t, "perm/a?snapshot="+*snap.Snapshot+"&deletetype=permanent", nil); perm != "true" {
			t.Errorf("permanent delete: x-ms-delete-type-permanent %q, want true", perm)
		}
		if got := softSnapshots(t, cc, "a"); len(got) != 0 {
			t.Fatalf("soft-deleted snapshots after both permanent deletes: %v", got)
		}
		if _, err := cc.NewBlobClient("a").Undelete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if got := listFlat(t, cc, container.ListBlobsInclude{Snapshots: true, Deleted: true}, 100); render(got) != "a" {
			t.Fatalf("after Undelete Blob: %s, want the live blob only", render(got))
		}
		b.collectAll(t)
		checkBytes(t, download(t, b.client, "perm", "a"), x2, "live blob after permanent deletes of its snapshots")
		b.wantObjects(t, 1, "x2, shared by the deleted snapshot and the blob")

		// Versions.
		b.setVersioning(t, true)
		y := [][]byte{randBytes(1500, 33), randBytes(1200, 34), randBytes(900, 35)}
		var vids []string
		for _, x := range y {
			vids = append(vids, b.uploadVersion(t, "perm", "v", x))
		}
		for _, v := range vids[:2] {
			if _, err := b.versionClient(t, "perm", "v", v).Delete(ctx, nil); err != nil {
				t.Fatal(err)
			}
		}
		b.collectAll(t)
		before := b.countObjects(t)
		if _, err := b.versionClient(t, "perm", "v", vids[0]).Delete(ctx, permanent); err != nil {
			t.Fatal(err)
		}
		both := container.ListBlobsInclude{Versions: true, Deleted: true}
		if got, want := listSoftVersions(t, cc, both, 100, vids...), "a, v@v2 (deleted, 3 days), v@v3*"; got != want {
			t.Errorf("include=versions,deleted after a permanent delete: %s, want %s", got, want)
		}
		b.collectAll(t)
		b.wantObjects(t, before-1, "after permanently deleting a version")
		if _, err := cc.NewBlobClient("v").Undelete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		_, err = b.versionClient(t, "perm", "v", vids[0]).GetProperties(ctx, nil)
		wantErr(t, err, 404, "BlobNotFound")
		checkBytes(t, b.downloadVersion(t, "perm", "v", vids[1]), y[1], "the other version undeleted")
		checkBytes(t, download(t, b.client, "perm", "v"), y[2], "current version")
		b.collectNoLeak(t)
	})
}

// What deletetype=permanent refuses, each leaving everything as it was: a
// policy without AllowPermanentDelete (400 InvalidQueryParameterValue on
// deletetype), a live snapshot, a previous version and the current one
// (404 BlobNotFound: no soft-deleted row of the id), the base blob and a
// deletetype other than permanent (400 InvalidQueryParameterValue), a
// lease or condition header (400 UnsupportedHeader).
func TestPermanentDeleteRefused(t *testing.T) {
	forKinds(t, versionKinds, func(t *testing.T, kind string) {
		ctx := context.Background()
		b, cc := setupVersioned(t, kind, "ref")
		b.setPermanentDelete(t, 3, false)
		var vids []string
		for i := 0; i < 3; i++ {
			vids = append(vids, b.uploadVersion(t, "ref", "a", randBytes(700, int64(40+i))))
		}
		live, err := cc.NewBlobClient("a").CreateSnapshot(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		gone, err := cc.NewBlobClient("a").CreateSnapshot(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.snapshotClient(t, "ref", "a", *gone.Snapshot).Delete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := b.versionClient(t, "ref", "a", vids[0]).Delete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		state := func() string {
			return render(listFlat(t, cc, container.ListBlobsInclude{Snapshots: true, Versions: true, Deleted: true}, 100))
		}
		want := state()

		_, err = b.snapshotClient(t, "ref", "a", *gone.Snapshot).Delete(ctx, permanent)
		wantErr(t, err, 400, "InvalidQueryParameterValue")
		_, err = b.versionClient(t, "ref", "a", vids[0]).Delete(ctx, permanent)
		wantErr(t, err, 400, "InvalidQueryParameterValue")

		b.setPermanentDelete(t, 3, true)
		_, err = b.snapshotClient(t, "ref", "a", *live.Snapshot).Delete(ctx, permanent)
		wantErr(t, err, 404, "BlobNotFound")
		_, err = b.versionClient(t, "ref", "a", vids[1]).Delete(ctx, permanent)
		wantErr(t, err, 404, "BlobNotFound")
		_, err = b.versionClient(t, "ref", "a", vids[2]).Delete(ctx, permanent)
		wantErr(t, err, 404, "BlobNotFound")
		_, err = cc.NewBlobClient("a").Delete(ctx, permanent)
		wantErr(t, err, 400, "InvalidQueryParameterValue")
		resp, body := b.do(t, "DELETE", "ref/a?snapshot="+*gone.Snapshot+"&deletetype=soft", "", nil)
		wantStatus(t, resp, 400, "InvalidQueryParameterValue", "deletetype=soft: "+body)
		for h, v := range map[string]string{"x-ms-lease-id": "0f8fad5b-d9cb-469f-a165-70867728950e", "If-Match": "*", "x-ms-delete-snapshots": "include"} {
			resp, body := b.do(t, "DELETE", "ref/a?snapshot="+*gone.Snapshot+"&deletetype=permanent", "", map[string]string{h: v})
			wantStatus(t, resp, 400, "UnsupportedHeader", "permanent delete with "+h+": "+body)
		}
		if got := state(); got != want {
			t.Fatalf("after refused permanent deletes:\n got %s\nwant %s", got, want)
		}
		if !strings.Contains(want, "(deleted") {
			t.Fatalf("nothing soft-deleted to protect: %s", want)
		}
		b.checkNoLeak(t)
	})
}

// A SAS authorizes deletetype=permanent with y (permanent delete) only:
// a service or account SAS with d and x is 403
// AuthorizationPermissionMismatch and deletes nothing; with y alone it
// deletes.
func TestPermanentDeleteSAS(t *testing.T) {
	forKinds(t, versionKinds, func(t *testing.T, kind string) {
		ctx := context.Background()
		b := setup(t, kind)
		b.setPermanentDelete(t, 3, true)
		cc := b.newContainer(t, "sasp")
		if _, err := b.client.UploadBuffer(ctx, "sasp", "a", randBytes(800, 50), nil); err != nil {
			t.Fatal(err)
		}
		var snaps []string
		for i := 0; i < 2; i++ {
			s, err := cc.NewBlobClient("a").CreateSnapshot(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.snapshotClient(t, "sasp", "a", *s.Snapshot).Delete(ctx, nil); err != nil {
				t.Fatal(err)
			}
			snaps = append(snaps, *s.Snapshot)
		}
		cred, err := azblob.NewSharedKeyCredential(config.DevAccountName, config.DevAccountKey)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now().UTC()
		serviceSAS := func(p sas.BlobPermissions) string {
			qp, err := sas.BlobSignatureValues{Protocol: sas.ProtocolHTTPSandHTTP, StartTime: now.Add(-time.Minute), ExpiryTime: now.Add(time.Hour),
				ContainerName: "sasp", BlobName: "a", Permissions: p.String()}.SignWithSharedKey(cred)
			if err != nil {
				t.Fatal(err)
			}
			return qp.Encode()
		}
		accountSAS := func(p sas.AccountPermissions) string {
			qp, err := sas.AccountSignatureValues{Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: now.Add(time.Hour),
				Permissions: p.String(), ResourceTypes: to.Ptr(sas.AccountResourceTypes{Object: true}).String()}.SignWithSharedKey(cred)
			if err != nil {
				t.Fatal(err)
			}
			return qp.Encode()
		}
		del := func(snap, token string) error {
			c, err := blob.NewClientWithNoCredential(b.serviceURL(0)+"sasp/a?snapshot="+snap+"&"+token, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Delete(ctx, permanent)
			return err
		}
		err = del(snaps[0], serviceSAS(sas.BlobPermissions{Read: true, Delete: true, DeletePreviousVersion: true, Write: true}))
		wantErr(t, err, 403, "AuthorizationPermissionMismatch")
		err = del(snaps[0], accountSAS(sas.AccountPermissions{Read: true, Delete: true, DeletePreviousVersion: true, Write: true}))
		wantErr(t, err, 403, "AuthorizationPermissionMismatch")
		if got := softSnapshots(t, cc, "a"); len(got) != 2 {
			t.Fatalf("soft-deleted snapshots after refused SAS deletes: %v, want both", got)
		}
		if err := del(snaps[0], serviceSAS(sas.BlobPermissions{PermanentDelete: true})); err != nil {
			t.Fatalf("service SAS y: %v", err)
		}
		if err := del(snaps[1], accountSAS(sas.AccountPermissions{PermanentDelete: true})); err != nil {
			t.Fatalf("account SAS y: %v", err)
		}
		if got := softSnapshots(t, cc, "a"); len(got) != 0 {
			t.Fatalf("soft-deleted snapshots after SAS permanent deletes: %v", got)
		}
		b.collectNoLeak(t)
	})
}
