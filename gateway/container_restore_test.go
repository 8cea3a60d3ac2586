package gateway_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
	"github.com/blobgw/blobgw/gateway"
	"github.com/blobgw/blobgw/internal/config"
)

// listAll lists every container of the account, with the deleted ones
// when deleted, in pages of 2 (so the markers between a live container
// and the deleted ones of its name are walked too).
func listAll(t *testing.T, c *azblob.Client, deleted bool) []*service.ContainerItem {
	t.Helper()
	pager := c.NewListContainersPager(&azblob.ListContainersOptions{
		Include: azblob.ListContainersInclude{Deleted: deleted, Metadata: true}, MaxResults: to.Ptr[int32](2)})
	var out []*service.ContainerItem
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.ContainerItems...)
	}
	return out
}

// deletedItems returns the deleted entries named name.
func deletedItems(items []*service.ContainerItem, name string) []*service.ContainerItem {
	var out []*service.ContainerItem
	for _, it := range items {
		if *it.Name == name && it.Deleted != nil && *it.Deleted {
			out = append(out, it)
		}
	}
	return out
}

// onlyDeleted returns the version of the one soft-deleted container
// named name, failing t unless List Containers include=deleted lists
// exactly one.
func (b *bundle) onlyDeleted(t *testing.T, name string) string {
	t.Helper()
	del := deletedItems(listAll(t, b.client, true), name)
	if len(del) != 1 {
		t.Fatalf("%d deleted entries of %s, want 1: %v", len(del), name, del)
	}
	return *del[0].Version
}

// restoreOnlyDeleted restores (Restore Container) the one soft-deleted
// container named name and returns its client.
func (b *bundle) restoreOnlyDeleted(t *testing.T, name string) *container.Client {
	t.Helper()
	svc := b.client.ServiceClient()
	if _, err := svc.RestoreContainer(context.Background(), name, b.onlyDeleted(t, name), nil); err != nil {
		t.Fatalf("restore %s: %v", name, err)
	}
	return svc.NewContainerClient(name)
}

// containerRetention is the setup of a gateway that keeps the dev
// account's deleted containers for d (container soft delete).
func containerRetention(d time.Duration) setupOpts {
	return setupOpts{options: gateway.Options{
		ContainerDeleteRetention: map[string]time.Duration{config.DevAccountName: d}}}
}

