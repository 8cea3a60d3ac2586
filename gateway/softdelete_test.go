package gateway_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
)

// setRetention sets the account's blob DeleteRetentionPolicy (0: off)
// through Set Blob Service Properties.
func (b *bundle) setRetention(t *testing.T, days int32) {
	t.Helper()
	p := &service.RetentionPolicy{Enabled: to.Ptr(days > 0)}
	if days > 0 {
		p.Days = to.Ptr(days)
	}
	if _, err := b.client.ServiceClient().SetProperties(context.Background(), &service.SetPropertiesOptions{DeleteRetentionPolicy: p}); err != nil {
		t.Fatal(err)
	}
}

// softListed is one List Blobs entry as the soft delete tests compare it.
type softListed struct {
	name, snapshot string
	deleted        bool
	remaining      int32
}

func (l softListed) String() string {
	s := l.name
	if l.snapshot != "" {
		s += "@" + l.snapshot[:4]
	}
	if l.deleted {
		s += fmt.Sprintf(" (deleted, %d days)", l.remaining)
	}
	return s
}

// listFlat lists a container page by page (pageSize entries) with inc.
func listFlat(t *testing.T, cc *container.Client, inc container.ListBlobsInclude, pageSize int32) []softListed {
	t.Helper()
	var out []softListed
	p := cc.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Include: inc, MaxResults: to.Ptr(pageSize)})
	for p.More() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Segment.BlobItems {
			out = append(out, listedOf(t, it))
		}
	}
	return out
}

func listedOf(t *testing.T, it *container.BlobItem) softListed {
	t.Helper()
	l := softListed{name: *it.Name}
	if it.Snapshot != nil {
		l.snapshot = *it.Snapshot
	}
	if it.Deleted != nil && *it.Deleted {
		l.deleted = true
		if it.Properties.DeletedTime == nil || it.Properties.RemainingRetentionDays == nil {
			t.Fatalf("%s softListed deleted without DeletedTime or RemainingRetentionDays", *it.Name)
		}
		l.remaining = *it.Properties.RemainingRetentionDays
	}
	return l
}

func render(ls []softListed) string {
	s := make([]string, len(ls))
	for i, l := range ls {
		s[i] = l.String()
	}
	return strings.Join(s, ", ")
}

// deleteRaw is Delete Blob by hand, for its x-ms-delete-type-permanent.
func (b *bundle) deleteRaw(t *testing.T, path string, hdr map[string]string) string {
	t.Helper()
	resp, body := b.do(t, "DELETE", path, "", hdr)
	if resp.StatusCode != 202 {
		t.Fatalf("Delete Blob %s: %d %s", path, resp.StatusCode, body)
	}
	return resp.Header.Get("x-ms-delete-type-permanent")
}

