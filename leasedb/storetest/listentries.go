package storetest

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/blobgw/blobgw/leasedb"
)

// listEntry is one expected ListEntries item: a blob row (snap ""), a
// snapshot row, or a name with only staged blocks.
type listEntry struct {
	name, snap string
	staged     bool
}

func (e listEntry) String() string {
	switch {
	case e.staged:
		return e.name + "(staged)"
	case e.snap != "":
		return e.name + "@" + e.snap
	}
	return e.name
}

// after reports whether e comes after the position (name, snap) in
// listing order: (n, "") is past every entry of n, (n, s) past n's
// snapshot s only.
func (e listEntry) after(name, snap string) bool {
	if e.name != name {
		return e.name > name
	}
	return snap != "" && (e.snap == "" || e.snap > snap)
}

// testListEntries: ListEntries merges blob rows, snapshot rows and names
// that have only staged blocks in listing order (name, then snapshots
// oldest first, then the blob), lists a committed name with staged blocks
// once, honours the prefix and resumes from any position, including the
// middle of a name's snapshots, with pages of any size; each include
// switch leaves its entries out when off; other containers never show.
func testListEntries(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	mustInsertContainer(t, s, "c2")
	committed := []string{"a", "b/x", "d", "é"}
	snaps := map[string][]string{"a": {snap1, snap2}, "d": {snap3}}
	// d is committed and also has staged blocks; the others have only
	// staged blocks, several each (a staged name is one entry).
	staged := []string{"a0", "b", "b/y", "c", "d", "e", "b/y/z"}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		if err := putBlobsAndSnapshots(ctx, tx, "c", committed, snaps); err != nil {
			return err
		}
		for i, n := range staged {
			for j := 0; j < 3; j++ {
				blk := leasedb.Block{ID: fmt.Sprintf("YmxrMD%d=", j), Key: fmt.Sprintf("k/%d/%d", i, j), Size: 1, StagedAt: base}
				if _, err := tx.StageBlock(ctx, acct, "c", n, blk); err != nil {
					return err
				}
			}
		}
		// The neighbour container has entries of its own before, between
		// and after ours.
		return fillNeighbour(ctx, tx, []string{"0", "a1", "b/x0", "zz"}, "s")
	})
	all := []listEntry{
		{name: "a", snap: snap1}, {name: "a", snap: snap2}, {name: "a"},
		{name: "a0", staged: true},
		{name: "b", staged: true},
		{name: "b/x"},
		{name: "b/y", staged: true},
		{name: "b/y/z", staged: true},
		{name: "c", staged: true},
		{name: "d", snap: snap3}, {name: "d"},
		{name: "e", staged: true},
		{name: "é"},
	}
	// Positions to resume from: the start, every entry, names and
	// snapshot ids between entries, positions before and past every
	// prefix.
	positions := [][2]string{{"", ""}, {"0", snap1}, {"a", snap3}, {"a", "2024"}, {"b/", ""}, {"b/y", ""},
		{"c", snap1}, {"d", snap2}, {"zz", ""}, {"é", snap1}}
	for _, e := range all {
		positions = append(positions, [2]string{e.name, e.snap})
	}
	for _, inc := range []leasedb.ListInclude{{}, {Snapshots: true}, {Uncommitted: true}, {Snapshots: true, Uncommitted: true}} {
		for _, prefix := range []string{"", "a", "b/", "d", "z"} {
			for _, pos := range positions {
				var want []listEntry
				for _, e := range all {
					if (e.snap != "" && !inc.Snapshots) || (e.staged && !inc.Uncommitted) {
						continue
					}
					if strings.HasPrefix(e.name, prefix) && e.after(pos[0], pos[1]) {
						want = append(want, e)
					}
				}
				for _, size := range []int{1, 2, 3, 100} {
					got := listAllEntries(t, s, prefix, pos[0], pos[1], size, inc)
					if fmt.Sprint(got) != fmt.Sprint(want) {
						t.Errorf("ListEntries %+v prefix %q after %q (page %d):\n got %v\nwant %v",
							inc, prefix, pos, size, got, want)
					}
				}
			}
		}
	}

	// Items are complete: blob and snapshot rows as stored, a staged name
	// with only its name and type.
	var items []leasedb.ListItem
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		var err error
		items, err = tx.ListEntries(ctx, acct, "c", "", "", "", 100, leasedb.ListInclude{Snapshots: true, Uncommitted: true})
		return err
	})
	if len(items) != len(all) {
		t.Fatalf("got %d items, want %d", len(items), len(all))
	}
	for i, it := range items {
		e := all[i]
		if it.Prefix != "" || it.Uncommitted != e.staged {
			t.Errorf("item %v: Prefix %q Uncommitted %v", e, it.Prefix, it.Uncommitted)
		}
		switch {
		case e.staged:
			want := normBlob(&leasedb.Blob{Account: acct, Container: "c", Name: e.name, Type: "BlockBlob"})
			if !reflect.DeepEqual(it.Blob, want) {
				t.Errorf("staged item %s:\n got %#v\nwant %#v", e.name, it.Blob, want)
			}
		case e.snap != "":
			checkBlob(t, fullSnapshot("c", e.name, e.snap), it.Blob)
		default:
			checkBlob(t, fullBlob("c", e.name), it.Blob)
		}
	}

	// Committing a staged-only name makes it a blob entry; dropping a
	// name's blocks drops its entry.
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		if err := tx.PutBlob(ctx, fullBlob("c", "e")); err != nil {
			return err
		}
		return tx.DeleteBlocks(ctx, acct, "c", "c")
	})
	got := listAllEntries(t, s, "c", "", "", 2, leasedb.ListInclude{Uncommitted: true})
	if fmt.Sprint(got) != "[]" {
		t.Errorf("after DeleteBlocks: %v", got)
	}
	got = listAllEntries(t, s, "e", "", "", 1, leasedb.ListInclude{Uncommitted: true})
	if fmt.Sprint(got) != "[e]" {
		t.Errorf("after committing a staged name: %v", got)
	}
}

// listAllEntries pages through ListEntries with pages of size, resuming
// after the last item of each full page.
func listAllEntries(t *testing.T, s leasedb.Store, prefix, after, afterSnap string, size int, inc leasedb.ListInclude) []listEntry {
	t.Helper()
	var out []listEntry
	for {
		var page []leasedb.ListItem
		view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
			var err error
			page, err = tx.ListEntries(ctx, acct, "c", prefix, after, afterSnap, size, inc)
			return err
		})
		if len(page) > size {
			t.Fatalf("page of %d items, limit %d", len(page), size)
		}
		for _, it := range page {
			if it.Blob.Container != "c" || it.Blob.Account != acct {
				t.Errorf("listed an entry of %s/%s", it.Blob.Account, it.Blob.Container)
			}
			out = append(out, listEntry{name: it.Blob.Name, snap: it.Blob.Snapshot, staged: it.Uncommitted})
		}
		if len(page) < size {
			return out
		}
		last := page[len(page)-1].Blob
		after, afterSnap = last.Name, last.Snapshot
	}
}
