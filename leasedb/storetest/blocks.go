package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

func stageBlock(t *testing.T, s leasedb.Store, container, blob string, b leasedb.Block) string {
	t.Helper()
	var old string
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		var err error
		old, err = tx.StageBlock(ctx, acct, container, blob, b)
		return err
	})
	return old
}

func getBlocks(t *testing.T, s leasedb.Store, container, blob string) []leasedb.Block {
	t.Helper()
	var bs []leasedb.Block
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		var err error
		bs, err = tx.Blocks(ctx, acct, container, blob)
		return err
	})
	return bs
}

// checkBlocks compares staged blocks; want's times are normalized like
// every other stored time. nil and empty lists are equal.
func checkBlocks(t *testing.T, what string, want, got []leasedb.Block) {
	t.Helper()
	var w []leasedb.Block
	for _, b := range want {
		b.StagedAt = normTime(b.StagedAt)
		w = append(w, b)
	}
	for _, b := range got {
		checkUTC(t, what+" block "+b.ID, b.StagedAt)
	}
	if len(w) == 0 && len(got) == 0 {
		return
	}
	if !reflect.DeepEqual(w, got) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, w)
	}
}

// testStageBlock: staging needs no blob row, replacing a block id returns
// the replaced key, blocks are per (account, container, blob), and
// DeleteBlocks removes one blob name's blocks.
func testStageBlock(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	mustInsertContainer(t, s, "c2")
	a1 := leasedb.Block{ID: "YQ==", Key: "k/a1", Size: 10, StagedAt: base}
	b1 := leasedb.Block{ID: "Yg==", Key: "k/b1", Size: (1 << 40) + 3, StagedAt: base.Add(time.Second + 999*time.Nanosecond)}
	if old := stageBlock(t, s, "c", "new", a1); old != "" {
		t.Errorf("first StageBlock replaced %q", old)
	}
	if old := stageBlock(t, s, "c", "new", b1); old != "" {
		t.Errorf("StageBlock of another id replaced %q", old)
	}
	// The same id under another container or blob name is another block.
	other := leasedb.Block{ID: "YQ==", Key: "k/other", Size: 1, StagedAt: base}
	if old := stageBlock(t, s, "c2", "new", other); old != "" {
		t.Errorf("StageBlock in another container replaced %q", old)
	}
	if old := stageBlock(t, s, "c", "new2", other); old != "" {
		t.Errorf("StageBlock under another blob name replaced %q", old)
	}
	if b := getBlob(t, s, "c", "new"); b != nil {
		t.Errorf("staging created a blob row: %+v", b)
	}
	checkBlocks(t, "Blocks", []leasedb.Block{a1, b1}, getBlocks(t, s, "c", "new"))
	checkBlocks(t, "Blocks of an unknown name", nil, getBlocks(t, s, "c", "nothing"))
	checkBlocks(t, "Blocks of a missing container", nil, getBlocks(t, s, "missing", "new"))

	// Replacing: the replaced key comes back, the new key, size and time
	// stand, and the block moves to its new place in the order.
	a2 := leasedb.Block{ID: "YQ==", Key: "k/a2", Size: 20, StagedAt: base.Add(2 * time.Second)}
	if old := stageBlock(t, s, "c", "new", a2); old != "k/a1" {
		t.Errorf("replacing StageBlock returned %q, want k/a1", old)
	}
	checkBlocks(t, "Blocks after replace", []leasedb.Block{b1, a2}, getBlocks(t, s, "c", "new"))

	// Twice in one transaction: each sees the previous one.
	a3, a4 := a2, a2
	a3.Key, a4.Key = "k/a3", "k/a4"
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		for _, tc := range []struct {
			b    leasedb.Block
			want string
		}{{a3, "k/a2"}, {a4, "k/a3"}} {
			old, err := tx.StageBlock(ctx, acct, "c", "new", tc.b)
			if err != nil {
				return err
			}
			if old != tc.want {
				t.Errorf("StageBlock %s in one transaction returned %q, want %q", tc.b.Key, old, tc.want)
			}
		}
		// The transaction sees its own writes.
		bs, err := tx.Blocks(ctx, acct, "c", "new")
		checkBlocks(t, "Blocks inside the transaction", []leasedb.Block{b1, a4}, bs)
		return err
	})

	// A rolled-back replace leaves the block alone.
	ctx := ctxT(t)
	sentinel := errors.New("roll back")
	err := s.Update(ctx, func(tx leasedb.Tx) error {
		if _, err := tx.StageBlock(ctx, acct, "c", "new", a1); err != nil {
			return err
		}
		if _, err := tx.StageBlock(ctx, acct, "c", "rolled-back", a1); err != nil {
			return err
		}
		return sentinel
	})
	if err != sentinel {
		t.Fatalf("Update: %v", err)
	}
	checkBlocks(t, "Blocks after a rolled-back replace", []leasedb.Block{b1, a4}, getBlocks(t, s, "c", "new"))
	checkBlocks(t, "Blocks of a rolled-back stage", nil, getBlocks(t, s, "c", "rolled-back"))

	// DeleteBlocks removes exactly one blob name's blocks.
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.DeleteBlocks(ctx, acct, "c", "new") })
	checkBlocks(t, "Blocks after DeleteBlocks", nil, getBlocks(t, s, "c", "new"))
	checkBlocks(t, "neighbour blob's blocks", []leasedb.Block{other}, getBlocks(t, s, "c", "new2"))
	checkBlocks(t, "other container's blocks", []leasedb.Block{other}, getBlocks(t, s, "c2", "new"))
	// Deleting nothing is fine, and a deleted id is staged afresh.
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.DeleteBlocks(ctx, acct, "c", "new") })
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.DeleteBlocks(ctx, acct, "missing", "x") })
	if old := stageBlock(t, s, "c", "new", a1); old != "" {
		t.Errorf("StageBlock after DeleteBlocks replaced %q", old)
	}
	// A committed blob of the same name has nothing to do with its blocks.
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, fullBlob("c", "new")) })
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.DeleteBlob(ctx, acct, "c", "new") })
	checkBlocks(t, "Blocks after the blob row came and went", []leasedb.Block{a1}, getBlocks(t, s, "c", "new"))

	// Writes fail in a View; unstorable names are refused.
	if err := s.View(ctx, func(tx leasedb.Tx) error {
		_, err := tx.StageBlock(ctx, acct, "c", "v", a1)
		return err
	}); err == nil {
		t.Errorf("StageBlock in a View succeeded")
	}
	for _, bad := range []string{"nul\x00byte", "bad\xffutf8"} {
		err := s.Update(ctx, func(tx leasedb.Tx) error {
			_, err := tx.StageBlock(ctx, acct, "c", bad, a1)
			return err
		})
		if err == nil {
			t.Errorf("StageBlock under blob name %q succeeded", bad)
		}
		bb := a1
		bb.ID = bad
		err = s.Update(ctx, func(tx leasedb.Tx) error {
			_, err := tx.StageBlock(ctx, acct, "c", "n", bb)
			return err
		})
		if err == nil {
			t.Errorf("StageBlock of block id %q succeeded", bad)
		}
	}
}

