package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	"github.com/blobgw/blobgw/internal/config"
)

// versionKinds are the stores the versioning tests run on besides
// TestVersionRoundTrip, which also runs over MinIO.
var versionKinds = []string{"sqlite+disk", "postgres+disk"}

func (b *bundle) setVersioning(t *testing.T, on bool) {
	t.Helper()
	if err := b.db.SetVersioning(context.Background(), config.DevAccountName, on); err != nil {
		t.Fatal(err)
	}
}

// versionClient is the blob client of one version of cont/name.
func (b *bundle) versionClient(t *testing.T, cont, name, vid string) *blob.Client {
	t.Helper()
	v, err := b.client.ServiceClient().NewContainerClient(cont).NewBlobClient(name).WithVersionID(vid)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (b *bundle) downloadVersion(t *testing.T, cont, name, vid string) []byte {
	t.Helper()
	resp, data := getBlob(t, b.versionClient(t, cont, name, vid), nil, cont+"/"+name+" version "+vid)
	if resp.VersionID == nil || *resp.VersionID != vid {
		t.Fatalf("download of version %s answered x-ms-version-id %v", vid, resp.VersionID)
	}
	return data
}

// listedVersion is one List Blobs include=versions entry.
type listedVersion struct {
	name, vid string
	current   bool
}

func (b *bundle) listVersions(t *testing.T, cont string, pageSize int32) []listedVersion {
	t.Helper()
	var out []listedVersion
	pager := b.client.ServiceClient().NewContainerClient(cont).NewListBlobsFlatPager(&container.ListBlobsFlatOptions{
		Include: container.ListBlobsInclude{Versions: true}, MaxResults: to.Ptr(pageSize)})
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Segment.BlobItems {
			lv := listedVersion{name: *it.Name}
			if it.VersionID != nil {
				lv.vid = *it.VersionID
			}
			lv.current = it.IsCurrentVersion != nil && *it.IsCurrentVersion
			out = append(out, lv)
		}
	}
	return out
}

func vidOf(t *testing.T, what string, vid *string) string {
	t.Helper()
	if vid == nil || *vid == "" {
		t.Fatalf("%s: no x-ms-version-id with versioning on", what)
	}
	return *vid
}

