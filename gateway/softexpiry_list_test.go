package gateway_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// TestSoftDeleteListPastRetention: a soft-deleted blob or snapshot whose
// retention has passed by the database clock is permanently deleted, as
// Undelete Blob already treats it: List Blobs include=deleted no longer
// shows it (with RemainingRetentionDays 0), flat or with a delimiter,
// whether or not the collector has purged it yet.
func TestSoftDeleteListPastRetention(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		b := setup(t, kind)
		b.setRetention(t, 1)
		cc := b.newContainer(t, "gone")
		for _, n := range []string{"a", "b", "c", "live"} {
			if _, err := b.client.UploadBuffer(ctx, "gone", n, []byte(n), nil); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := cc.NewBlobClient("b").CreateSnapshot(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := b.client.DeleteBlob(ctx, "gone", "a", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := b.client.DeleteBlob(ctx, "gone", "b", &blob.DeleteOptions{DeleteSnapshots: to.Ptr(blob.DeleteSnapshotsOptionTypeInclude)}); err != nil {
			t.Fatal(err)
		}
		b.setRetention(t, 3)
		if _, err := b.client.DeleteBlob(ctx, "gone", "c", nil); err != nil {
			t.Fatal(err)
		}
		b.setClockOffset(24*time.Hour + time.Minute)
		t.Cleanup(func() { b.setClockOffset(0) })
		inc := container.ListBlobsInclude{Deleted: true, Snapshots: true}
		want := "c (deleted, 2 days), live"
		for _, size := range []int32{1, 10} {
			if got := render(listFlat(t, cc, inc, size)); got != want {
				t.Errorf("flat listing, pages of %d, past a and b's retention: %s, want %s", size, got, want)
			}
			var out []string
			// Snapshots are not listed with a delimiter.
			p := cc.NewListBlobsHierarchyPager("/", &container.ListBlobsHierarchyOptions{Include: container.ListBlobsInclude{Deleted: true}, MaxResults: to.Ptr(size)})
			for p.More() {
				page, err := p.NextPage(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, it := range page.Segment.BlobItems {
					out = append(out, listedOf(t, it).String())
				}
			}
			if got := strings.Join(out, ", "); got != want {
				t.Errorf("delimited listing, pages of %d, past a and b's retention: %s, want %s", size, got, want)
			}
		}
	})
}
