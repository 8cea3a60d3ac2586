package gateway_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// listSoftVersions lists a container flat, pageSize entries a page, with
// inc, and renders each entry: the name, "@vN" for a version (N its
// place among want's version ids, "@?" for another), "*" when it is the
// current version, " (deleted, D days)" for a soft-deleted one, which
// must carry DeletedTime.
func listSoftVersions(t *testing.T, cc *container.Client, inc container.ListBlobsInclude, pageSize int32, vids ...string) string {
	t.Helper()
	var out []string
	for _, it := range flatItems(t, cc, &container.ListBlobsFlatOptions{Include: inc, MaxResults: to.Ptr(pageSize)}) {
		s := *it.Name
		if it.VersionID != nil {
			n := "?"
			for i, v := range vids {
				if v == *it.VersionID {
					n = fmt.Sprint(i + 1)
				}
			}
			s += "@v" + n
		}
		if it.IsCurrentVersion != nil && *it.IsCurrentVersion {
			s += "*"
		}
		if it.Deleted != nil && *it.Deleted {
			if it.Properties.DeletedTime == nil || it.Properties.RemainingRetentionDays == nil {
				t.Fatalf("%s listed deleted without DeletedTime or RemainingRetentionDays", s)
			}
			s += fmt.Sprintf(" (deleted, %d days)", *it.Properties.RemainingRetentionDays)
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

// Delete Blob ?versionid= with versioning and a DeleteRetentionPolicy on
// soft-deletes the version, as Azure does: 202 with
// x-ms-delete-type-permanent false; Get Blob and Get Blob Properties of
// it are 404 until undeleted, and a second delete is 404; List Blobs
// include=versions no longer lists it, include=versions,deleted lists it
// among the versions by id (VersionId, Deleted, DeletedTime,
// RemainingRetentionDays) at every page size, include=deleted alone not
// at all; its bytes stay. Undelete Blob restores every soft-deleted
// version, readable with its bytes, and leaves the current version as it
// is. Nothing leaks. Before, the delete was 501.
func TestSoftDeletedVersions(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		b, cc := setupVersionedSoft(t, kind, "softv")
		x1, x2, x3, y1 := randBytes(3000, 21), randBytes(2000, 22), randBytes(1000, 23), randBytes(500, 24)
		var vids []string
		for _, x := range [][]byte{x1, x2, x3} {
			vids = append(vids, b.uploadVersion(t, "softv", "a", x))
		}
		if _, err := b.client.UploadBuffer(ctx, "softv", "b", y1, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := b.versionClient(t, "softv", "a", vids[0]).Delete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if perm := b.deleteRaw(t, "softv/a?versionid="+vids[1], nil); perm != "false" {
			t.Errorf("Delete Blob ?versionid= under a retention: x-ms-delete-type-permanent %q, want false", perm)
		}
		for _, v := range vids[:2] {
			_, err := b.versionClient(t, "softv", "a", v).GetProperties(ctx, nil)
			wantErr(t, err, 404, "BlobNotFound")
			_, err = b.versionClient(t, "softv", "a", v).DownloadStream(ctx, nil)
			wantErr(t, err, 404, "BlobNotFound")
			_, err = b.versionClient(t, "softv", "a", v).Delete(ctx, nil)
			wantErr(t, err, 404, "BlobNotFound")
		}
		checkBytes(t, download(t, b.client, "softv", "a"), x3, "current version after deleting the others")

		if got, want := listSoftVersions(t, cc, container.ListBlobsInclude{Versions: true}, 100, vids...), "a@v3*, b@v?*"; got != want {
			t.Errorf("include=versions: %s, want %s", got, want)
		}
		both := container.ListBlobsInclude{Versions: true, Deleted: true}
		want := "a@v1 (deleted, 2 days), a@v2 (deleted, 2 days), a@v3*, b@v?*"
		for _, size := range []int32{1, 2, 100} {
			if got := listSoftVersions(t, cc, both, size, vids...); got != want {
				t.Errorf("include=versions,deleted, pages of %d:\n got %s\nwant %s", size, got, want)
			}
		}
		if got, want := listSoftVersions(t, cc, container.ListBlobsInclude{Deleted: true}, 100, vids...), "a@v3*, b@v?*"; got != want {
			t.Errorf("include=deleted: %s, want %s", got, want)
		}
		b.collectAll(t)
		b.wantObjects(t, 4, "with two soft-deleted versions")

		if _, err := cc.NewBlobClient("a").Undelete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		checkBytes(t, b.downloadVersion(t, "softv", "a", vids[0]), x1, "first version undeleted")
		checkBytes(t, b.downloadVersion(t, "softv", "a", vids[1]), x2, "second version undeleted")
		checkBytes(t, download(t, b.client, "softv", "a"), x3, "current version after Undelete Blob")
		if got, want := listSoftVersions(t, cc, both, 1, vids...), "a@v1, a@v2, a@v3*, b@v?*"; got != want {
			t.Errorf("after Undelete Blob: %s, want %s", got, want)
		}
		b.collectNoLeak(t)
	})
}

// With versioning on, Undelete Blob of a name whose current version was
// deleted restores its soft-deleted versions and no current blob (Azure:
// restoring a version as current is a copy onto the base); a version id
// made after a soft-deleted one is later than it; with the retention off
// again a version delete is permanent, and the version soft-deleted
// before stays listed.
func TestUndeleteVersionsNoCurrent(t *testing.T) {
	forKinds(t, versionKinds, func(t *testing.T, kind string) {
		ctx := context.Background()
		b, cc := setupVersionedSoft(t, kind, "noc")
		x1, x2 := randBytes(700, 25), randBytes(800, 26)
		v1 := b.uploadVersion(t, "noc", "a", x1)
		b.deleteRaw(t, "noc/a", nil) // v1 becomes a previous version
		b.deleteRaw(t, "noc/a?versionid="+v1, nil)
		_, err := cc.NewBlobClient("a").GetProperties(ctx, nil)
		wantErr(t, err, 404, "BlobNotFound")
		if got, want := listSoftVersions(t, cc, container.ListBlobsInclude{Versions: true, Deleted: true}, 100, v1), "a@v1 (deleted, 2 days)"; got != want {
			t.Errorf("listing: %s, want %s", got, want)
		}
		if _, err := cc.NewBlobClient("a").Undelete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		checkBytes(t, b.downloadVersion(t, "noc", "a", v1), x1, "undeleted version")
		_, err = cc.NewBlobClient("a").GetProperties(ctx, nil)
		wantErr(t, err, 404, "BlobNotFound")
		if got, want := listSoftVersions(t, cc, container.ListBlobsInclude{Versions: true, Deleted: true}, 100, v1), "a@v1"; got != want {
			t.Errorf("after Undelete Blob: %s, want %s", got, want)
		}
		// Soft-delete it again, then write: the new id follows it.
		b.deleteRaw(t, "noc/a?versionid="+v1, nil)
		v2 := b.uploadVersion(t, "noc", "a", x2)
		if v2 <= v1 {
			t.Errorf("version id %s after the soft-deleted %s", v2, v1)
		}
		// Retention off: a version deleted now goes for good.
		if _, err := b.client.UploadBuffer(ctx, "noc", "a", x1, nil); err != nil {
			t.Fatal(err)
		}
		b.setRetention(t, 0)
		if perm := b.deleteRaw(t, "noc/a?versionid="+v2, nil); perm != "true" {
			t.Errorf("Delete Blob ?versionid= without a retention: x-ms-delete-type-permanent %q, want true", perm)
		}
		if got, want := listSoftVersions(t, cc, container.ListBlobsInclude{Versions: true, Deleted: true}, 100, v1, v2), "a@v1 (deleted, 2 days), a@v?*"; got != want {
			t.Errorf("after a permanent delete: %s, want %s", got, want)
		}
		b.collectNoLeak(t)
	})
}

// Retention expiry of soft-deleted versions by the database clock: the
// collector purges them and then the objects no other row holds; a
// version sharing its bytes with the current blob (Set Blob Metadata)
// keeps them; Undelete Blob then restores nothing; nothing leaks.
func TestSoftDeletedVersionExpiry(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		b, cc := setupVersionedSoft(t, kind, "vexp")
		x1, x2 := randBytes(4000, 27), randBytes(4000, 28)
		up1, err := b.client.UploadBuffer(ctx, "vexp", "a", x1, nil)
		if err != nil {
			t.Fatal(err)
		}
		// v2 shares x1's object with v1; v3 holds x2.
		md, err := cc.NewBlobClient("a").SetMetadata(ctx, map[string]*string{"k": to.Ptr("v")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.client.UploadBuffer(ctx, "vexp", "a", x2, nil); err != nil {
			t.Fatal(err)
		}
		v1, v2 := vidOf(t, "upload", up1.VersionID), vidOf(t, "set metadata", md.VersionID)
		b.deleteRaw(t, "vexp/a?versionid="+v1, nil)
		b.collectAll(t)
		b.wantObjects(t, 2, "before expiry")
		b.setClockOffset(2*24*time.Hour + time.Minute)
		b.collectAll(t) // purges v1; x1 stays, v2 holds it
		b.collectAll(t)
		b.wantObjects(t, 2, "after v1 expired (v2 holds x1)")
		checkBytes(t, b.downloadVersion(t, "vexp", "a", v2), x1, "version sharing the purged one's bytes")
		b.deleteRaw(t, "vexp/a?versionid="+v2, nil) // expires two days from the moved clock
		b.setClockOffset(4*24*time.Hour + 2*time.Minute)
		b.collectAll(t)
		b.collectAll(t)
		b.wantObjects(t, 1, "after both expired (the current blob's)")
		if _, err := cc.NewBlobClient("a").Undelete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if got, want := listSoftVersions(t, cc, container.ListBlobsInclude{Versions: true, Deleted: true}, 100), "a@v?*"; got != want {
			t.Errorf("listing after the purge: %s, want %s", got, want)
		}
		_, err = b.versionClient(t, "vexp", "a", v1).GetProperties(ctx, nil)
		wantErr(t, err, 404, "BlobNotFound")
		checkBytes(t, download(t, b.client, "vexp", "a"), x2, "current blob after the purge")
		b.checkNoLeak(t)
	})
}

// Versioning turned on after a soft delete: the name holds a soft-deleted
// base (deleted while versioning was off) and, once its versioned blob is
// deleted too, previous versions and no current blob. List Blobs
// include=deleted,deletedwithversions lists both, the HasVersionsOnly
// entry (the versions' place) before the soft-deleted base, flat and with
// a delimiter; Undelete Blob then restores the soft-deleted base as the
// current blob (the name has none) and keeps the versions.
func TestSoftDeletedBaseAndVersionsOnly(t *testing.T) {
	forKinds(t, versionKinds, func(t *testing.T, kind string) {
		ctx := context.Background()
		b := setup(t, kind)
		b.setRetention(t, 2)
		cc := b.newContainer(t, "mix")
		x1, x2 := randBytes(111, 29), randBytes(222, 30)
		if _, err := b.client.UploadBuffer(ctx, "mix", "a", x1, nil); err != nil {
			t.Fatal(err)
		}
		b.deleteRaw(t, "mix/a", nil) // soft-deleted base
		b.setVersioning(t, true)
		v1 := b.uploadVersion(t, "mix", "a", x2)
		b.deleteRaw(t, "mix/a", nil) // v1 becomes a previous version

		inc := container.ListBlobsInclude{Deleted: true, DeletedWithVersions: true}
		want := "a (versions only, 222 bytes), a (deleted)"
		for _, size := range []int32{1, 100} {
			if got := listVersionsOnly(t, cc, inc, "", size); got != want {
				t.Errorf("include=deleted,deletedwithversions, pages of %d:\n got %s\nwant %s", size, got, want)
			}
			if got := listVersionsOnlyTree(t, cc, inc, "", size); got != want {
				t.Errorf("include=deleted,deletedwithversions with a delimiter, pages of %d:\n got %s\nwant %s", size, got, want)
			}
		}
		if _, err := cc.NewBlobClient("a").Undelete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		checkBytes(t, download(t, b.client, "mix", "a"), x1, "soft-deleted base undeleted")
		checkBytes(t, b.downloadVersion(t, "mix", "a", v1), x2, "version after Undelete Blob")
		if got, want := listVersionsOnly(t, cc, inc, "", 100), "a"; got != want {
			t.Errorf("after Undelete Blob: %s, want %s", got, want)
		}
		b.collectNoLeak(t)
	})
}

// A soft-deleted version inside container soft delete: it moves with its
// container into the hidden account and back on Restore Container, its
// bytes held all the while; List Blobs include=versions,deleted then
// lists it and Undelete Blob restores it whole. Nothing leaks.
func TestSoftDeletedVersionInDeletedContainer(t *testing.T) {
	forKinds(t, versionKinds, func(t *testing.T, kind string) {
		ctx := context.Background()
		b, _ := setupVersionedSoft(t, kind, "vback", containerRetention(time.Hour))
		x1, x2 := randBytes(9000, 31), randBytes(100, 32)
		v1 := b.uploadVersion(t, "vback", "a", x1)
		if _, err := b.client.UploadBuffer(ctx, "vback", "a", x2, nil); err != nil {
			t.Fatal(err)
		}
		b.deleteRaw(t, "vback/a?versionid="+v1, nil)
		if _, err := b.client.DeleteContainer(ctx, "vback", nil); err != nil {
			t.Fatal(err)
		}
		b.collectAll(t)
		b.wantObjects(t, 2, "with the container soft-deleted")
		b.checkNoLeak(t)
		cc := b.restoreOnlyDeleted(t, "vback")
		if got, want := listSoftVersions(t, cc, container.ListBlobsInclude{Versions: true, Deleted: true}, 100, v1), "a@v1 (deleted, 2 days), a@v?*"; got != want {
			t.Fatalf("restored container lists %s, want %s", got, want)
		}
		if _, err := cc.NewBlobClient("a").Undelete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		checkBytes(t, b.downloadVersion(t, "vback", "a", v1), x1, "version undeleted in a restored container")
		b.collectNoLeak(t)
	})
}

// A soft-deleted version that shares the current blob's bytes keeps them
// when versioning and the policy were turned off since and the blob is
// overwritten by a plain write (on Postgres the few-statement Put Blob,
// whose check of the name's other rows must count soft-deleted versions);
// Undelete Blob restores it whole.
func TestSoftDeletedVersionSurvivesPlainOverwrite(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		b, cc := setupVersionedSoft(t, kind, "vplain")
		x1 := randBytes(6000, 33)
		v1 := b.uploadVersion(t, "vplain", "a", x1)
		// With versioning off, Set Blob Metadata keeps v1 as a version
		// and leaves a current blob without a version id on the same
		// bytes.
		b.setVersioning(t, false)
		if _, err := cc.NewBlobClient("a").SetMetadata(ctx, map[string]*string{"k": to.Ptr("v")}, nil); err != nil {
			t.Fatal(err)
		}
		b.deleteRaw(t, "vplain/a?versionid="+v1, nil)
		b.setRetention(t, 0)
		if _, err := b.client.UploadBuffer(ctx, "vplain", "a", randBytes(10, 34), nil); err != nil {
			t.Fatal(err)
		}
		b.collectAll(t)
		b.wantObjects(t, 2, "after the plain overwrite (the soft-deleted version keeps x1)")
		if _, err := cc.NewBlobClient("a").Undelete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		checkBytes(t, b.downloadVersion(t, "vplain", "a", v1), x1, "soft-deleted version after a plain overwrite")
		b.checkNoLeak(t)
	})
}