// TestVersionRoundTrip: with versioning on, every write that replaces the
// blob (Put Blob, Set Blob Metadata, Put Block List, Copy Blob, Put Blob
// From URL) returns a new, strictly later x-ms-version-id and keeps what
// it replaced as a version: each version reads back (Get Blob, Get Blob
// Properties with x-ms-version-id / x-ms-is-current-version, Get Blob
// Tags), List Blobs include=versions lists them all in order, Set Blob
// Tags / Tier on a version leave the current blob alone, a version
// refuses writes (400) and the current one refuses deletion by its id
// (403 OperationNotAllowedOnRootBlob), deleting a previous version removes
// it only, and a version id the blob never had is 404.
func TestVersionRoundTrip(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b, cc := setupVersioned(t, kind, "ver")
		ctx := context.Background()
		bc := cc.NewBlockBlobClient("doc")
		var vids []string
		contents := map[string][]byte{}
		put := func(data []byte) {
			t.Helper()
			resp, err := bc.Upload(ctx, rsc{bytes.NewReader(data)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			vid := vidOf(t, "Put Blob", resp.VersionID)
			vids = append(vids, vid)
			contents[vid] = data
		}
		put([]byte("version one"))
		put([]byte("version two"))
		md, err := bc.SetMetadata(ctx, map[string]*string{"m": to.Ptr("3")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		vids = append(vids, vidOf(t, "Set Blob Metadata", md.VersionID))
		contents[vids[2]] = []byte("version two")
		putBlocks(t, b.client, "ver", "doc", []byte("version four, in blocks"), 8)
		props, err := bc.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		vids = append(vids, vidOf(t, "Put Block List", props.VersionID))
		contents[vids[3]] = []byte("version four, in blocks")
		if props.IsCurrentVersion == nil || !*props.IsCurrentVersion {
			t.Fatalf("base blob: x-ms-is-current-version %v", props.IsCurrentVersion)
		}
		// Copy Blob and Put Blob From URL from another blob.
		if _, err := b.client.UploadBuffer(ctx, "ver", "other", []byte("copied in"), nil); err != nil {
			t.Fatal(err)
		}
		cp, err := bc.StartCopyFromURL(ctx, blockClient(b.client, "ver", "other").URL(), nil)
		if err != nil {
			t.Fatal(err)
		}
		vids = append(vids, vidOf(t, "Copy Blob", cp.VersionID))
		contents[vids[4]] = []byte("copied in")
		fu, err := bc.UploadBlobFromURL(ctx, blockClient(b.client, "ver", "other").URL(), nil)
		if err != nil {
			t.Fatal(err)
		}
		vids = append(vids, vidOf(t, "Put Blob From URL", fu.VersionID))
		contents[vids[5]] = []byte("copied in")
		if !sort.StringsAreSorted(vids) {
			t.Fatalf("version ids out of order: %v", vids)
		}
		for i := 1; i < len(vids); i++ {
			if vids[i] == vids[i-1] {
				t.Fatalf("version id %s given twice", vids[i])
			}
		}

		for i, vid := range vids {
			if got := b.downloadVersion(t, "ver", "doc", vid); !bytes.Equal(got, contents[vid]) {
				t.Fatalf("version %d (%s) reads %q, want %q", i, vid, got, contents[vid])
			}
			p, err := b.versionClient(t, "ver", "doc", vid).GetProperties(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			current := i == len(vids)-1
			if p.VersionID == nil || *p.VersionID != vid || p.IsCurrentVersion == nil || *p.IsCurrentVersion != current {
				t.Fatalf("properties of version %s: version id %v, current %v; want current %v", vid, p.VersionID, p.IsCurrentVersion, current)
			}
		}
		// Set Blob Metadata made version 2; version 1 has none.
		if p, err := b.versionClient(t, "ver", "doc", vids[2]).GetProperties(ctx, nil); err != nil || len(p.Metadata) != 1 {
			t.Fatalf("version %s lost its metadata: %v %v", vids[2], p.Metadata, err)
		}
		if p, err := b.versionClient(t, "ver", "doc", vids[1]).GetProperties(ctx, nil); err != nil || len(p.Metadata) != 0 {
			t.Fatalf("version %s has metadata %v: %v", vids[1], p.Metadata, err)
		}

		want := []listedVersion{{name: "doc", vid: vids[0]}, {name: "doc", vid: vids[1]}, {name: "doc", vid: vids[2]},
			{name: "doc", vid: vids[3]}, {name: "doc", vid: vids[4]}, {name: "doc", vid: vids[5], current: true}}
		for _, size := range []int32{1, 2, 100} {
			got := b.listVersions(t, "ver", size)
			var doc []listedVersion
			for _, v := range got {
				if v.name == "doc" {
					doc = append(doc, v)
				}
			}
			if fmt.Sprint(doc) != fmt.Sprint(want) {
				t.Fatalf("include=versions, pages of %d:\n got %v\nwant %v", size, doc, want)
			}
		}

		// Tags and tier of an old version change that version only.
		old := b.versionClient(t, "ver", "doc", vids[1])
		if _, err := old.SetTags(ctx, map[string]string{"k": "old"}, nil); err != nil {
			t.Fatal(err)
		}
		if tags, err := old.GetTags(ctx, nil); err != nil || len(tags.BlobTagSet) != 1 || *tags.BlobTagSet[0].Value != "old" {
			t.Fatalf("tags of version %s: %+v %v", vids[1], tags, err)
		}
		if tags, err := bc.GetTags(ctx, nil); err != nil || len(tags.BlobTagSet) != 0 {
			t.Fatalf("tags of the current blob: %+v %v", tags, err)
		}
		if _, err := old.SetTier(ctx, blob.AccessTierCool, nil); err != nil {
			t.Fatal(err)
		}
		if p, err := old.GetProperties(ctx, nil); err != nil || p.AccessTier == nil || *p.AccessTier != "Cool" {
			t.Fatalf("tier of version %s: %v %v", vids[1], p.AccessTier, err)
		}
		if p, err := bc.GetProperties(ctx, nil); err != nil || p.AccessTier == nil || *p.AccessTier != "Hot" {
			t.Fatalf("tier of the current blob: %v %v", p.AccessTier, err)
		}

		// A version is immutable; the current one is not deleted by its id.
		_, err = old.SetMetadata(ctx, map[string]*string{"x": to.Ptr("y")}, nil)
		wantErr(t, err, 400, "InvalidQueryParameterValue")
		resp, body := b.do(t, "PUT", "ver/doc?versionid="+vids[1], "overwrite", map[string]string{"x-ms-blob-type": "BlockBlob"})
		if d := statusDiff(resp, 400, "InvalidQueryParameterValue"); d != "" {
			t.Fatalf("Put Blob on a version: %s\n%s", d, body)
		}
		_, err = b.versionClient(t, "ver", "doc", vids[5]).Delete(ctx, nil)
		wantErr(t, err, 403, "OperationNotAllowedOnRootBlob")
		if got := b.downloadVersion(t, "ver", "doc", vids[1]); !bytes.Equal(got, contents[vids[1]]) {
			t.Fatalf("version %s changed: %q", vids[1], got)
		}

		// Deleting a previous version removes it only.
		if _, err := old.Delete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		_, err = old.DownloadStream(ctx, nil)
		wantErr(t, err, 404, "BlobNotFound")
		if got := b.downloadVersion(t, "ver", "doc", vids[0]); !bytes.Equal(got, contents[vids[0]]) {
			t.Fatalf("version %s after deleting another: %q", vids[0], got)
		}
		if got := download(t, b.client, "ver", "doc"); !bytes.Equal(got, contents[vids[5]]) {
			t.Fatalf("current blob after deleting a version: %q", got)
		}
		missing := b.versionClient(t, "ver", "doc", "2001-01-01T00:00:00.0000000Z")
		_, err = missing.DownloadStream(ctx, nil)
		wantErr(t, err, 404, "BlobNotFound")
		_, err = missing.Delete(ctx, nil)
		wantErr(t, err, 404, "BlobNotFound")
		b.collectNoLeak(t)
	})
}

// TestVersionRacingWriters: 16 writers over two replicas each write once
// with If-Match on the ETag they read, retrying on 412: each success is
// exactly one new version (its id returned once, its bytes in it), and
// List Blobs include=versions shows the first upload and all 16, in the
// order of their ids, the last one current.
func TestVersionRacingWriters(t *testing.T) {
	forKinds(t, versionKinds, func(t *testing.T, kind string) {
		b, cc := setupVersioned(t, kind, "race", setupOpts{replicas: 2})
		ctx := context.Background()
		first, err := cc.NewBlockBlobClient("counter").Upload(ctx, rsc{bytes.NewReader([]byte("writer -1"))}, nil)
		if err != nil {
			t.Fatal(err)
		}
		const writers = 16
		vids := make([]string, writers)
		var wg sync.WaitGroup
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				bc := blockClient(b.clientFor(t, i%2), "race", "counter")
				data := []byte(fmt.Sprintf("writer %d", i))
				for attempt := 0; attempt < 1000; attempt++ {
					p, err := bc.GetProperties(ctx, nil)
					if err != nil {
						t.Error(err)
						return
					}
					resp, err := bc.Upload(ctx, rsc{bytes.NewReader(data)}, &blockblob.UploadOptions{
						AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: p.ETag}}})
					if statusOf(err) == 412 {
						continue
					}
					if err != nil {
						t.Error(err)
						return
					}
					if resp.VersionID == nil {
						t.Errorf("writer %d: no version id", i)
						return
					}
					vids[i] = *resp.VersionID
					return
				}
				t.Errorf("writer %d never won", i)
			}()
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		all := append([]string{*first.VersionID}, vids...)
		seen := map[string]bool{}
		for _, v := range all {
			if seen[v] {
				t.Fatalf("version id %s returned twice", v)
			}
			seen[v] = true
		}
		sort.Strings(all)
		listed := b.listVersions(t, "race", 5)
		if len(listed) != len(all) {
			t.Fatalf("%d versions listed, want %d: %v", len(listed), len(all), listed)
		}
		for i, lv := range listed {
			if lv.vid != all[i] || lv.current != (i == len(all)-1) {
				t.Fatalf("entry %d: %+v, want version %s (current %v)", i, lv, all[i], i == len(all)-1)
			}
		}
		for i, vid := range vids {
			if got := string(b.downloadVersion(t, "race", "counter", vid)); got != fmt.Sprintf("writer %d", i) {
				t.Fatalf("version %s of writer %d holds %q", vid, i, got)
			}
		}
		b.checkNoLeak(t)
	})
}

