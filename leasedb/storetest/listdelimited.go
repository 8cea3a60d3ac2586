package storetest

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/blobgw/blobgw/leasedb"
)

// delimItem is one expected item of a List Blobs page with a delimiter:
// an entry, or a BlobPrefix (prefix set).
type delimItem struct {
	listEntry
	prefix string
}

func (d delimItem) String() string {
	if d.prefix != "" {
		return "<" + d.prefix + ">"
	}
	return d.listEntry.String()
}

// delimModel is List Blobs with a delimiter as the definition says it:
// the entries under prefix after the position, each whose name holds the
// delimiter after the prefix replaced by the name up to that delimiter,
// repeats of one prefix dropped.
func delimModel(all []listEntry, inc leasedb.ListInclude, prefix, delimiter, afterName, afterSnap string) []delimItem {
	var out []delimItem
	for _, e := range all {
		if (e.snap != "" && !inc.Snapshots) || (e.staged && !inc.Uncommitted) ||
			!strings.HasPrefix(e.name, prefix) || !e.after(afterName, afterSnap) {
			continue
		}
		if i := strings.Index(e.name[len(prefix):], delimiter); i >= 0 {
			p := e.name[:len(prefix)+i+len(delimiter)]
			if len(out) == 0 || out[len(out)-1].prefix != p {
				out = append(out, delimItem{prefix: p})
			}
			continue
		}
		out = append(out, delimItem{listEntry: e})
	}
	return out
}

// testListDelimited: List Blobs with a delimiter (DB.ListBlobsInclude over
// Tx.ListDelimited) returns what the model says for every include,
// prefix, delimiter (one character, several, a multi-byte one) and
// starting marker, paged with pages of any size: markers right after a
// prefix, prefixes that span pages, markers in the middle of a name's
// snapshots; staged names and snapshot-only names roll up into prefixes
// like blobs; a prefix is never listed twice; other containers never
// show.
func testListDelimited(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	mustInsertContainer(t, s, "c2")
	committed := []string{"a", "a/b", "a/b/c", "a/c", "a//d", "b", "b/x/1", "b/x/2", "b/x/3", "b/x/4", "b/x/5", "b/y",
		"c::d::e", "c::f", "c:g", "cc", "d/", "é/1", "éé", "z"}
	snaps := map[string][]string{"a/b": {snap1}, "b": {snap1, snap2}, "z": {snap1, snap2, snap3}, "s/only": {snap1}}
	staged := []string{"a/u", "b", "u/1", "u/2", "w", "b/x/25"}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		if err := putBlobsAndSnapshots(ctx, tx, "c", committed, snaps); err != nil {
			return err
		}
		for i, n := range staged {
			blk := leasedb.Block{ID: "YmxrMA==", Key: fmt.Sprintf("k/%d", i), Size: 1, StagedAt: base}
			if _, err := tx.StageBlock(ctx, acct, "c", n, blk); err != nil {
				return err
			}
		}
		return fillNeighbour(ctx, tx, []string{"0/x", "a/a", "b/x/0", "zz/1"}, "/s")
	})
	isStaged := map[string]bool{}
	for _, n := range staged {
		isStaged[n] = true
	}
	names := map[string]bool{}
	for _, n := range committed {
		names[n] = true
	}
	for n := range snaps {
		names[n] = true
	}
	for _, n := range staged {
		names[n] = true
	}
	var all []listEntry
	for _, n := range sortedKeys(names) {
		for _, id := range snaps[n] {
			all = append(all, listEntry{name: n, snap: id})
		}
		switch {
		case containsString(committed, n):
			all = append(all, listEntry{name: n})
		case isStaged[n]:
			all = append(all, listEntry{name: n, staged: true})
		}
	}

	db := &leasedb.DB{Store: s}
	ctx := ctxT(t)
	starts := []string{"", "a/b", "b/x/3", "c::", "u/", "zzz"}
	for _, inc := range []leasedb.ListInclude{{}, {Snapshots: true}, {Uncommitted: true}, {Snapshots: true, Uncommitted: true}} {
		for _, delim := range []string{"/", "::", ":", "é"} {
			for _, prefix := range []string{"", "a/", "b/", "c", "zz"} {
				for _, start := range starts {
					want := delimModel(all, inc, prefix, delim, start, "")
					// Pages of one item from the start only: they are
					// what make markers land right after every prefix.
					sizes := []int{2, 100}
					if start == "" {
						sizes = []int{1, 3, 100}
					}
					for _, size := range sizes {
						var got []delimItem
						marker := leasedb.EncodeMarker(start)
						for pages := 0; ; pages++ {
							if pages > len(all)+1 {
								t.Fatalf("%+v delimiter %q prefix %q from %q (page %d): marker loop", inc, delim, prefix, start, size)
							}
							res, err := db.ListBlobsInclude(ctx, acct, "c", prefix, delim, marker, size, inc)
							if err != nil {
								t.Fatalf("ListBlobsInclude %+v delimiter %q prefix %q: %v", inc, delim, prefix, err)
							}
							if len(res.Items) > size || len(res.Items) < size && res.Next != "" {
								t.Fatalf("page of %d items with marker %q, page size %d", len(res.Items), res.Next, size)
							}
							for _, it := range res.Items {
								if it.Prefix != "" {
									got = append(got, delimItem{prefix: it.Prefix})
									continue
								}
								if it.Blob.Container != "c" || it.Blob.Account != acct {
									t.Errorf("listed an entry of %s/%s", it.Blob.Account, it.Blob.Container)
								}
								got = append(got, delimItem{listEntry: listEntry{name: it.Blob.Name, snap: it.Blob.Snapshot, staged: it.Uncommitted}})
							}
							if res.Next == "" {
								break
							}
							marker = res.Next
						}
						if fmt.Sprint(got) != fmt.Sprint(want) {
							t.Errorf("ListBlobsInclude %+v delimiter %q prefix %q from %q (page %d):\n got %v\nwant %v",
								inc, delim, prefix, start, size, got, want)
						}
					}
				}
			}
		}
	}

	// Items are complete: a blob as stored, a staged name with only its
	// name and type.
	res, err := db.ListBlobsInclude(ctx, acct, "c", "a/", "/", "", 100, leasedb.ListInclude{Snapshots: true, Uncommitted: true})
	if err != nil {
		t.Fatal(err)
	}
	// <a//>, a/b@snap1, a/b, <a/b/>, a/c, a/u (staged).
	if len(res.Items) != 6 {
		t.Fatalf("prefix a/: %d items, want 6", len(res.Items))
	}
	if res.Items[0].Prefix != "a//" || res.Items[3].Prefix != "a/b/" {
		t.Errorf("items 0, 3: %+v %+v, want prefixes a// and a/b/", res.Items[0], res.Items[3])
	}
	if sn := res.Items[1]; sn.Blob == nil || sn.Blob.Snapshot != snap1 {
		t.Errorf("item 1 is %+v, want a/b@%s", sn, snap1)
	} else {
		checkBlob(t, fullSnapshot("c", "a/b", snap1), sn.Blob)
	}
	if b := res.Items[2]; b.Blob == nil || b.Blob.Snapshot != "" {
		t.Errorf("item 2 is %+v, want a/b", b)
	} else {
		checkBlob(t, fullBlob("c", "a/b"), b.Blob)
	}
	if u := res.Items[5]; !u.Uncommitted || u.Blob == nil || !reflect.DeepEqual(u.Blob, normBlob(&leasedb.Blob{Account: acct, Container: "c", Name: "a/u", Type: "BlockBlob"})) {
		t.Errorf("item 5: %+v, want the staged name a/u", u)
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