// testStageBlockOrder: Blocks lists oldest StagedAt first, then block id
// in byte order, whatever order they were staged in. Times are compared
// after truncation to microseconds; the zero time is kept and sorts first.
func testStageBlockOrder(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	ids := []string{"QUE=", "YWE=", "Ymc=", "+w==", "/w==", "MDA=", "ZA==", "aA==", "Bw==", "bw==", "_w==", "-w=="}
	var staged []leasedb.Block
	for i, id := range ids {
		var at time.Time
		switch i % 4 {
		case 0:
			at = base
		case 1:
			at = base.Add(-time.Minute)
		case 2:
			at = base.Add(456 * time.Nanosecond) // same microsecond as base
		case 3:
			if i == 3 {
				at = time.Time{}
			} else {
				at = base.Add(time.Hour)
			}
		}
		staged = append(staged, leasedb.Block{ID: id, Key: "k/" + strconv.Itoa(i), Size: int64(i), StagedAt: at})
	}
	// Staged in reverse, in two transactions.
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		for i := len(staged) - 1; i >= len(staged)/2; i-- {
			if _, err := tx.StageBlock(ctx, acct, "c", "b", staged[i]); err != nil {
				return err
			}
		}
		return nil
	})
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		for i := len(staged)/2 - 1; i >= 0; i-- {
			if _, err := tx.StageBlock(ctx, acct, "c", "b", staged[i]); err != nil {
				return err
			}
		}
		return nil
	})
	want := append([]leasedb.Block(nil), staged...)
	sort.Slice(want, func(i, j int) bool {
		ti, tj := normTime(want[i].StagedAt), normTime(want[j].StagedAt)
		if !ti.Equal(tj) {
			return ti.Before(tj)
		}
		return want[i].ID < want[j].ID
	})
	checkBlocks(t, "Blocks order", want, getBlocks(t, s, "c", "b"))
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		bs, err := tx.Blocks(ctx, acct, "c", "b")
		checkBlocks(t, "Blocks order in Update", want, bs)
		return err
	})
}