// Blob soft delete with snapshots: Get Blob Service Properties returns
// the policy; Delete Blob keeps the blob, its snapshot and the content an
// overwrite replaced (a soft-deleted snapshot); the name reads as absent
// and takes a new blob; Undelete Blob brings back the soft-deleted
// snapshots beside a live blob without touching it, and the base blob
// too once the name is free; every restored byte hashes as written;
// nothing is collected while soft-deleted and nothing leaks.
func TestBlobSoftDeleteUndelete(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		b := setup(t, kind)
		b.setRetention(t, 7)
		props, err := b.client.ServiceClient().GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if p := props.DeleteRetentionPolicy; p == nil || !*p.Enabled || p.Days == nil || *p.Days != 7 {
			t.Fatalf("Get Blob Service Properties DeleteRetentionPolicy = %+v, want enabled, 7 days", p)
		}
		cc := b.newContainer(t, "soft")
		v1, v2, v3 := randBytes(300_000, 1), randBytes(200_000, 2), randBytes(1000, 3)
		if _, err := b.client.UploadBuffer(ctx, "soft", "a", v1, nil); err != nil {
			t.Fatal(err)
		}
		snap, err := cc.NewBlobClient("a").CreateSnapshot(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		// The overwrite keeps v1 as a soft-deleted snapshot.
		if _, err := b.client.UploadBuffer(ctx, "soft", "a", v2, nil); err != nil {
			t.Fatal(err)
		}
		if got := render(listFlat(t, cc, container.ListBlobsInclude{Snapshots: true}, 10)); got != "a@"+(*snap.Snapshot)[:4]+", a" {
			t.Fatalf("listing after the overwrite: %s", got)
		}
		withDeleted := container.ListBlobsInclude{Snapshots: true, Deleted: true}
		if l := listFlat(t, cc, withDeleted, 10); len(l) != 3 || !l[1].deleted || l[1].snapshot == "" || l[1].remaining != 7 || l[2].deleted {
			t.Fatalf("listing with deleted after the overwrite: %s", render(l))
		}
		objects := b.countObjects(t)
		if perm := b.deleteRaw(t, "soft/a", map[string]string{"x-ms-delete-snapshots": "include"}); perm != "false" {
			t.Errorf("x-ms-delete-type-permanent %q, want false", perm)
		}
		_, err = cc.NewBlobClient("a").GetProperties(ctx, nil)
		wantErr(t, err, 404, "BlobNotFound")
		_, err = cc.NewBlobClient("a").DownloadStream(ctx, nil)
		wantErr(t, err, 404, "BlobNotFound")
		if l := listFlat(t, cc, container.ListBlobsInclude{Snapshots: true}, 10); len(l) != 0 {
			t.Fatalf("plain listing shows soft-deleted rows: %s", render(l))
		}
		l := listFlat(t, cc, withDeleted, 1) // one entry a page: the markers resume inside the name
		if len(l) != 3 || !l[0].deleted || !l[1].deleted || !l[2].deleted || l[2].snapshot != "" || l[0].snapshot != *snap.Snapshot {
			t.Fatalf("listing with deleted after Delete Blob: %s", render(l))
		}
		if l := listFlat(t, cc, container.ListBlobsInclude{Deleted: true}, 10); len(l) != 1 || !l[0].deleted || l[0].snapshot != "" {
			t.Fatalf("include=deleted without snapshots: %s", render(l))
		}
		b.collectAll(t)
		b.wantObjects(t, objects, "after collecting a soft-deleted blob")

		// The name is free: a new blob; Undelete Blob then restores the
		// snapshots only and leaves the live blob as it is.
		if _, err := b.client.UploadBuffer(ctx, "soft", "a", v3, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := cc.NewBlobClient("a").Undelete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		checkBytes(t, download(t, b.client, "soft", "a"), v3, "live blob after Undelete Blob")
		for _, pageSize := range []int32{10, 1} {
			l := listFlat(t, cc, withDeleted, pageSize)
			if got := render(l); len(l) != 4 || !strings.HasSuffix(got, "a (deleted, 7 days), a") || strings.Count(got, "deleted") != 1 {
				t.Fatalf("listing (pages of %d) after Undelete Blob beside a live blob: %s", pageSize, got)
			}
		}
		snaps := listFlat(t, cc, container.ListBlobsInclude{Snapshots: true}, 10)
		if len(snaps) != 3 {
			t.Fatalf("snapshots after Undelete Blob: %s", render(snaps))
		}
		for _, s := range snaps[:2] {
			sc, err := cc.NewBlobClient("a").WithSnapshot(s.snapshot)
			if err != nil {
				t.Fatal(err)
			}
			checkBytes(t, downloadClient(t, sc), v1, "restored snapshot "+s.snapshot)
		}

		// Deleting the new blob keeps it too (the older soft-deleted
		// base becomes a soft-deleted snapshot); Undelete Blob restores
		// the newest deletion as the blob.
		b.deleteRaw(t, "soft/a", map[string]string{"x-ms-delete-snapshots": "include"})
		if _, err := cc.NewBlobClient("a").Undelete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		checkBytes(t, download(t, b.client, "soft", "a"), v3, "blob after the second Undelete Blob")
		if l := listFlat(t, cc, container.ListBlobsInclude{Snapshots: true}, 10); len(l) != 4 {
			t.Fatalf("after the second Undelete Blob: %s, want three snapshots and the blob", render(l))
		}
		snapshotOf := func(i int) string {
			return listFlat(t, cc, container.ListBlobsInclude{Snapshots: true}, 10)[i].snapshot
		}
		older, err := cc.NewBlobClient("a").WithSnapshot(snapshotOf(2))
		if err != nil {
			t.Fatal(err)
		}
		checkBytes(t, downloadClient(t, older), v2, "the first deletion, kept as a snapshot")

		// x-ms-delete-snapshots=only soft-deletes the snapshots.
		b.deleteRaw(t, "soft/a", map[string]string{"x-ms-delete-snapshots": "only"})
		if l := listFlat(t, cc, withDeleted, 10); len(l) != 4 || !l[0].deleted || !l[2].deleted || l[3].deleted {
			t.Fatalf("after deleting the snapshots only: %s", render(l))
		}
		if _, err := cc.NewBlobClient("a").Undelete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if l := listFlat(t, cc, withDeleted, 10); len(l) != 4 || strings.Contains(render(l), "deleted") {
			t.Fatalf("after undeleting the snapshots: %s", render(l))
		}
		_, err = cc.NewBlobClient("never").Undelete(ctx, nil)
		wantErr(t, err, 404, "BlobNotFound")
		b.collectNoLeak(t)
	})
}

