package gateway_test

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/pageblob"
)

// diffRanges runs the diff form of Get Page Ranges and returns its written
// and cleared ranges ([start, end], inclusive ends).
func diffRanges(t *testing.T, pb *pageblob.Client, o *pageblob.GetPageRangesDiffOptions) (changed, cleared [][2]int64, err error) {
	t.Helper()
	p := pb.NewGetPageRangesDiffPager(o)
	for p.More() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			return nil, nil, err
		}
		for _, r := range page.PageRange {
			changed = append(changed, [2]int64{*r.Start, *r.End})
		}
		for _, r := range page.ClearRange {
			cleared = append(cleared, [2]int64{*r.Start, *r.End})
		}
	}
	return changed, cleared, nil
}

// TestPageRangesPrevSnapshotURL: Get Page Ranges with
// x-ms-previous-snapshot-url naming a snapshot of the same blob answers
// the prevsnapshot diff (also from a snapshot of the blob); a URL naming
// another blob, a base blob or another endpoint gets a standard account's
// 400 UnsupportedHeaderForNonManagedDisksAccount; with prevsnapshot too it
// is 400 InvalidHeaderValue.
func TestPageRangesPrevSnapshotURL(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		c := b.client
		createContainers(t, c, "diffurl")
		pb := pageClient(c, "diffurl", "disk")
		other := pageClient(c, "diffurl", "other")
		for _, p := range []*pageblob.Client{pb, other} {
			if _, err := p.Create(ctx, 8192, nil); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := pb.UploadPages(ctx, rsc{bytes.NewReader(randBytes(2048, 7))}, rangeOf(0, 2048), nil); err != nil {
			t.Fatal(err)
		}
		s1, err := pb.CreateSnapshot(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pb.UploadPages(ctx, rsc{bytes.NewReader(randBytes(1024, 8))}, rangeOf(4096, 1024), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := pb.ClearPages(ctx, rangeOf(512, 512), nil); err != nil {
			t.Fatal(err)
		}
		s2, err := pb.CreateSnapshot(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		sc1, _ := pb.WithSnapshot(*s1.Snapshot)
		sc2, _ := pb.WithSnapshot(*s2.Snapshot)
		wantChanged, wantCleared := [][2]int64{{4096, 5119}}, [][2]int64{{512, 1023}}
		for _, target := range []*pageblob.Client{pb, sc2} {
			byQuery, byQueryCleared, err := diffRanges(t, target, &pageblob.GetPageRangesDiffOptions{PrevSnapshot: s1.Snapshot})
			if err != nil {
				t.Fatal(err)
			}
			changed, cleared, err := diffRanges(t, target, &pageblob.GetPageRangesDiffOptions{PrevSnapshotURL: to.Ptr(sc1.URL())})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(changed, wantChanged) || !slices.Equal(cleared, wantCleared) ||
				!slices.Equal(changed, byQuery) || !slices.Equal(cleared, byQueryCleared) {
				t.Fatalf("diff by URL: changed %v cleared %v; by prevsnapshot %v %v", changed, cleared, byQuery, byQueryCleared)
			}
		}
		// A snapshot URL newer than the target snapshot, as prevsnapshot.
		_, _, err = diffRanges(t, sc1, &pageblob.GetPageRangesDiffOptions{PrevSnapshotURL: to.Ptr(sc2.URL())})
		wantErr(t, err, 400, "PreviousSnapshotCannotBeNewer")
		// What only a managed disk account computes.
		os, err := other.CreateSnapshot(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		osc, _ := other.WithSnapshot(*os.Snapshot)
		for _, u := range []string{osc.URL(), pb.URL(), "https://elsewhere.example.com/c/disk?snapshot=" + *s1.Snapshot} {
			_, _, err = diffRanges(t, pb, &pageblob.GetPageRangesDiffOptions{PrevSnapshotURL: to.Ptr(u)})
			wantErr(t, err, 400, "UnsupportedHeaderForNonManagedDisksAccount")
		}
		_, _, err = diffRanges(t, pb, &pageblob.GetPageRangesDiffOptions{PrevSnapshot: s1.Snapshot, PrevSnapshotURL: to.Ptr(sc1.URL())})
		wantErr(t, err, 400, "InvalidHeaderValue")
	})
}