// testStageBlockConcurrent: goroutines stage the same block id of one blob
// name at once, each in its own transaction with no other lock. Every key
// but the last one standing must be returned as replaced exactly once, or
// its object would never be collected.
func testStageBlockConcurrent(t *testing.T, s leasedb.Store) {
	const goroutines, per = 8, 15
	mustInsertContainer(t, s, "c")
	ctx := ctxT(t)
	var mu sync.Mutex
	replaced := map[string]int{}
	errs := concurrently(goroutines, func(g int) error {
		for i := 0; i < per; i++ {
			key := fmt.Sprintf("k/%d/%d", g, i)
			var old string
			err := s.Update(ctx, func(tx leasedb.Tx) error {
				var err error
				old, err = tx.StageBlock(ctx, acct, "c", "b", leasedb.Block{ID: "YQ==", Key: key, Size: 1, StagedAt: base})
				return err
			})
			if err != nil {
				return err
			}
			if old != "" {
				mu.Lock()
				replaced[old]++
				mu.Unlock()
			}
		}
		return nil
	})
	for _, err := range errs {
		t.Fatal(err)
	}
	bs := getBlocks(t, s, "c", "b")
	if len(bs) != 1 {
		t.Fatalf("Blocks = %+v, want the one block", bs)
	}
	if _, ok := replaced[bs[0].Key]; ok {
		t.Errorf("the standing key %s was also returned as replaced", bs[0].Key)
	}
	for g := 0; g < goroutines; g++ {
		for i := 0; i < per; i++ {
			key := fmt.Sprintf("k/%d/%d", g, i)
			if n := replaced[key]; key != bs[0].Key && n != 1 {
				t.Errorf("key %s returned as replaced %d times, want 1", key, n)
			}
		}
	}
}

func testStageBlockNeedsContainer(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	ctx := ctxT(t)
	blk := leasedb.Block{ID: "YQ==", Key: "k", Size: 1, StagedAt: base}
	for _, where := range [][2]string{{acct, "missing"}, {"other", "c"}} {
		err := s.Update(ctx, func(tx leasedb.Tx) error {
			_, err := tx.StageBlock(ctx, where[0], where[1], "b", blk)
			return err
		})
		if !errors.Is(err, leasedb.ErrNotFound) {
			t.Errorf("StageBlock into missing container %s/%s: got %v, want ErrNotFound", where[0], where[1], err)
		}
	}
	checkBlocks(t, "Blocks of a missing container", nil, getBlocks(t, s, "missing", "b"))
	// The existing container is fine.
	if old := stageBlock(t, s, "c", "b", blk); old != "" {
		t.Errorf("StageBlock replaced %q", old)
	}
}