// TestVersionBytesSurvive: a version's bytes stay readable after the base
// blob is overwritten and deleted (no current blob is left: plain Get is
// 404, as on Azure) and collection runs; no byte is copied to keep them;
// they are collected only when the last row referencing them goes.
func TestVersionBytesSurvive(t *testing.T) {
	forKinds(t, versionKinds, func(t *testing.T, kind string) {
		b, cc := setupVersioned(t, kind, "keep")
		ctx := context.Background()
		data := randBytes(300_000, 5)
		putBlocks(t, b.client, "keep", "b", data, 100_000)
		bc := cc.NewBlockBlobClient("b")
		p, err := bc.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		v1 := vidOf(t, "Put Block List", p.VersionID)
		objects := b.countObjects(t)
		up, err := bc.Upload(ctx, rsc{bytes.NewReader([]byte("second"))}, nil)
		if err != nil {
			t.Fatal(err)
		}
		v2 := vidOf(t, "Put Blob", up.VersionID)
		if _, err := bc.Delete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		_, err = bc.DownloadStream(ctx, nil)
		wantErr(t, err, 404, "BlobNotFound")
		b.collectAll(t)
		b.wantObjects(t, objects+1, "after overwrite and delete (versions keep theirs, nothing copied)")
		if got := b.downloadVersion(t, "keep", "b", v1); !bytes.Equal(got, data) {
			t.Fatal("version 1 lost its bytes")
		}
		if got := b.downloadVersion(t, "keep", "b", v2); string(got) != "second" {
			t.Fatalf("version 2 reads %q", got)
		}
		if got := b.listVersions(t, "keep", 100); fmt.Sprint(got) != fmt.Sprint([]listedVersion{{"b", v1, false}, {"b", v2, false}}) {
			t.Fatalf("listing after delete: %v", got)
		}
		b.checkNoLeak(t)
		// The last row referencing them goes: the objects are collected.
		if _, err := b.versionClient(t, "keep", "b", v2).Delete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		b.collectAll(t)
		if got := b.downloadVersion(t, "keep", "b", v1); !bytes.Equal(got, data) {
			t.Fatal("version 1 lost its bytes when version 2 went")
		}
		if _, err := b.versionClient(t, "keep", "b", v1).Delete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		b.collectAll(t)
		b.wantObjects(t, 0, "left after every version was deleted")
		b.checkNoLeak(t)
	})
}

