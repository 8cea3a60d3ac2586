package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

// testBlockExpiry: Tx.StaleBlockNames finds exactly the names whose newest
// staged block is older than the cutoff, bounded by limit; DB.ExpireBlocks
// drops those names' staged blocks (and queues their keys, due now) and
// leaves names with a recent block, committed blobs and their extents
// alone.
func testBlockExpiry(t *testing.T, s leasedb.Store) {
	const week = 7 * 24 * time.Hour
	mustInsertContainer(t, s, "c")
	mustInsertContainer(t, s, "d")
	now := dbNow(t, s)
	old, recent := now.Add(-week-time.Hour), now.Add(-time.Hour)
	blk := func(id, key string, at time.Time) leasedb.Block {
		return leasedb.Block{ID: id, Key: key, Size: 3, StagedAt: at}
	}
	stageBlock(t, s, "c", "stale", blk("YQ==", "k/stale1", old))
	stageBlock(t, s, "c", "stale", blk("Yg==", "k/stale2", old.Add(time.Minute)))
	stageBlock(t, s, "d", "stale", blk("YQ==", "k/dstale", old))
	stageBlock(t, s, "c", "mixed", blk("YQ==", "k/mixed-old", old))
	stageBlock(t, s, "c", "mixed", blk("Yg==", "k/mixed-new", recent))
	stageBlock(t, s, "c", "fresh", blk("YQ==", "k/fresh", recent))
	// A committed blob with an old staged block: the staged block goes,
	// the committed row and its extents stay.
	committed := fullBlob("c", "committed")
	committed.Extents = []leasedb.Extent{{Key: "k/committed", Size: 3, BlockID: "YQ=="}}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, committed) })
	stageBlock(t, s, "c", "committed", blk("Yg==", "k/committed-staged", old))

	stale := func(limit int) []string {
		var out []string
		view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
			refs, err := tx.StaleBlockNames(ctx, now.Add(-week), limit)
			for _, r := range refs {
				out = append(out, r.String())
			}
			return err
		})
		slices.Sort(out)
		return out
	}
	want := []string{"acct/c/committed", "acct/c/stale", "acct/d/stale"}
	if got := stale(100); !slices.Equal(got, want) {
		t.Fatalf("StaleBlockNames = %v, want %v", got, want)
	}
	if got := stale(2); len(got) != 2 {
		t.Fatalf("StaleBlockNames limit 2 = %v", got)
	}
	if got := stale(0); len(got) != 0 {
		t.Fatalf("StaleBlockNames limit 0 = %v", got)
	}

	db := &leasedb.DB{Store: s}
	ctx := ctxT(t)
	// Bounded: two names first, then the last one, then nothing.
	for i, wantN := range []int{2, 1, 0} {
		n, err := db.ExpireBlocks(ctx, week, 2)
		if err != nil || n != wantN {
			t.Fatalf("ExpireBlocks pass %d = %d, %v; want %d", i+1, n, err, wantN)
		}
	}
	for _, name := range []string{"stale", "committed"} {
		checkBlocks(t, "Blocks of c/"+name, nil, getBlocks(t, s, "c", name))
	}
	checkBlocks(t, "Blocks of d/stale", nil, getBlocks(t, s, "d", "stale"))
	checkBlocks(t, "Blocks of c/mixed", []leasedb.Block{blk("YQ==", "k/mixed-old", old), blk("Yg==", "k/mixed-new", recent)}, getBlocks(t, s, "c", "mixed"))
	checkBlocks(t, "Blocks of c/fresh", []leasedb.Block{blk("YQ==", "k/fresh", recent)}, getBlocks(t, s, "c", "fresh"))
	checkBlob(t, committed, getBlob(t, s, "c", "committed"))

	wantKeys := []string{"k/committed-staged", "k/dstale", "k/stale1", "k/stale2"}
	if got := sortedCopy(keysOf(t, s)); !slices.Equal(got, wantKeys) {
		t.Fatalf("collection queue = %v, want %v", got, wantKeys)
	}
	if got := claim(t, s, 100, 0); !slices.Equal(got, wantKeys) {
		t.Fatalf("due now: %v, want %v", got, wantKeys)
	}

	// With a shorter expiry the recent blocks are stale too.
	if n, err := db.ExpireBlocks(ctx, time.Minute, 100); err != nil || n != 2 {
		t.Fatalf("ExpireBlocks(1m) = %d, %v; want 2 (mixed, fresh)", n, err)
	}
	checkBlob(t, committed, getBlob(t, s, "c", "committed"))
}