func checkBytes(t *testing.T, got, want []byte, what string) {
	t.Helper()
	if sha256.Sum256(got) != sha256.Sum256(want) {
		t.Fatalf("%s: %d bytes that do not hash as the %d written", what, len(got), len(want))
	}
}

func downloadClient(t *testing.T, c *blob.Client) []byte {
	t.Helper()
	_, data := getBlob(t, c, nil, c.URL())
	return data
}

// List Blobs include=deleted with a delimiter: soft-deleted blobs roll
// up into their prefixes like live ones (one BlobPrefix however many),
// stand as entries of their own elsewhere, and paging by one entry keeps
// every entry once, in order.
func TestSoftDeleteListDelimited(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		b := setup(t, kind)
		b.setRetention(t, 3)
		createContainers(t, b.client, "tree")
		for _, n := range []string{"d/x", "d/y", "e", "f", "g/z"} {
			if _, err := b.client.UploadBuffer(ctx, "tree", n, []byte(n), nil); err != nil {
				t.Fatal(err)
			}
		}
		for _, n := range []string{"d/x", "d/y", "e", "g/z"} {
			if _, err := b.client.DeleteBlob(ctx, "tree", n, nil); err != nil {
				t.Fatal(err)
			}
		}
		cc := b.client.ServiceClient().NewContainerClient("tree")
		hier := func(inc container.ListBlobsInclude, pageSize int32) string {
			var out []string
			p := cc.NewListBlobsHierarchyPager("/", &container.ListBlobsHierarchyOptions{Include: inc, MaxResults: to.Ptr(pageSize)})
			for p.More() {
				page, err := p.NextPage(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, pr := range page.Segment.BlobPrefixes {
					out = append(out, *pr.Name)
				}
				for _, it := range page.Segment.BlobItems {
					out = append(out, listedOf(t, it).String())
				}
			}
			return strings.Join(out, ", ")
		}
		if got := hier(container.ListBlobsInclude{}, 10); got != "f" {
			t.Errorf("delimited listing without deleted: %s", got)
		}
		// The SDK puts a page's prefixes before its items, so one entry a
		// page keeps the service's order.
		if got, want := hier(container.ListBlobsInclude{Deleted: true}, 1), "d/, e (deleted, 3 days), f, g/"; got != want {
			t.Errorf("delimited listing with deleted: %s, want %s", got, want)
		}
		if got, want := render(listFlat(t, cc, container.ListBlobsInclude{Deleted: true}, 2)), "d/x (deleted, 3 days), d/y (deleted, 3 days), e (deleted, 3 days), f, g/z (deleted, 3 days)"; got != want {
			t.Errorf("flat listing with deleted: %s, want %s", got, want)
		}
	})
}

