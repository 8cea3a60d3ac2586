package gateway_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
)

// TestListDelimiterPastMaxRune: List Blobs with a delimiter lists each
// BlobPrefix once, on one page or across pages, also when names under it
// hold U+10FFFF (valid UTF-8, the largest code point) right after the
// delimiter: the position past a prefix must sort after those names too
// (it was the prefix and one U+10FFFF, which "d/\U0010FFFFx" sorts after,
// so "d/" came again, and a pager of one entry a page never ended). Both
// store walks run: committed blobs alone (Postgres's batched walk) and
// with include=uncommittedblobs (the walk over several tables).
func TestListDelimiterPastMaxRune(t *testing.T) {
	forKinds(t, []string{"sqlite+disk", "postgres+disk"}, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "maxrune")
		const m = "\U0010FFFF"
		for _, n := range []string{"d/a", "d/" + m, "d/" + m + "x", "d/" + m + m + "y", "d/" + m + "/z", "e", m + "/f"} {
			if _, err := b.client.UploadBuffer(ctx, "maxrune", n, []byte("x"), nil); err != nil {
				t.Fatal(err)
			}
		}
		cc := b.client.ServiceClient().NewContainerClient("maxrune")
		if _, err := cc.NewBlockBlobClient("d/"+m+"s").StageBlock(ctx, blockID(0), nopSeeker("s"), nil); err != nil {
			t.Fatal(err)
		}
		for _, uncommitted := range []bool{false, true} {
			for _, tc := range []struct {
				prefix string
				want   []string // in listing order; "P:" marks a BlobPrefix
			}{
				{"", []string{"P:d/", "e", "P:" + m + "/"}},
				{"d/", []string{"d/a", "d/" + m, "P:d/" + m + "/", "d/" + m + "x", "d/" + m + m + "y"}},
			} {
				want := tc.want
				if uncommitted && tc.prefix == "d/" {
					want = []string{"d/a", "d/" + m, "P:d/" + m + "/", "d/" + m + "s", "d/" + m + "x", "d/" + m + m + "y"}
				}
				for _, max := range []int32{1, 2, 5000} {
					var got []string
					pager := cc.NewListBlobsHierarchyPager("/", &container.ListBlobsHierarchyOptions{Prefix: to.Ptr(tc.prefix),
						MaxResults: to.Ptr(max), Include: container.ListBlobsInclude{UncommittedBlobs: uncommitted}})
					for pages := 0; pager.More(); pages++ {
						if pages > 2*len(want) {
							t.Fatalf("prefix %q max %d uncommitted %v: more than %d pages, got %q", tc.prefix, max, uncommitted, pages, got)
						}
						page, err := pager.NextPage(ctx)
						if err != nil {
							t.Fatal(err)
						}
						// The SDK parts a page's prefixes from its blobs:
						// only pages of one entry keep the order.
						for _, p := range page.Segment.BlobPrefixes {
							got = append(got, "P:"+*p.Name)
						}
						for _, it := range page.Segment.BlobItems {
							got = append(got, *it.Name)
						}
					}
					w := want
					if max > 1 {
						got, w = slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
					}
					if !slices.Equal(got, w) {
						t.Errorf("prefix %q max %d uncommitted %v:\n got %q\nwant %q", tc.prefix, max, uncommitted, got, w)
					}
				}
			}
		}
	})
}

// TestMaxResultsInt32: maxresults is a 32-bit integer (the REST API's
// int32): a number past it is 400 InvalidQueryParameterValue on List
// Blobs, List Containers and Find Blobs by Tags, as text is, where it was
// read as 64 bits and capped to a page of 5000; the largest int32 is still
// a page of at most 5000.
func TestMaxResultsInt32(t *testing.T) {
	b := setup(t, "sqlite+disk")
	createContainers(t, b.client, "maxres")
	for _, path := range []string{"maxres?restype=container&comp=list", "?comp=list", "?comp=blobs&where=%22t%22%3D%271%27"} {
		for _, v := range []string{"2147483648", "99999999999", "9223372036854775808"} {
			resp, body := b.do(t, "GET", path+"&maxresults="+v, "", nil)
			if d := statusDiff(resp, 400, "InvalidQueryParameterValue"); d != "" {
				t.Errorf("maxresults=%s: %s\n%s", v, d, body)
			}
		}
		for _, v := range []string{"0", "-1", "-2147483649"} {
			resp, body := b.do(t, "GET", path+"&maxresults="+v, "", nil)
			if resp.StatusCode != 400 {
				t.Errorf("maxresults=%s: %d %s", v, resp.StatusCode, body)
			}
		}
		resp, body := b.do(t, "GET", path+"&maxresults=2147483647", "", nil)
		if resp.StatusCode != 200 {
			t.Errorf("maxresults=2147483647: %d %s", resp.StatusCode, body)
		}
	}
}

// TestListContainersDeletedPastExpired: List Containers include=deleted
// pages past soft-deleted containers whose retention ended and that the
// collector has yet to purge (they are not listed) without losing the
// entries after them: a page of one read two deleted rows, skipped both
// as expired and ended there, so the deleted container after them was
// never listed.
func TestListContainersDeletedPastExpired(t *testing.T) {
	const retention = 3 * time.Second
	b := setup(t, "sqlite+disk", containerRetention(retention))
	ctx := context.Background()
	svc := b.client.ServiceClient()
	for _, n := range []string{"past-a1", "past-a2", "past-a3"} {
		createContainers(t, b.client, n)
		if _, err := svc.DeleteContainer(ctx, n, nil); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(retention + 500*time.Millisecond)
	createContainers(t, b.client, "past-b", "past-z")
	if _, err := svc.DeleteContainer(ctx, "past-b", nil); err != nil {
		t.Fatal(err)
	}
	for _, max := range []int32{1, 2, 5000} {
		var got []string
		pager := svc.NewListContainersPager(&service.ListContainersOptions{Prefix: to.Ptr("past-"), MaxResults: to.Ptr(max),
			Include: service.ListContainersInclude{Deleted: true}})
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range page.ContainerItems {
				got = append(got, *c.Name)
			}
		}
		if want := []string{"past-b", "past-z"}; !slices.Equal(got, want) {
			t.Errorf("max %d: listed %q, want %q", max, got, want)
		}
	}
}
