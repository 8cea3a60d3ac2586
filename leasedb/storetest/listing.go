package storetest

import (
	"context"
	"reflect"
	"testing"

	"github.com/blobgw/blobgw/leasedb"
)

// orderNames are names whose byte order differs from most collations'.
var orderNames = []string{
	"a-b", "a_b", "aB", "a/b", "a", "A", "b", "B", "ab", "a%b", "a.b", "a b", "a~", "a0",
	"é", "e", "z", "Z", "\u00ff", "\u4e16\u754c", "\U0001F600", "a\u00e9", "ae", "AE", "_", "-", "0",
}

func testContainerList(t *testing.T, s leasedb.Store) {
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		for _, n := range orderNames {
			if err := tx.InsertContainer(ctx, &leasedb.Container{Account: acct, Name: n, ETag: `"x"`}); err != nil {
				return err
			}
			// Same names in other accounts must not show up.
			for _, a := range []string{"acc", "acct0", "acct_"} {
				if err := tx.InsertContainer(ctx, &leasedb.Container{Account: a, Name: n, ETag: `"x"`}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	want := sortedCopy(orderNames)

	// One page.
	var all []string
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		cs, err := tx.ListContainers(ctx, acct, "", "", 1000)
		for _, c := range cs {
			all = append(all, c.Name)
			if c.Account != acct {
				t.Errorf("listed container of account %q", c.Account)
			}
		}
		return err
	})
	if !reflect.DeepEqual(all, want) {
		t.Errorf("ListContainers order:\n got %q\nwant %q (Go's sort.Strings, byte order)", all, want)
	}

	// Pages of every size, each continuing after the last name.
	for _, size := range []int{1, 2, 3, 7, len(want), len(want) + 1} {
		got := containerPages(t, s, "", "", size, len(want)+1)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("page size %d:\n got %q\nwant %q", size, got, want)
		}
	}
}

func testContainerListPrefix(t *testing.T, s leasedb.Store) {
	names := uniq(append([]string{"a%", "a%%", "a_", "a_x", "a\\b", "a\\", "ab%", "\U0010FFFF", "\U0010FFFFa", "\uD7FFx", "\uE000"}, orderNames...))
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		for _, n := range names {
			if err := tx.InsertContainer(ctx, &leasedb.Container{Account: acct, Name: n, ETag: `"x"`}); err != nil {
				return err
			}
		}
		return nil
	})
	for _, tc := range []struct{ prefix, after string }{
		{"a", ""}, {"a_", ""}, {"a%", ""}, {"a\\", ""}, {"a-", ""}, {"A", ""}, {"ab", ""},
		{"a", "a/b"}, {"a", "a_"}, {"a", "b"}, {"a", "0"}, {"b", "a"}, {"", "a_b"},
		{"\U0010FFFF", ""}, {"\uD7FF", ""}, {"\u4e16", ""}, {"é", ""}, {"zz", ""}, {"", ""},
	} {
		var want []string
		for _, n := range sortedCopy(names) {
			if len(n) >= len(tc.prefix) && n[:len(tc.prefix)] == tc.prefix && n > tc.after {
				want = append(want, n)
			}
		}
		for _, size := range []int{1000, 2} {
			got := containerPages(t, s, tc.prefix, tc.after, size, len(names)+1)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("prefix %q after %q (page %d):\n got %q\nwant %q", tc.prefix, tc.after, size, got, want)
			}
		}
	}
}

func testBlobList(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	mustInsertContainer(t, s, "c2")
	names := []string{"dir/a", "dir/b", "dir/sub/c", "dir%", "dir_x", "dirX", "dir", "dir/", "dir0", "d", "e", "dir-",
		"dir\\x", "dïr", "dir/\u00e9", "dir/\U0001F600"}
	names = uniq(append(names, orderNames...))
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		for _, n := range names {
			if err := tx.PutBlob(ctx, fullBlob("c", n)); err != nil {
				return err
			}
		}
		// Same names in a neighbour container must not show up.
		for _, n := range names[:5] {
			if err := tx.PutBlob(ctx, fullBlob("c2", n)); err != nil {
				return err
			}
		}
		return nil
	})
	for _, tc := range []struct{ prefix, after string }{
		{"", ""}, {"dir", ""}, {"dir/", ""}, {"dir_", ""}, {"dir%", ""}, {"dir\\", ""}, {"dir", "dir/a"},
		{"dir/", "dir/b"}, {"dir/", "dir/sub/c"}, {"a", "a-b"}, {"", "dir/zzz"}, {"x", ""},
	} {
		var want []string
		for _, n := range sortedCopy(names) {
			if len(n) >= len(tc.prefix) && n[:len(tc.prefix)] == tc.prefix && n > tc.after {
				want = append(want, n)
			}
		}
		for _, size := range []int{1000, 1, 3} {
			var got []string
			after := tc.after
			for {
				var page []*leasedb.Blob
				view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
					var err error
					page, err = tx.ListBlobs(ctx, acct, "c", tc.prefix, after, size)
					return err
				})
				if len(page) > size {
					t.Fatalf("page of %d rows, limit %d", len(page), size)
				}
				for _, b := range page {
					got = append(got, b.Name)
					if b.Container != "c" {
						t.Errorf("listed blob of container %q", b.Container)
					}
				}
				if len(page) < size {
					break
				}
				after = page[len(page)-1].Name
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("ListBlobs prefix %q after %q (page %d):\n got %q\nwant %q", tc.prefix, tc.after, size, got, want)
			}
		}
	}
	// Listed rows are complete rows.
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		bs, err := tx.ListBlobs(ctx, acct, "c", "dir/a", "", 1)
		if err != nil {
			return err
		}
		if len(bs) != 1 {
			t.Fatalf("got %d rows", len(bs))
		}
		checkBlob(t, fullBlob("c", "dir/a"), bs[0])
		return nil
	})
}

// containerPages lists acct's containers under prefix after after, size
// to a page, each page continuing after the last name, and returns the
// names. It fails t on a page over size and on paging that has not ended
// after maxPages pages.
func containerPages(t *testing.T, s leasedb.Store, prefix, after string, size, maxPages int) []string {
	t.Helper()
	var got []string
	for pages := 0; ; pages++ {
		if pages > maxPages {
			t.Fatalf("page size %d: paging does not end", size)
		}
		var page []*leasedb.Container
		view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
			var err error
			page, err = tx.ListContainers(ctx, acct, prefix, after, size)
			return err
		})
		if len(page) > size {
			t.Fatalf("page size %d: got %d rows", size, len(page))
		}
		for _, c := range page {
			got = append(got, c.Name)
		}
		if len(page) < size {
			return got
		}
		after = page[len(page)-1].Name
	}
}