// Retention expiry by the database clock (moved two days on): the
// collector purges the soft-deleted blob and snapshot and then their
// objects, Undelete Blob finds nothing, nothing leaks; an object a
// live blob still shares stays.
func TestSoftDeleteExpiry(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		b := setup(t, kind)
		b.setRetention(t, 1)
		cc := b.newContainer(t, "exp")
		if _, err := b.client.UploadBuffer(ctx, "exp", "a", randBytes(5000, 4), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := cc.NewBlobClient("a").CreateSnapshot(ctx, nil); err != nil {
			t.Fatal(err)
		}
		keep := randBytes(3000, 5)
		if _, err := b.client.UploadBuffer(ctx, "exp", "keep", keep, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := cc.NewBlobClient("keep").CreateSnapshot(ctx, nil); err != nil {
			t.Fatal(err)
		}
		// The snapshot shares the live blob's object: deleting it alone
		// must not free the object when it expires.
		b.deleteRaw(t, "exp/keep", map[string]string{"x-ms-delete-snapshots": "only"})
		if _, err := b.client.DeleteBlob(ctx, "exp", "a", &blob.DeleteOptions{DeleteSnapshots: to.Ptr(blob.DeleteSnapshotsOptionTypeInclude)}); err != nil {
			t.Fatal(err)
		}
		b.collectAll(t)
		b.wantObjects(t, 2, "before expiry")
		b.setClockOffset(24*time.Hour + time.Minute)
		b.collectAll(t) // purges, queues a's object (grace 0) ...
		b.collectAll(t) // ... and deletes it
		b.wantObjects(t, 1, "after expiry (keep's, still live)")
		if l := listFlat(t, cc, container.ListBlobsInclude{Deleted: true, Snapshots: true}, 10); render(l) != "keep" {
			t.Fatalf("listing after expiry: %s", render(l))
		}
		_, err := cc.NewBlobClient("a").Undelete(ctx, nil)
		wantErr(t, err, 404, "BlobNotFound")
		checkBytes(t, download(t, b.client, "exp", "keep"), keep, "live blob after its snapshot expired")
		b.checkNoLeak(t)
	})
}

// Retention expiry with a real wait: a retention day shortened to 2 s
// (leasedb.DB.RetentionDay, a test hook) passes, and a collection pass
// purges the blob and its objects.
func TestSoftDeleteExpiryWait(t *testing.T) {
	forKinds(t, []string{"sqlite+disk", "postgres+s3"}, func(t *testing.T, kind string) {
		ctx := context.Background()
		const day = 2 * time.Second
		b := setup(t, kind, setupOpts{retentionDay: day})
		b.setRetention(t, 1)
		createContainers(t, b.client, "wait")
		if _, err := b.client.UploadBuffer(ctx, "wait", "a", randBytes(2000, 6), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := b.client.DeleteBlob(ctx, "wait", "a", nil); err != nil {
			t.Fatal(err)
		}
		b.collectAll(t)
		b.wantObjects(t, 1, "before the retention passed")
		time.Sleep(day + 500*time.Millisecond)
		b.collectAll(t)
		b.collectAll(t)
		b.wantObjects(t, 0, "after the retention passed")
		b.checkNoLeak(t)
	})
}

// Soft delete off (the default, or turned off again): Delete Blob deletes
// for good as it always did: x-ms-delete-type-permanent true, nothing
// softListed as deleted, nothing to undelete, the objects collected; the
// policy reads back disabled.
func TestSoftDeleteOff(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		b := setup(t, kind)
		b.setRetention(t, 5)
		b.setRetention(t, 0)
		props, err := b.client.ServiceClient().GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if p := props.DeleteRetentionPolicy; p == nil || *p.Enabled {
			t.Fatalf("DeleteRetentionPolicy %+v, want disabled", p)
		}
		cc := b.newContainer(t, "hard")
		if _, err := b.client.UploadBuffer(ctx, "hard", "a", randBytes(1000, 7), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := b.client.UploadBuffer(ctx, "hard", "a", randBytes(1000, 8), nil); err != nil {
			t.Fatal(err)
		}
		if perm := b.deleteRaw(t, "hard/a", nil); perm != "true" {
			t.Errorf("x-ms-delete-type-permanent %q, want true", perm)
		}
		if l := listFlat(t, cc, container.ListBlobsInclude{Deleted: true, Snapshots: true}, 10); len(l) != 0 {
			t.Fatalf("listing with deleted: %s", render(l))
		}
		_, err = cc.NewBlobClient("a").Undelete(ctx, nil)
		wantErr(t, err, 404, "BlobNotFound")
		b.collectAll(t)
		b.wantObjects(t, 0, "after a hard delete")
		b.checkNoLeak(t)
	})
}

