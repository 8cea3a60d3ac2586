package gateway_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// listed is one List Blobs entry as the SDK reports it: name, snapshot id
// and whether it is an uncommitted blob (no ETag).
type listed struct {
	name, snap  string
	uncommitted bool
}

func (l listed) String() string {
	switch {
	case l.uncommitted:
		return l.name + "(uncommitted)"
	case l.snap != "":
		return l.name + "@" + l.snap
	}
	return l.name
}

// TestListUncommittedBlobs: include=uncommittedblobs lists names that have
// only staged blocks, in name order among the committed blobs, with the
// properties Azure gives them (no ETag, Last-Modified, content headers or
// metadata; length 0; BlockBlob); a committed blob with staged blocks is
// listed once; they roll up into BlobPrefix under a delimiter; they never
// show without the include. Every entry (blob, snapshot, uncommitted name,
// prefix) counts toward maxresults, and paging with any maxresults,
// including markers in the middle of one blob's snapshots, returns every
// entry exactly once in the unpaged order.
func TestListUncommittedBlobs(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "unc")
		cc := b.client.ServiceClient().NewContainerClient("unc")
		size := map[string]int64{} // committed blob sizes
		for _, n := range []string{"a", "b/x", "d", "m"} {
			body := "body of " + n
			if _, err := b.client.UploadBuffer(ctx, "unc", n, []byte(body), nil); err != nil {
				t.Fatal(err)
			}
			size[n] = int64(len(body))
		}
		snap := func(name string) string {
			t.Helper()
			r, err := cc.NewBlobClient(name).CreateSnapshot(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			return *r.Snapshot
		}
		a1, a2, d1 := snap("a"), snap("a"), snap("d")
		// Names with only staged blocks (two blocks each), and d, which is
		// committed and has staged blocks too.
		for _, n := range []string{"a0", "b/y", "b/z/deep", "c", "d", "e", "s/only"} {
			bc := blockClient(b.client, "unc", n)
			for i := 0; i < 2; i++ {
				if _, err := bc.StageBlock(ctx, blockID(i), nopSeeker("staged"), nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		u := func(n string) listed { return listed{name: n, uncommitted: true} }
		c := func(n string) listed { return listed{name: n} }
		s := func(n, id string) listed { return listed{name: n, snap: id} }

		flat := func(prefix string, max int32, inc container.ListBlobsInclude) []listed {
			t.Helper()
			opts := &container.ListBlobsFlatOptions{Include: inc}
			if prefix != "" {
				opts.Prefix = to.Ptr(prefix)
			}
			if max > 0 {
				opts.MaxResults = to.Ptr(max)
			}
			var out []listed
			p := cc.NewListBlobsFlatPager(opts)
			for p.More() {
				page, err := p.NextPage(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if max > 0 && len(page.Segment.BlobItems) > int(max) {
					t.Fatalf("page of %d entries, maxresults %d", len(page.Segment.BlobItems), max)
				}
				for _, it := range page.Segment.BlobItems {
					l := listed{name: *it.Name, uncommitted: it.Properties.ETag == nil}
					if it.Snapshot != nil {
						l.snap = *it.Snapshot
					}
					out = append(out, l)
					p := it.Properties
					if l.uncommitted {
						if p.LastModified != nil || p.ContentType != nil || p.ContentEncoding != nil || p.ContentLanguage != nil ||
							p.ContentMD5 != nil || p.CacheControl != nil || p.ContentDisposition != nil || len(it.Metadata) != 0 {
							t.Errorf("uncommitted %s carries committed properties: %+v metadata %v", l.name, p, it.Metadata)
						}
						if p.ContentLength == nil || *p.ContentLength != 0 || p.BlobType == nil || *p.BlobType != "BlockBlob" {
							t.Errorf("uncommitted %s: length %v type %v, want 0 BlockBlob", l.name, p.ContentLength, p.BlobType)
						}
					} else if p.LastModified == nil || p.ContentLength == nil || *p.ContentLength != size[l.name] {
						t.Errorf("committed %v: %+v", l, p)
					}
				}
			}
			return out
		}
		hier := func(prefix string, max int32, inc container.ListBlobsInclude) (blobs []listed, prefixes []string) {
			t.Helper()
			opts := &container.ListBlobsHierarchyOptions{Include: inc, Prefix: to.Ptr(prefix), MaxResults: to.Ptr(max)}
			p := cc.NewListBlobsHierarchyPager("/", opts)
			for p.More() {
				page, err := p.NextPage(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if n := len(page.Segment.BlobItems) + len(page.Segment.BlobPrefixes); n > int(max) {
					t.Fatalf("page of %d entries, maxresults %d", n, max)
				}
				for _, it := range page.Segment.BlobItems {
					blobs = append(blobs, listed{name: *it.Name, uncommitted: it.Properties.ETag == nil})
				}
				for _, it := range page.Segment.BlobPrefixes {
					prefixes = append(prefixes, *it.Name)
				}
			}
			return blobs, prefixes
		}
		check := func(what string, got, want any) {
			t.Helper()
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s:\n got %v\nwant %v", what, got, want)
			}
		}

		none := container.ListBlobsInclude{Metadata: true}
		unc := container.ListBlobsInclude{UncommittedBlobs: true, Metadata: true}
		snaps := container.ListBlobsInclude{Snapshots: true}
		both := container.ListBlobsInclude{UncommittedBlobs: true, Snapshots: true, Metadata: true}
		wants := []struct {
			name string
			inc  container.ListBlobsInclude
			want []listed
		}{
			{"no include", none, []listed{c("a"), c("b/x"), c("d"), c("m")}},
			{"uncommittedblobs", unc, []listed{c("a"), u("a0"), c("b/x"), u("b/y"), u("b/z/deep"), u("c"), c("d"), u("e"), c("m"), u("s/only")}},
			{"snapshots", snaps, []listed{s("a", a1), s("a", a2), c("a"), c("b/x"), s("d", d1), c("d"), c("m")}},
			{"snapshots,uncommittedblobs", both, []listed{s("a", a1), s("a", a2), c("a"), u("a0"), c("b/x"), u("b/y"), u("b/z/deep"),
				u("c"), s("d", d1), c("d"), u("e"), c("m"), u("s/only")}},
		}
		for _, w := range wants {
			check(w.name, flat("", 0, w.inc), w.want)
			// Paged: every entry once, same order; the snapshot runs of a
			// and d are cut at every place by some maxresults.
			for _, max := range []int32{1, 2, 3} {
				check(fmt.Sprintf("%s, maxresults %d", w.name, max), flat("", max, w.inc), w.want)
			}
			// Prefix.
			var under []listed
			for _, l := range w.want {
				if strings.HasPrefix(l.name, "b/") {
					under = append(under, l)
				}
			}
			for _, max := range []int32{0, 1, 2} {
				check(fmt.Sprintf("%s, prefix b/, maxresults %d", w.name, max), flat("b/", max, w.inc), under)
			}
		}

		// Delimiter: a name with only staged blocks rolls up into its
		// BlobPrefix with the include (s/ exists only because of s/only),
		// and not without it.
		for _, max := range []int32{1, 2, 3, 5000} {
			blobs, prefixes := hier("", max, unc)
			check(fmt.Sprintf("root with include, maxresults %d", max), []any{blobs, prefixes},
				[]any{[]listed{c("a"), u("a0"), u("c"), c("d"), u("e"), c("m")}, []string{"b/", "s/"}})
			blobs, prefixes = hier("", max, none)
			check(fmt.Sprintf("root without include, maxresults %d", max), []any{blobs, prefixes},
				[]any{[]listed{c("a"), c("d"), c("m")}, []string{"b/"}})
			blobs, prefixes = hier("b/", max, unc)
			check(fmt.Sprintf("b/ with include, maxresults %d", max), []any{blobs, prefixes},
				[]any{[]listed{c("b/x"), u("b/y")}, []string{"b/z/"}})
			blobs, prefixes = hier("b/", max, none)
			check(fmt.Sprintf("b/ without include, maxresults %d", max), []any{blobs, prefixes},
				[]any{[]listed{c("b/x")}, []string(nil)})
		}

		// A marker that is not one of ours is 400, never a 500.
		for _, m := range []string{"2" + base64.RawURLEncoding.EncodeToString([]byte("a")), "2!!", "9abc",
			"1" + base64.RawURLEncoding.EncodeToString([]byte("a\x00b"))} {
			_, err := cc.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Marker: to.Ptr(m), Include: both}).NextPage(ctx)
			wantErr(t, err, 400, "InvalidQueryParameterValue")
		}

		// Committing a staged-only name, by Put Block List or by Put Blob,
		// makes it an ordinary entry, listed once.
		if _, err := blockClient(b.client, "unc", "c").CommitBlockList(ctx, []string{blockID(1)}, nil); err != nil {
			t.Fatal(err)
		}
		size["c"] = int64(len("staged"))
		got := flat("c", 0, unc)
		if len(got) != 1 || got[0].uncommitted {
			t.Errorf("after committing c: %v", got)
		}
		check("after committing c, d is still one entry", flat("d", 0, unc), []listed{c("d")})
		if _, err := b.client.UploadBuffer(ctx, "unc", "e", []byte("body of e"), nil); err != nil {
			t.Fatal(err)
		}
		size["e"] = int64(len("body of e"))
		check("after Put Blob over e", flat("e", 0, unc), []listed{c("e")})
	})
}