// Delete Container with the account's retention on keeps the container
// and everything in it, invisible, while the name is free; List Containers
// include=deleted shows it; Restore Container refuses the name while it is
// taken again and then brings back the blobs, snapshots, tags and
// container metadata, byte for byte, even after collection passes ran
// while it was deleted.
func TestContainerSoftDeleteRestore(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		b := setup(t, kind, containerRetention(7*24*time.Hour))
		svc := b.client.ServiceClient()
		if _, err := b.client.CreateContainer(ctx, "keep", &azblob.CreateContainerOptions{Metadata: map[string]*string{"team": to.Ptr("a")}}); err != nil {
			t.Fatal(err)
		}
		big := randBytes(3<<20+17, 7)
		if _, err := b.client.UploadBuffer(ctx, "keep", "big", big, &azblob.UploadBufferOptions{BlockSize: 1 << 20,
			Tags: map[string]string{"kind": "big"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.client.UploadBuffer(ctx, "keep", "doc", []byte("version one"), nil); err != nil {
			t.Fatal(err)
		}
		doc := svc.NewContainerClient("keep").NewBlobClient("doc")
		snap, err := doc.CreateSnapshot(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.client.UploadBuffer(ctx, "keep", "doc", []byte("version two"), nil); err != nil {
			t.Fatal(err)
		}
		b.collectAll(t)
		objects := b.countObjects(t)

		if _, err := b.client.DeleteContainer(ctx, "keep", nil); err != nil {
			t.Fatal(err)
		}
		// Invisible to the data plane.
		_, err = svc.NewContainerClient("keep").GetProperties(ctx, nil)
		wantErr(t, err, 404, "ContainerNotFound")
		_, err = b.client.DownloadStream(ctx, "keep", "big", nil)
		wantErr(t, err, 404, "ContainerNotFound")
		_, err = svc.NewContainerClient("keep").NewListBlobsFlatPager(nil).NextPage(ctx)
		wantErr(t, err, 404, "ContainerNotFound")
		_, err = b.client.UploadBuffer(ctx, "keep", "new", []byte("x"), nil)
		wantErr(t, err, 404, "ContainerNotFound")
		found, err := svc.FilterBlobs(ctx, `"kind" = 'big'`, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(found.Blobs) != 0 {
			t.Errorf("Find Blobs by Tags finds %d blobs of a deleted container", len(found.Blobs))
		}
		if n := len(listAll(t, b.client, false)); n != 0 {
			t.Fatalf("List Containers shows %d containers, want 0", n)
		}
		// Its bytes are kept through collection passes.
		b.collectAll(t)
		b.wantObjects(t, objects, "after collecting a soft-deleted container")
		b.checkNoLeak(t)

		// The name is free at once; the deleted one is listed beside it.
		if _, err := b.client.CreateContainer(ctx, "keep", nil); err != nil {
			t.Fatalf("re-create: %v", err)
		}
		if _, err := b.client.UploadBuffer(ctx, "keep", "other", []byte("newcomer"), nil); err != nil {
			t.Fatal(err)
		}
		items := listAll(t, b.client, true)
		del := deletedItems(items, "keep")
		if len(items) != 2 || len(del) != 1 {
			t.Fatalf("List Containers include=deleted: %d entries, %d deleted; want 2, 1", len(items), len(del))
		}
		d := del[0]
		if d.Version == nil || len(*d.Version) != 16 || d.Properties.DeletedTime == nil ||
			d.Properties.RemainingRetentionDays == nil || *d.Properties.RemainingRetentionDays != 7 {
			t.Fatalf("deleted entry: version %v, deleted %v, remaining %v", d.Version, d.Properties.DeletedTime, d.Properties.RemainingRetentionDays)
		}
		if since := time.Since(*d.Properties.DeletedTime); since < -time.Minute || since > 10*time.Minute {
			t.Errorf("DeletedTime %v is not about now", *d.Properties.DeletedTime)
		}
		if d.Metadata["team"] == nil || *d.Metadata["team"] != "a" {
			t.Errorf("deleted entry metadata %v", d.Metadata)
		}

		_, err = svc.RestoreContainer(ctx, "keep", *d.Version, nil)
		wantErr(t, err, 409, "ContainerAlreadyExists")
		_, err = svc.RestoreContainer(ctx, "keep", "01D60F8BB59A4652", nil)
		wantErr(t, err, 404, "ContainerNotFound")
		_, err = svc.RestoreContainer(ctx, "never", *d.Version, nil)
		wantErr(t, err, 404, "ContainerNotFound")

		// Deleting the newcomer (soft too) frees the name for the restore.
		if _, err := b.client.DeleteContainer(ctx, "keep", nil); err != nil {
			t.Fatal(err)
		}
		if n := len(deletedItems(listAll(t, b.client, true), "keep")); n != 2 {
			t.Fatalf("%d deleted versions of keep, want 2", n)
		}
		if _, err := svc.RestoreContainer(ctx, "keep", *d.Version, nil); err != nil {
			t.Fatalf("restore: %v", err)
		}
		if got := download(t, b.client, "keep", "big"); sha256.Sum256(got) != sha256.Sum256(big) {
			t.Fatalf("restored big: %d bytes, not the uploaded ones", len(got))
		}
		if got := download(t, b.client, "keep", "doc"); string(got) != "version two" {
			t.Fatalf("restored doc reads %q", got)
		}
		sc, err := doc.WithSnapshot(*snap.Snapshot)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := sc.DownloadStream(ctx, nil)
		if err != nil {
			t.Fatalf("restored snapshot: %v", err)
		}
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(resp.Body)
		resp.Body.Close()
		if buf.String() != "version one" {
			t.Fatalf("restored snapshot reads %q", buf.String())
		}
		tags, err := svc.NewContainerClient("keep").NewBlobClient("big").GetTags(ctx, nil)
		if err != nil || len(tags.BlobTagSet) != 1 || *tags.BlobTagSet[0].Value != "big" {
			t.Fatalf("restored tags: %+v, %v", tags.BlobTagSet, err)
		}
		found, err = svc.FilterBlobs(ctx, `"kind" = 'big'`, nil)
		if err != nil || len(found.Blobs) != 1 {
			t.Fatalf("Find Blobs by Tags after the restore: %+v, %v", found.Blobs, err)
		}
		props, err := svc.NewContainerClient("keep").GetProperties(ctx, nil)
		if err != nil || props.Metadata["Team"] == nil && props.Metadata["team"] == nil {
			t.Fatalf("restored container metadata: %v, %v", props.Metadata, err)
		}
		_, err = b.client.DownloadStream(ctx, "keep", "other", nil)
		wantErr(t, err, 404, "BlobNotFound") // the newcomer's blob is in the other deleted version
		_, err = svc.RestoreContainer(ctx, "keep", *d.Version, nil)
		wantErr(t, err, 404, "ContainerNotFound") // that version is restored: no longer deleted
		b.collectNoLeak(t)
	})
}

// A soft-deleted container past its retention (2 s here; the database
// clock decides) is purged by a collection pass and its bytes collected;
// it can no longer be restored or listed.
func TestContainerSoftDeleteExpiry(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		const retention = 2 * time.Second
		b := setup(t, kind, containerRetention(retention))
		svc := b.client.ServiceClient()
		createContainers(t, b.client, "brief")
		if _, err := b.client.UploadBuffer(ctx, "brief", "a", randBytes(1000, 1), nil); err != nil {
			t.Fatal(err)
		}
		bc := svc.NewContainerClient("brief").NewBlobClient("a")
		if _, err := bc.CreateSnapshot(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.NewContainerClient("brief").NewBlockBlobClient("staged").StageBlock(ctx, blockID(1), nopSeeker("uncommitted"), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := b.client.DeleteContainer(ctx, "brief", nil); err != nil {
			t.Fatal(err)
		}
		del := deletedItems(listAll(t, b.client, true), "brief")
		if len(del) != 1 || *del[0].Properties.RemainingRetentionDays != 1 {
			t.Fatalf("deleted entries %v", del)
		}
		b.collectAll(t)
		b.wantObjects(t, 2, "before expiry (blob, staged block)")
		time.Sleep(retention + 500*time.Millisecond)
		b.collectAll(t) // purges, queues the objects (grace 0) ...
		b.collectAll(t) // ... and deletes them
		b.wantObjects(t, 0, "after expiry")
		if n := len(listAll(t, b.client, true)); n != 0 {
			t.Fatalf("%d containers listed after expiry, want 0", n)
		}
		_, err := svc.RestoreContainer(ctx, "brief", *del[0].Version, nil)
		wantErr(t, err, 404, "ContainerNotFound")
		b.checkNoLeak(t)
	})
}

// Retention off (the default): Delete Container deletes at once, as it
// always did: nothing is listed as deleted, nothing restores, the bytes
// are collected.
func TestContainerDeleteWithoutRetention(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		b := setup(t, kind)
		createContainers(t, b.client, "gone")
		if _, err := b.client.UploadBuffer(ctx, "gone", "a", []byte("bytes"), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := b.client.DeleteContainer(ctx, "gone", nil); err != nil {
			t.Fatal(err)
		}
		if n := len(listAll(t, b.client, true)); n != 0 {
			t.Fatalf("%d containers listed with include=deleted, want 0", n)
		}
		_, err := b.client.ServiceClient().RestoreContainer(ctx, "gone", "01D60F8BB59A4652", nil)
		wantErr(t, err, 404, "ContainerNotFound")
		b.collectAll(t)
		b.wantObjects(t, 0, "after delete + collection")
		b.checkNoLeak(t)
	})
}

// Restore Container's headers: both required, the name must be the
// request's container (no restore under another name).
func TestRestoreContainerHeaders(t *testing.T) {
	b := setup(t, "sqlite", containerRetention(time.Hour))
	ctx := context.Background()
	createContainers(t, b.client, "hdr")
	if _, err := b.client.DeleteContainer(ctx, "hdr", nil); err != nil {
		t.Fatal(err)
	}
	v := b.onlyDeleted(t, "hdr")
	for _, tc := range []struct {
		path   string
		hdr    map[string]string
		status int
		code   string
	}{
		{"hdr", map[string]string{"x-ms-deleted-container-version": v}, 400, "MissingRequiredHeader"},
		{"hdr", map[string]string{"x-ms-deleted-container-name": "hdr"}, 400, "MissingRequiredHeader"},
		{"other", map[string]string{"x-ms-deleted-container-name": "hdr", "x-ms-deleted-container-version": v}, 400, "InvalidHeaderValue"},
		{"hdr", map[string]string{"x-ms-deleted-container-name": "hdr", "x-ms-deleted-container-version": "not-a-version"}, 404, "ContainerNotFound"},
		{"hdr", map[string]string{"x-ms-deleted-container-name": "hdr", "x-ms-deleted-container-version": v}, 201, ""},
	} {
		resp, _ := b.do(t, http.MethodPut, tc.path+"?restype=container&comp=undelete", "", tc.hdr)
		wantStatus(t, resp, tc.status, tc.code, tc.path+" "+tc.code)
	}
	if _, err := b.client.ServiceClient().NewContainerClient("hdr").GetProperties(ctx, nil); err != nil {
		t.Fatalf("restored container: %v", err)
	}
}

// Restore Container by SAS: an account SAS that may create containers
// restores; one that may only read and list is refused, and a service SAS
// never grants it. The container's lease ends with the delete: the
// restored container is not leased.
func TestRestoreContainerSAS(t *testing.T) {
	b := setup(t, "sqlite", containerRetention(time.Hour))
	ctx := context.Background()
	svc := b.client.ServiceClient()
	createContainers(t, b.client, "sas-restore")
	cc := svc.NewContainerClient("sas-restore")
	lc, err := lease.NewContainerClient(cc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lc.AcquireLease(ctx, -1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cc.Delete(ctx, &container.DeleteOptions{AccessConditions: &container.AccessConditions{
		LeaseAccessConditions: &container.LeaseAccessConditions{LeaseID: lc.LeaseID()}}}); err != nil {
		t.Fatal(err)
	}
	v := b.onlyDeleted(t, "sas-restore")
	now := time.Now().UTC()
	client := func(perm sas.AccountPermissions) *service.Client {
		u, err := svc.GetSASURL(sas.AccountResourceTypes{Service: true, Container: true, Object: true}, perm, now.Add(time.Hour), nil)
		if err != nil {
			t.Fatal(err)
		}
		c, err := service.NewClientWithNoCredential(u, &service.ClientOptions{ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	_, err = client(sas.AccountPermissions{Read: true, List: true}).RestoreContainer(ctx, "sas-restore", v, nil)
	wantErr(t, err, 403, "AuthorizationPermissionMismatch")
	svcSAS := b.sasURL(t, "sas-restore", sas.BlobSignatureValues{Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: now.Add(time.Hour),
		ContainerName: "sas-restore", Permissions: (&sas.ContainerPermissions{Read: true, Add: true, Create: true, Write: true, Delete: true, List: true}).String()})
	resp, _ := send(t, mustRequest(t, http.MethodPut, svcSAS+"&restype=container&comp=undelete", map[string]string{
		"x-ms-version": "2025-11-05", "x-ms-deleted-container-name": "sas-restore", "x-ms-deleted-container-version": v}))
	wantStatus(t, resp, 403, "AuthorizationPermissionMismatch", "service SAS")
	if _, err := client(sas.AccountPermissions{Create: true}).RestoreContainer(ctx, "sas-restore", v, nil); err != nil {
		t.Fatalf("restore by account SAS with c: %v", err)
	}
	props, err := cc.GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if *props.LeaseState != "available" {
		t.Errorf("restored container lease state %s, want available", *props.LeaseState)
	}
}

func mustRequest(t *testing.T, method, url string, hdr map[string]string) *http.Request {
	t.Helper()
	r, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	return r
}

// Writers racing a soft delete: each writer uploads until its first
// failure, which must be 404 ContainerNotFound; after the restore every
// acknowledged upload is there with its bytes, the failed ones are not,
// and nothing leaks (a write never lands half in a container being moved).
func TestContainerSoftDeleteRace(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		b := setup(t, kind, containerRetention(time.Hour))
		createContainers(t, b.client, "race")
		const writers = 8
		var (
			wg     sync.WaitGroup
			landed atomic.Int64
			quit   atomic.Int64 // writers that stopped
			acked  = make([][]string, writers)
			failed = make([]string, writers)
			errs   = make([]error, writers)
		)
		body := func(name string) []byte { return append([]byte(name+":"), randBytes(2048, int64(len(name)))...) }
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer quit.Add(1)
				for j := 0; ; j++ {
					name := fmt.Sprintf("w%02d-%04d", i, j)
					if _, err := b.client.UploadBuffer(ctx, "race", name, body(name), nil); err != nil {
						failed[i], errs[i] = name, err
						return
					}
					acked[i] = append(acked[i], name)
					landed.Add(1)
				}
			}()
		}
		for landed.Load() < 3*writers && quit.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		if _, err := b.client.DeleteContainer(ctx, "race", nil); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		b.restoreOnlyDeleted(t, "race")
		n := 0
		for i := range writers {
			wantErr(t, errs[i], 404, "ContainerNotFound")
			_, err := b.client.DownloadStream(ctx, "race", failed[i], nil)
			wantErr(t, err, 404, "BlobNotFound")
			for _, name := range acked[i] {
				if got := download(t, b.client, "race", name); !bytes.Equal(got, body(name)) {
					t.Fatalf("%s: acknowledged bytes not restored", name)
				}
				n++
			}
		}
		var listed int
		pager := b.client.NewListBlobsFlatPager("race", nil)
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			listed += len(page.Segment.BlobItems)
		}
		if listed != n {
			t.Fatalf("restored container lists %d blobs, %d were acknowledged", listed, n)
		}
		b.collectNoLeak(t)
	})
}

// TestContainerSoftDeleteVersions: a soft-deleted container keeps its
// blobs' previous versions (they are rows under it like its blobs), a
// restore brings them back readable, and once its retention passes the
// purge collects their bytes too.
func TestContainerSoftDeleteVersions(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		b, cc := setupVersioned(t, kind, "vers", containerRetention(7*24*time.Hour))
		bc := cc.NewBlockBlobClient("doc")
		first, err := bc.Upload(ctx, rsc{bytes.NewReader([]byte("version one"))}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := bc.Upload(ctx, rsc{bytes.NewReader([]byte("version two"))}, nil); err != nil {
			t.Fatal(err)
		}
		vid := vidOf(t, "Put Blob", first.VersionID)
		if _, err := b.client.DeleteContainer(ctx, "vers", nil); err != nil {
			t.Fatalf("delete a container with versions: %v", err)
		}
		b.collectNoLeak(t)
		b.restoreOnlyDeleted(t, "vers")
		if got := b.downloadVersion(t, "vers", "doc", vid); string(got) != "version one" {
			t.Fatalf("restored version %s reads %q", vid, got)
		}
		if got := download(t, b.client, "vers", "doc"); string(got) != "version two" {
			t.Fatalf("restored blob reads %q", got)
		}
		b.checkNoLeak(t)
	})
}