// Soft delete with versioning on, as Azure documents it: an overwrite
// keeps a version (no soft-deleted snapshot), Delete Blob makes the
// current version a previous one and soft-deletes the snapshots it
// deletes; deleting a version soft-deletes it; Undelete Blob restores
// those snapshots and the version (the blob comes back by copying a
// version).
func TestSoftDeleteWithVersioning(t *testing.T) {
	forKinds(t, versionKinds, func(t *testing.T, kind string) {
		ctx := context.Background()
		b, cc := setupVersionedSoft(t, kind, "vsoft")
		v1, v2 := randBytes(4000, 9), randBytes(3000, 10)
		up1, err := b.client.UploadBuffer(ctx, "vsoft", "a", v1, nil)
		if err != nil {
			t.Fatal(err)
		}
		snap, err := cc.NewBlobClient("a").CreateSnapshot(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.client.UploadBuffer(ctx, "vsoft", "a", v2, nil); err != nil {
			t.Fatal(err)
		}
		inc := container.ListBlobsInclude{Snapshots: true, Deleted: true}
		if l := listFlat(t, cc, inc, 10); len(l) != 2 || l[0].deleted || l[1].deleted {
			t.Fatalf("after an overwrite with versioning: %s, want the snapshot and the blob, nothing soft-deleted", render(l))
		}
		b.deleteRaw(t, "vsoft/a", map[string]string{"x-ms-delete-snapshots": "include"})
		_, err = cc.NewBlobClient("a").GetProperties(ctx, nil)
		wantErr(t, err, 404, "BlobNotFound")
		if l := listFlat(t, cc, inc, 10); len(l) != 1 || !l[0].deleted || l[0].snapshot != *snap.Snapshot {
			t.Fatalf("after Delete Blob: %s, want the soft-deleted snapshot", render(l))
		}
		if perm := b.deleteRaw(t, "vsoft/a?versionid="+*up1.VersionID, nil); perm != "false" {
			t.Errorf("Delete Blob ?versionid=: x-ms-delete-type-permanent %q, want false (soft-deleted)", perm)
		}
		_, err = b.versionClient(t, "vsoft", "a", *up1.VersionID).GetProperties(ctx, nil)
		wantErr(t, err, 404, "BlobNotFound")
		if _, err := cc.NewBlobClient("a").Undelete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		checkBytes(t, b.downloadVersion(t, "vsoft", "a", *up1.VersionID), v1, "soft-deleted version after Undelete Blob")
		sc, err := cc.NewBlobClient("a").WithSnapshot(*snap.Snapshot)
		if err != nil {
			t.Fatal(err)
		}
		checkBytes(t, downloadClient(t, sc), v1, "restored snapshot")
		_, err = cc.NewBlobClient("a").GetProperties(ctx, nil)
		wantErr(t, err, 404, "BlobNotFound")
		b.collectNoLeak(t)
	})
}

// The policy round-trips through Get Blob Service Properties with
// AllowPermanentDelete; a refused document (Days 0) leaves it as it was;
// Delete Blob deletetype=permanent of the base blob (it applies to a
// soft-deleted snapshot or version only) is 400 and deletes nothing;
// x-ms-undelete-source is refused.
func TestSoftDeletePolicyRoundTrip(t *testing.T) {
	ctx := context.Background()
	b := setup(t, "sqlite+disk")
	svc := b.client.ServiceClient()
	if _, err := svc.SetProperties(ctx, &service.SetPropertiesOptions{DeleteRetentionPolicy: &service.RetentionPolicy{
		Enabled: to.Ptr(true), Days: to.Ptr[int32](3), AllowPermanentDelete: to.Ptr(true)}}); err != nil {
		t.Fatal(err)
	}
	_, err := svc.SetProperties(ctx, &service.SetPropertiesOptions{DeleteRetentionPolicy: &service.RetentionPolicy{Enabled: to.Ptr(true), Days: to.Ptr[int32](0)}})
	wantErr(t, err, 400, "InvalidXmlDocument")
	props, err := svc.GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := props.DeleteRetentionPolicy
	if p == nil || !*p.Enabled || p.Days == nil || *p.Days != 3 || p.AllowPermanentDelete == nil || !*p.AllowPermanentDelete {
		t.Fatalf("DeleteRetentionPolicy %+v, want enabled, 3 days, AllowPermanentDelete", p)
	}
	createContainers(t, b.client, "pol")
	if _, err := b.client.UploadBuffer(ctx, "pol", "a", []byte("kept"), nil); err != nil {
		t.Fatal(err)
	}
	resp, body := b.do(t, "DELETE", "pol/a?deletetype=permanent", "", nil)
	wantStatus(t, resp, 400, "InvalidQueryParameterValue", "Delete Blob deletetype=permanent of the base blob: "+body)
	if got := string(download(t, b.client, "pol", "a")); got != "kept" {
		t.Fatalf("blob after a refused permanent delete: %q", got)
	}
	resp, body = b.do(t, "PUT", "pol/a?comp=undelete", "", map[string]string{"x-ms-undelete-source": "a?deletionid=1"})
	wantStatus(t, resp, 400, "UnsupportedHeader", "Undelete Blob x-ms-undelete-source: "+body)
}

// Blob soft delete inside container soft delete: a soft-deleted blob
// moves with its container into the hidden account and back on Restore
// Container, its bytes held all the while; Undelete Blob then restores
// it whole. A container purged at its retention's end takes its
// soft-deleted blobs with it, and nothing leaks.
func TestSoftDeleteInDeletedContainer(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		const retention = 2 * time.Second
		b := setup(t, kind, containerRetention(retention))
		b.setRetention(t, 1)
		data := randBytes(40_000, 11)
		for _, name := range []string{"back", "gone"} {
			createContainers(t, b.client, name)
			if _, err := b.client.UploadBuffer(ctx, name, "a", data, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := b.client.DeleteBlob(ctx, name, "a", nil); err != nil {
				t.Fatal(err)
			}
			if _, err := b.client.DeleteContainer(ctx, name, nil); err != nil {
				t.Fatal(err)
			}
		}
		b.collectAll(t)
		b.wantObjects(t, 2, "with both containers soft-deleted")
		b.checkNoLeak(t)
		cc := b.restoreOnlyDeleted(t, "back")
		if l := listFlat(t, cc, container.ListBlobsInclude{Deleted: true}, 10); render(l) != "a (deleted, 1 days)" {
			t.Fatalf("restored container lists %s", render(l))
		}
		if _, err := cc.NewBlobClient("a").Undelete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		checkBytes(t, download(t, b.client, "back", "a"), data, "blob undeleted in a restored container")
		time.Sleep(retention + 500*time.Millisecond)
		b.collectAll(t) // purges "gone" with its soft-deleted blob ...
		b.collectAll(t) // ... and deletes its object
		b.wantObjects(t, 1, "after the purge (the undeleted blob)")
		b.checkNoLeak(t)
	})
}