// testContainerDeleteBlocks: DeleteContainer removes the staged blocks of
// committed and uncommitted blobs and returns their keys with the blobs'.
func testContainerDeleteBlocks(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c1")
	mustInsertContainer(t, s, "c2")
	blk := func(id, key string) leasedb.Block {
		return leasedb.Block{ID: id, Key: key, Size: 5, StagedAt: base}
	}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		if err := tx.PutBlob(ctx, fullBlob("c1", "x")); err != nil {
			return err
		}
		for _, st := range []struct {
			container, blob string
			b               leasedb.Block
		}{
			{"c1", "x", blk("YQ==", "blk/x/a")},
			{"c1", "uncommitted", blk("YQ==", "blk/u/a")},
			{"c1", "uncommitted", blk("Yg==", "blk/u/b")},
			{"c2", "x", blk("YQ==", "blk/c2/x")},
		} {
			if _, err := tx.StageBlock(ctx, acct, st.container, st.blob, st.b); err != nil {
				return err
			}
		}
		return nil
	})
	keys := deleteContainer(t, s, "c1")
	want := append(fullBlob("c1", "x").Keys(), "blk/x/a", "blk/u/a", "blk/u/b")
	if !reflect.DeepEqual(sortedCopy(keys), sortedCopy(want)) {
		t.Errorf("DeleteContainer keys:\n got %q\nwant %q", keys, want)
	}
	checkBlocks(t, "blocks of a deleted blob", nil, getBlocks(t, s, "c1", "x"))
	checkBlocks(t, "blocks of a deleted uncommitted blob", nil, getBlocks(t, s, "c1", "uncommitted"))
	checkBlocks(t, "blocks in another container", []leasedb.Block{blk("YQ==", "blk/c2/x")}, getBlocks(t, s, "c2", "x"))
	// A re-created container has no old blocks.
	mustInsertContainer(t, s, "c1")
	checkBlocks(t, "blocks of a re-created container", nil, getBlocks(t, s, "c1", "uncommitted"))
	// A container holding only staged blocks.
	keys = deleteContainer(t, s, "c2")
	if !reflect.DeepEqual(keys, []string{"blk/c2/x"}) {
		t.Errorf("DeleteContainer of a container with only blocks: keys %q", keys)
	}
	if c := getContainer(t, s, "c2"); c != nil {
		t.Errorf("container still there")
	}
}

// testBlockStats: count and id length of staged blocks, per blob name.
func testBlockStats(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	stats := func(blob string) (int, int) {
		t.Helper()
		var n, l int
		err := s.View(context.Background(), func(tx leasedb.Tx) error {
			var err error
			n, l, err = tx.BlockStats(context.Background(), acct, "c", blob)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return n, l
	}
	if n, l := stats("b"); n != 0 || l != 0 {
		t.Fatalf("no blocks: count %d len %d", n, l)
	}
	stageBlock(t, s, "c", "b", leasedb.Block{ID: "YWJj", Key: "k/1", Size: 1, StagedAt: base})
	stageBlock(t, s, "c", "b", leasedb.Block{ID: "ZGVm", Key: "k/2", Size: 1, StagedAt: base})
	stageBlock(t, s, "c", "b", leasedb.Block{ID: "YWJj", Key: "k/3", Size: 1, StagedAt: base})
	stageBlock(t, s, "c", "other", leasedb.Block{ID: "YQ==", Key: "k/4", Size: 1, StagedAt: base})
	if n, l := stats("b"); n != 2 || l != 4 {
		t.Fatalf("two blocks of id length 4: count %d len %d", n, l)
	}
}