// TestVersioningOffOnOff: with versioning off nothing changes (no version
// id is returned, nothing is kept); turned on, the blob written before
// becomes a version at its first overwrite; turned off again, writes
// return no version id, and every version made while it was on stays
// readable and listed (the last one written while on among them).
func TestVersioningOffOnOff(t *testing.T) {
	forKinds(t, versionKinds, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "toggle")
		bc := blockClient(b.client, "toggle", "t")
		upload := func(s string) *string {
			t.Helper()
			resp, err := bc.Upload(ctx, rsc{bytes.NewReader([]byte(s))}, nil)
			if err != nil {
				t.Fatal(err)
			}
			return resp.VersionID
		}
		if v := upload("off 1"); v != nil {
			t.Fatalf("versioning off: x-ms-version-id %s", *v)
		}
		if v := upload("off 2"); v != nil {
			t.Fatalf("versioning off: x-ms-version-id %s", *v)
		}
		if got := b.listVersions(t, "toggle", 100); fmt.Sprint(got) != fmt.Sprint([]listedVersion{{name: "t"}}) {
			t.Fatalf("versioning off: listing %v", got)
		}
		b.setVersioning(t, true)
		v1 := vidOf(t, "on", upload("on 1"))
		v2 := vidOf(t, "on", upload("on 2"))
		listed := b.listVersions(t, "toggle", 100)
		if len(listed) != 3 || listed[0].vid == "" || listed[0].vid >= v1 || listed[1].vid != v1 || listed[2] != (listedVersion{"t", v2, true}) {
			t.Fatalf("after turning on: %v", listed)
		}
		vOff := listed[0].vid
		b.setVersioning(t, false)
		if v := upload("off 3"); v != nil {
			t.Fatalf("versioning off again: x-ms-version-id %s", *v)
		}
		if v := upload("off 4"); v != nil {
			t.Fatalf("versioning off again: x-ms-version-id %s", *v)
		}
		for vid, want := range map[string]string{vOff: "off 2", v1: "on 1", v2: "on 2"} {
			if got := string(b.downloadVersion(t, "toggle", "t", vid)); got != want {
				t.Fatalf("version %s reads %q, want %q", vid, got, want)
			}
		}
		p, err := bc.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if p.VersionID != nil || p.IsCurrentVersion != nil {
			t.Fatalf("blob written with versioning off reports version %v current %v", p.VersionID, p.IsCurrentVersion)
		}
		if got := b.listVersions(t, "toggle", 2); fmt.Sprint(got) != fmt.Sprint([]listedVersion{{"t", vOff, false}, {"t", v1, false}, {"t", v2, false}, {name: "t"}}) {
			t.Fatalf("after turning off: %v", got)
		}
		if got := download(t, b.client, "toggle", "t"); string(got) != "off 4" {
			t.Fatalf("current blob %q", got)
		}
		b.collectNoLeak(t)
	})
}