// TestSoftDeletedRowsSurvivePlainOverwrite: a soft-deleted snapshot that
// shares the current blob's bytes keeps them when the policy was turned
// off since and the blob is overwritten by a plain write (on Postgres the
// few-statement Put Blob, which must count soft-deleted rows among the
// name's rows); Undelete Blob after the policy is back restores it whole.
func TestSoftDeletedRowsSurvivePlainOverwrite(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		b := setup(t, kind)
		cc := b.newContainer(t, "plain")
		v1, v2 := randBytes(100_000, 11), randBytes(5_000, 12)
		if _, err := b.client.UploadBuffer(ctx, "plain", "x", v1, nil); err != nil {
			t.Fatal(err)
		}
		snap, err := cc.NewBlobClient("x").CreateSnapshot(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := cc.NewBlobClient("x").WithSnapshot(*snap.Snapshot)
		if err != nil {
			t.Fatal(err)
		}
		b.setRetention(t, 3)
		if _, err := sc.Delete(ctx, nil); err != nil { // soft-deleted, sharing x's bytes
			t.Fatal(err)
		}
		b.setRetention(t, 0)
		if _, err := b.client.UploadBuffer(ctx, "plain", "x", v2, nil); err != nil {
			t.Fatal(err)
		}
		b.collectAll(t)
		b.setRetention(t, 3)
		if _, err := cc.NewBlobClient("x").Undelete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		checkBytes(t, downloadClient(t, sc), v1, "undeleted snapshot after a plain overwrite")
		checkBytes(t, download(t, b.client, "plain", "x"), v2, "blob")
		b.checkNoLeak(t)
	})
}
