package storetest

import (
	"context"
	"slices"
	"testing"

	"github.com/blobgw/blobgw/leasedb"
)

// testPageBlobRow: a page blob row keeps its sequence number (up to the
// largest int64) and its page map (runs with blob offset and object
// offset, holes between them) exactly, in its blob and snapshot rows; every
// run's object is a referenced key, and DeleteContainer returns them.
func testPageBlobRow(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	b := fullBlob("c", "p")
	b.Type, b.Sealed, b.BlockCount, b.AccessTier = "PageBlob", false, 0, ""
	b.Size = 8 << 40
	b.SequenceNumber = 1<<63 - 1
	b.Extents = []leasedb.Extent{
		{Key: "page/1", At: 512, Size: 1024, Off: 0},
		{Key: "page/2", At: 4096, Size: 512, Off: 3584},
		{Key: "page/1", At: 8<<40 - 512, Size: 512, Off: 1536},
	}
	snap := *b
	snap.Snapshot = "2024-01-01T00:00:00.0000000Z"
	snap.SequenceNumber = 7
	snap.Extents = []leasedb.Extent{{Key: "page/0", At: 0, Size: 512}}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		if err := tx.PutBlob(ctx, b); err != nil {
			return err
		}
		return tx.PutSnapshot(ctx, &snap)
	})
	checkBlob(t, b, getBlob(t, s, "c", "p"))
	var gotSnap *leasedb.Blob
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		var err error
		gotSnap, err = tx.Snapshot(ctx, acct, "c", "p", snap.Snapshot)
		return err
	})
	checkBlob(t, &snap, gotSnap)
	if keys, want := referencedKeys(t, s), []string{"page/0", "page/1", "page/2"}; !slices.Equal(keys, want) {
		t.Fatalf("ReferencedKeys = %q, want %q", keys, want)
	}
	var dropped []string
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		var err error
		dropped, err = tx.DeleteContainer(ctx, acct, "c")
		return err
	})
	if got, want := sortedCopy(dropped), []string{"page/0", "page/1", "page/2"}; !slices.Equal(got, want) {
		t.Fatalf("DeleteContainer returned %q, want %q", got, want)
	}
}
