package gateway_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"reflect"
	"sort"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
)

func TestFindBlobsByTags(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		c := b.client
		createContainers(t, c, "find-a", "find-b", "find-empty")
		blobs := []struct {
			cont, name string
			tags       map[string]string
		}{
			{"find-a", "1", map[string]string{"team": "red", "year": "2023", "other": "x"}},
			{"find-a", "2", map[string]string{"team": "red", "year": "2024"}},
			{"find-a", "3", map[string]string{"team": "blue", "year": "2024"}},
			{"find-a", "4", nil},
			{"find-a", "dir/5", map[string]string{"team": "red", "year": "2025"}},
			{"find-b", "1", map[string]string{"team": "red", "year": "2024"}},
			{"find-b", "2", map[string]string{"team": "green"}},
		}
		for _, bl := range blobs {
			if _, err := c.UploadBuffer(ctx, bl.cont, bl.name, []byte(bl.name), &azblob.UploadBufferOptions{Tags: bl.tags}); err != nil {
				t.Fatal(err)
			}
		}

		type hit struct{ cont, name, tags string }
		render := func(items []*service.FilterBlobItem) []hit {
			var out []hit
			for _, it := range items {
				var kv []string
				if it.Tags != nil {
					for k, v := range tagMap(it.Tags.BlobTagSet) {
						kv = append(kv, k+"="+v)
					}
				}
				sort.Strings(kv)
				out = append(out, hit{*it.ContainerName, *it.Name, fmt.Sprint(kv)})
			}
			return out
		}
		// find pages through a Find Blobs by Tags answer at scope; page
		// asks for one page from marker (mx results at most, nil for the
		// default) and returns its blobs and NextMarker.
		find := func(scope, where string, max int32, page func(marker *string, mx *int32) ([]*service.FilterBlobItem, *string, error)) ([]hit, int) {
			t.Helper()
			var mx *int32
			if max > 0 {
				mx = to.Ptr(max)
			}
			var out []hit
			pages := 0
			var marker *string
			for {
				blobs, next, err := page(marker, mx)
				if err != nil {
					t.Fatalf("%s FilterBlobs %q: %v", scope, where, err)
				}
				pages++
				out = append(out, render(blobs)...)
				if next == nil || *next == "" {
					return out, pages
				}
				marker = next
			}
		}
		containerFind := func(cont, where string, max int32) ([]hit, int) {
			t.Helper()
			cc := c.ServiceClient().NewContainerClient(cont)
			return find("container", where, max, func(marker *string, mx *int32) ([]*service.FilterBlobItem, *string, error) {
				resp, err := cc.FilterBlobs(ctx, where, &container.FilterBlobsOptions{Marker: marker, MaxResults: mx})
				if err != nil {
					return nil, nil, err
				}
				if resp.Where == nil || *resp.Where != where {
					t.Fatalf("Where echoed as %v", resp.Where)
				}
				return resp.Blobs, resp.NextMarker, nil
			})
		}
		serviceFind := func(where string, max int32) ([]hit, int) {
			t.Helper()
			return find("service", where, max, func(marker *string, mx *int32) ([]*service.FilterBlobItem, *string, error) {
				resp, err := c.ServiceClient().FilterBlobs(ctx, where, &service.FilterBlobsOptions{Marker: marker, MaxResults: mx})
				return resp.Blobs, resp.NextMarker, err
			})
		}

		redA := []hit{{"find-a", "1", "[team=red]"}, {"find-a", "2", "[team=red]"}, {"find-a", "dir/5", "[team=red]"}}
		for _, max := range []int32{0, 1, 2, 3} {
			got, pages := containerFind("find-a", `"team" = 'red'`, max)
			if !reflect.DeepEqual(got, redA) {
				t.Fatalf("container find (max %d) = %v, want %v", max, got, redA)
			}
			// No trailing empty page: a marker means more results.
			if wantPages := 1; max > 0 {
				wantPages = (len(redA) + int(max) - 1) / int(max)
				if pages != wantPages {
					t.Fatalf("max %d: %d pages, want %d", max, pages, wantPages)
				}
			}
		}
		// Ranges and AND; the result carries the tags the filter names.
		got, _ := containerFind("find-a", `"year" >= '2024' AND "year" < '2025' AND "team" = 'red'`, 0)
		if want := []hit{{"find-a", "2", "[team=red year=2024]"}}; !reflect.DeepEqual(got, want) {
			t.Fatalf("range find = %v, want %v", got, want)
		}
		if got, _ := containerFind("find-empty", `"team" = 'red'`, 0); len(got) != 0 {
			t.Fatalf("empty container found %v", got)
		}

		// The whole account, across containers, paged.
		allRed := append(append([]hit{}, redA...), hit{"find-b", "1", "[team=red]"})
		for _, max := range []int32{0, 1, 3} {
			if got, _ := serviceFind(`"team"='red'`, max); !reflect.DeepEqual(got, allRed) {
				t.Fatalf("service find (max %d) = %v, want %v", max, got, allRed)
			}
		}
		if got, _ := serviceFind(`@container = 'find-b' AND "team" >= 'a'`, 0); !reflect.DeepEqual(got,
			[]hit{{"find-b", "1", "[team=red]"}, {"find-b", "2", "[team=green]"}}) {
			t.Fatalf("@container find = %v", got)
		}

		// Tags set later are found; removed ones are not.
		if _, err := blockClient(c, "find-a", "4").SetTags(ctx, map[string]string{"team": "red"}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := blockClient(c, "find-a", "1").SetTags(ctx, nil, nil); err != nil {
			t.Fatal(err)
		}
		got, _ = containerFind("find-a", `"team" = 'red'`, 0)
		if want := []hit{{"find-a", "2", "[team=red]"}, {"find-a", "4", "[team=red]"}, {"find-a", "dir/5", "[team=red]"}}; !reflect.DeepEqual(got, want) {
			t.Fatalf("after retagging = %v, want %v", got, want)
		}

		// Every write of a blob row keeps the index: a copy with tags, an
		// overwrite by Put Block List, a delete and Delete Container.
		srcURL := blockClient(c, "find-a", "3").URL()
		if _, err := blockClient(c, "find-b", "copy").StartCopyFromURL(ctx, srcURL, &blob.StartCopyFromURLOptions{
			BlobTags: map[string]string{"team": "red"}}); err != nil {
			t.Fatal(err)
		}
		bid := base64.StdEncoding.EncodeToString([]byte("block-0"))
		if _, err := blockClient(c, "find-a", "2").StageBlock(ctx, bid, nopSeeker("x"), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := blockClient(c, "find-a", "2").CommitBlockList(ctx, []string{bid}, &blockblob.CommitBlockListOptions{
			Tags: map[string]string{"team": "blue"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.DeleteBlob(ctx, "find-a", "dir/5", nil); err != nil {
			t.Fatal(err)
		}
		if got, _ := serviceFind(`"team" = 'red'`, 1); !reflect.DeepEqual(got, []hit{
			{"find-a", "4", "[team=red]"}, {"find-b", "1", "[team=red]"}, {"find-b", "copy", "[team=red]"}}) {
			t.Fatalf("after copy, commit and delete = %v", got)
		}
		if _, err := c.DeleteContainer(ctx, "find-b", nil); err != nil {
			t.Fatal(err)
		}
		if got, _ := serviceFind(`"team" = 'red'`, 0); !reflect.DeepEqual(got, []hit{{"find-a", "4", "[team=red]"}}) {
			t.Fatalf("after deleting find-b = %v", got)
		}

		// <> and OR are not allowed here; nor is a malformed expression,
		// nor a key compared twice unless the two bound a range.
		cc := c.ServiceClient().NewContainerClient("find-a")
		for _, bad := range []string{`"team" <> 'red'`, `"team" = 'red' OR "team" = 'blue'`, `"team" = red`, ``,
			`"year" > '2023' AND "year" >= '2024'`, `"team" = 'red' AND "team" = 'red'`} {
			_, err := cc.FilterBlobs(ctx, bad, nil)
			wantErr(t, err, 400, "InvalidQueryParameterValue")
			_, err = c.ServiceClient().FilterBlobs(ctx, bad, nil)
			wantErr(t, err, 400, "InvalidQueryParameterValue")
		}
		_, err := c.ServiceClient().NewContainerClient("find-missing").FilterBlobs(ctx, `"a" = 'b'`, nil)
		wantErr(t, err, 404, "ContainerNotFound")
	})
}