// TestVersionRestoreByCopy: restoring an old version is a copy of it onto
// the base blob (Copy Blob, Copy Blob From URL, Put Blob From URL with a
// versionid source): the base gets the old bytes as a new version, and
// Copy Blob (both forms) copies no byte.
func TestVersionRestoreByCopy(t *testing.T) {
	forKinds(t, versionKinds, func(t *testing.T, kind string) {
		b, cc := setupVersioned(t, kind, "restore")
		ctx := context.Background()
		bc := cc.NewBlockBlobClient("r")
		old := randBytes(200_000, 9)
		up, err := bc.Upload(ctx, rsc{bytes.NewReader(old)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		v1 := vidOf(t, "Put Blob", up.VersionID)
		if _, err := bc.Upload(ctx, rsc{bytes.NewReader([]byte("bad edit"))}, nil); err != nil {
			t.Fatal(err)
		}
		objects := b.countObjects(t)
		src := b.versionClient(t, "restore", "r", v1).URL()
		type restore struct {
			name string
			do   func() (*string, error)
		}
		for _, r := range []restore{
			{"Copy Blob", func() (*string, error) {
				resp, err := bc.StartCopyFromURL(ctx, src, nil)
				return resp.VersionID, err
			}},
			{"Copy Blob From URL", func() (*string, error) {
				resp, err := bc.CopyFromURL(ctx, src, nil)
				return resp.VersionID, err
			}},
			{"Put Blob From URL", func() (*string, error) {
				resp, err := bc.UploadBlobFromURL(ctx, src, nil)
				return resp.VersionID, err
			}},
		} {
			if _, err := bc.Upload(ctx, rsc{bytes.NewReader([]byte("bad edit"))}, nil); err != nil {
				t.Fatal(err)
			}
			vid, err := r.do()
			if err != nil {
				t.Fatalf("%s: %v", r.name, err)
			}
			nv := vidOf(t, r.name, vid)
			if got := download(t, b.client, "restore", "r"); !bytes.Equal(got, old) {
				t.Fatalf("%s: the base reads %d bytes, not the restored version", r.name, len(got))
			}
			if got := b.downloadVersion(t, "restore", "r", nv); !bytes.Equal(got, old) {
				t.Fatalf("%s: the new version does not hold the restored bytes", r.name)
			}
		}
		// Three "bad edit" uploads (one object each) and one copy of
		// the restored bytes: Put Blob From URL streams its source,
		// the two Copy Blob forms share it.
		b.wantObjects(t, objects+4, "after the restores (more: a Copy Blob restore copied bytes)")
		if got := b.downloadVersion(t, "restore", "r", v1); !bytes.Equal(got, old) {
			t.Fatal("the restored version changed")
		}
		b.collectNoLeak(t)
	})
}

// TestVersionLeaseAndConditions: leases and conditional headers apply to
// the current blob as without versioning: a write to a leased blob
// without its lease id is refused and makes no version; If-Match on a
// stale ETag is 412 and makes none; with the lease id the write makes
// one.
func TestVersionLeaseAndConditions(t *testing.T) {
	forKinds(t, versionKinds, func(t *testing.T, kind string) {
		b, cc := setupVersioned(t, kind, "lease")
		ctx := context.Background()
		bc := cc.NewBlockBlobClient("l")
		up, err := bc.Upload(ctx, rsc{bytes.NewReader([]byte("one"))}, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = bc.Upload(ctx, rsc{bytes.NewReader([]byte("two"))}, &blockblob.UploadOptions{
			AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: to.Ptr(azcore.ETag(`"0x1"`))}}})
		wantErr(t, err, 412, "ConditionNotMet")
		leaseID := "6f4d1a8c-2b3e-4c5d-8e9f-0a1b2c3d4e5f"
		resp, _ := b.do(t, "PUT", "lease/l?comp=lease", "", map[string]string{
			"x-ms-lease-action": "acquire", "x-ms-lease-duration": "-1", "x-ms-proposed-lease-id": leaseID})
		if resp.StatusCode != 201 {
			t.Fatalf("acquire: %d", resp.StatusCode)
		}
		_, err = bc.Upload(ctx, rsc{bytes.NewReader([]byte("two"))}, nil)
		wantErr(t, err, 412, "LeaseIdMissing")
		_, err = bc.SetMetadata(ctx, map[string]*string{"m": to.Ptr("1")}, nil)
		wantErr(t, err, 412, "LeaseIdMissing")
		if got := b.listVersions(t, "lease", 100); fmt.Sprint(got) != fmt.Sprint([]listedVersion{{"l", *up.VersionID, true}}) {
			t.Fatalf("refused writes made versions: %v", got)
		}
		ok, err := bc.Upload(ctx, rsc{bytes.NewReader([]byte("two"))}, &blockblob.UploadOptions{
			AccessConditions: &blob.AccessConditions{LeaseAccessConditions: &blob.LeaseAccessConditions{LeaseID: to.Ptr(leaseID)}}})
		if err != nil {
			t.Fatal(err)
		}
		if got := b.listVersions(t, "lease", 100); fmt.Sprint(got) != fmt.Sprint([]listedVersion{{"l", *up.VersionID, false}, {"l", *ok.VersionID, true}}) {
			t.Fatalf("after the leased write: %v", got)
		}
		b.checkNoLeak(t)
	})
}

// TestVersionDeleteSAS: deleting a previous version needs the SAS
// permission x (delete version); d alone deletes the blob but not a
// version, and x alone does not delete the blob.
func TestVersionDeleteSAS(t *testing.T) {
	b, _ := setupVersioned(t, "sqlite+disk", "vsas")
	ctx := context.Background()
	up, err := b.client.UploadBuffer(ctx, "vsas", "v", []byte("one"), nil)
	if err != nil {
		t.Fatal(err)
	}
	v1 := vidOf(t, "Put Blob", up.VersionID)
	if _, err := b.client.UploadBuffer(ctx, "vsas", "v", []byte("two"), nil); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	token := func(p sas.BlobPermissions) *blob.Client {
		t.Helper()
		u := b.sasURL(t, "vsas/v", sas.BlobSignatureValues{Protocol: sas.ProtocolHTTPSandHTTP, StartTime: now.Add(-time.Minute),
			ExpiryTime: now.Add(time.Hour), Permissions: p.String(), ContainerName: "vsas"})
		return noCredBlob(t, u).BlobClient()
	}
	version := func(c *blob.Client) *blob.Client {
		t.Helper()
		v, err := c.WithVersionID(v1)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	_, err = version(token(sas.BlobPermissions{Delete: true})).Delete(ctx, nil)
	wantErr(t, err, 403, "AuthorizationPermissionMismatch")
	_, err = token(sas.BlobPermissions{DeletePreviousVersion: true}).Delete(ctx, nil)
	wantErr(t, err, 403, "AuthorizationPermissionMismatch")
	if got := b.downloadVersion(t, "vsas", "v", v1); string(got) != "one" {
		t.Fatalf("version reads %q after refused deletes", got)
	}
	if _, err := version(token(sas.BlobPermissions{DeletePreviousVersion: true})).Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}
	_, err = b.versionClient(t, "vsas", "v", v1).GetProperties(ctx, nil)
	wantErr(t, err, 404, "")
}

// TestVersionListHierarchy: List Blobs with a delimiter and
// include=versions lists the versions of the names at its level (a name
// whose current blob was deleted included) and rolls deeper names up into
// one prefix.
func TestVersionListHierarchy(t *testing.T) {
	b, cc := setupVersioned(t, "postgres+disk", "vtree")
	ctx := context.Background()
	for _, n := range []string{"a", "a", "dir/x", "dir/x", "gone"} {
		if _, err := b.client.UploadBuffer(ctx, "vtree", n, []byte(n), nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.client.DeleteBlob(ctx, "vtree", "gone", nil); err != nil {
		t.Fatal(err)
	}
	var got []string
	pager := cc.NewListBlobsHierarchyPager("/", &container.ListBlobsHierarchyOptions{
		Include: container.ListBlobsInclude{Versions: true}, MaxResults: to.Ptr(int32(2))})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range page.Segment.BlobPrefixes {
			got = append(got, "prefix "+*p.Name)
		}
		for _, it := range page.Segment.BlobItems {
			got = append(got, fmt.Sprintf("%s current=%v", *it.Name, it.IsCurrentVersion != nil && *it.IsCurrentVersion))
		}
	}
	// A page holds its prefixes apart from its blobs: compare as a set
	// of entries in page order of kind.
	sort.Strings(got)
	want := []string{"a current=false", "a current=true", "gone current=false", "prefix dir/"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("hierarchical listing with versions:\n got %q\nwant %q", got, want)
	}
}
