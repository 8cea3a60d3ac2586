package gateway_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// listVersionsOnly lists a container flat, pageSize entries a page, and
// renders each entry with renderVersionsOnly.
func listVersionsOnly(t *testing.T, cc *container.Client, inc container.ListBlobsInclude, prefix string, pageSize int32) string {
	t.Helper()
	var out []string
	opts := &container.ListBlobsFlatOptions{Include: inc, MaxResults: to.Ptr(pageSize), Prefix: prefixOpt(prefix)}
	for _, it := range flatItems(t, cc, opts) {
		out = append(out, renderVersionsOnly(t, it))
	}
	return strings.Join(out, ", ")
}

// listVersionsOnlyTree is listVersionsOnly with the delimiter "/": a
// BlobPrefix renders as its name; within a page the prefixes and blobs
// are merged back in name order (the SDK returns them apart).
func listVersionsOnlyTree(t *testing.T, cc *container.Client, inc container.ListBlobsInclude, prefix string, pageSize int32) string {
	t.Helper()
	var out []string
	opts := &container.ListBlobsHierarchyOptions{Include: inc, MaxResults: to.Ptr(pageSize), Prefix: prefixOpt(prefix)}
	p := cc.NewListBlobsHierarchyPager("/", opts)
	for p.More() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		type entry struct{ name, s string }
		var es []entry
		for _, bp := range page.Segment.BlobPrefixes {
			es = append(es, entry{*bp.Name, *bp.Name})
		}
		for _, it := range page.Segment.BlobItems {
			es = append(es, entry{*it.Name, renderVersionsOnly(t, it)})
		}
		sort.SliceStable(es, func(i, j int) bool { return es[i].name < es[j].name })
		for _, e := range es {
			out = append(out, e.s)
		}
	}
	return strings.Join(out, ", ")
}

// List Blobs include=deletedwithversions lists, once each and in name
// order, the names whose current version was deleted but that have
// previous versions (HasVersionsOnly, with the newest version's
// properties), beside the live blobs; a name with a current blob is
// listed as that blob only; pages of one entry resume right, also past a
// name's soft-deleted snapshot; without the flag those names are absent.
// With a delimiter it lists the same entries, a deleted name under a
// prefix rolling up into the prefix. With include=versions it is still
// 501 and lists nothing. Before, the delimited form was 501 too.
func TestListDeletedWithVersions(t *testing.T) {
	forKinds(t, versionKinds, func(t *testing.T, kind string) {
		ctx := context.Background()
		b, cc := setupVersionedSoft(t, kind, "dwv")
		put := func(name string, n int) {
			t.Helper()
			if _, err := b.client.UploadBuffer(ctx, "dwv", name, randBytes(n, int64(n)), nil); err != nil {
				t.Fatal(err)
			}
		}
		// a: two versions, then deleted; b: live, with a previous
		// version; c: one version, deleted; d: never versioned away
		// (live); e: deleted with its snapshot (soft-deleted).
		put("a", 100)
		put("a", 200)
		b.deleteRaw(t, "dwv/a", nil)
		put("b", 300)
		put("b", 400)
		put("c", 500)
		b.deleteRaw(t, "dwv/c", nil)
		put("d", 600)
		put("e", 700)
		if _, err := cc.NewBlobClient("e").CreateSnapshot(ctx, nil); err != nil {
			t.Fatal(err)
		}
		b.deleteRaw(t, "dwv/e", map[string]string{"x-ms-delete-snapshots": "include"})

		dwv := container.ListBlobsInclude{DeletedWithVersions: true}
		want := "a (versions only, 200 bytes), b, c (versions only, 500 bytes), d, e (versions only, 700 bytes)"
		for _, size := range []int32{1, 2, 100} {
			if got := listVersionsOnly(t, cc, dwv, "", size); got != want {
				t.Errorf("include=deletedwithversions, pages of %d:\n got %s\nwant %s", size, got, want)
			}
		}
		if got, want := listVersionsOnly(t, cc, container.ListBlobsInclude{}, "", 100), "b, d"; got != want {
			t.Errorf("plain listing: %s, want %s", got, want)
		}
		if got, want := listVersionsOnly(t, cc, dwv, "c", 100), "c (versions only, 500 bytes)"; got != want {
			t.Errorf("prefix c: %s, want %s", got, want)
		}
		// The soft-deleted snapshot of e comes before its entry;
		// a page ending on it must not skip e.
		all := container.ListBlobsInclude{DeletedWithVersions: true, Snapshots: true, Deleted: true, Metadata: true}
		want = "a (versions only, 200 bytes), b, c (versions only, 500 bytes), d, e@snap (deleted), e (versions only, 700 bytes)"
		for _, size := range []int32{1, 100} {
			if got := listVersionsOnly(t, cc, all, "", size); got != want {
				t.Errorf("include=deletedwithversions,snapshots,deleted, pages of %d:\n got %s\nwant %s", size, got, want)
			}
		}

		// More names than a listing batch (16 entries): the
		// versions part stops at the batch's last blob and the
		// names past it come in the next batch.
		var many []string
		for i := 0; i < 40; i++ {
			name := fmt.Sprintf("m%02d", i)
			put(name, 10+i)
			if i%3 == 0 {
				put(name, 100+i)
				b.deleteRaw(t, "dwv/"+name, nil)
				name += fmt.Sprintf(" (versions only, %d bytes)", 100+i)
			}
			many = append(many, name)
		}
		want = strings.Join(many, ", ")
		for _, size := range []int32{1, 7, 5000} {
			if got := listVersionsOnly(t, cc, dwv, "m", size); got != want {
				t.Errorf("prefix m, pages of %d:\n got %s\nwant %s", size, got, want)
			}
		}

		// With a delimiter: the same entries, a deleted name with
		// versions under a prefix rolling up into it, pages
		// resuming in the middle of the names.
		put("dir/x", 50)
		put("dir/x", 60)
		b.deleteRaw(t, "dwv/dir/x", nil)
		want = "a (versions only, 200 bytes), b, c (versions only, 500 bytes), d, dir/, e (versions only, 700 bytes)"
		for _, size := range []int32{1, 2, 100} {
			if got := listVersionsOnlyTree(t, cc, dwv, "", size); !strings.HasPrefix(got, want+", m00") {
				t.Errorf("include=deletedwithversions with a delimiter, pages of %d:\n got %s\nwant %s, m00, ...", size, got, want)
			}
		}
		if got, want := listVersionsOnlyTree(t, cc, dwv, "dir/", 1), "dir/x (versions only, 60 bytes)"; got != want {
			t.Errorf("prefix dir/ with a delimiter: %s, want %s", got, want)
		}
		if got, want := listVersionsOnlyTree(t, cc, container.ListBlobsInclude{}, "", 100), "b, d"; !strings.HasPrefix(got, want+", m01") {
			t.Errorf("plain listing with a delimiter: %s, want %s, m01, ...", got, want)
		}

		// Still not built: with the versions.
		for _, q := range []string{"include=versions,DeletedWithVersions", "include=deletedwithversions,versions&delimiter=/"} {
			resp, body := b.do(t, "GET", "dwv?restype=container&comp=list&"+q, "", nil)
			if resp.StatusCode != 501 || !strings.Contains(body, "NotImplemented") {
				t.Errorf("%s: %d %s, want 501 NotImplemented", q, resp.StatusCode, body)
			}
		}
	})
}
