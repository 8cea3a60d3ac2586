package storetest

import (
	"context"
	"reflect"
	"testing"

	"github.com/blobgw/blobgw/leasedb"
)

// testShareRelease: ShareKeys counts one more name per call, ReleaseKeys
// one name less per occurrence, and a key is free once no name is left; a
// key never shared belongs to one name. DeleteContainer reports a key once
// per name of the container that referenced it.
func testShareRelease(t *testing.T, s leasedb.Store) {
	release := func(keys ...string) []string {
		t.Helper()
		var free []string
		update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
			var err error
			free, err = tx.ReleaseKeys(ctx, keys)
			return err
		})
		return sortedCopy(free)
	}
	share := func(keys ...string) {
		t.Helper()
		update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.ShareKeys(ctx, keys) })
	}
	check := func(what string, got []string, want ...string) {
		t.Helper()
		if len(got) == 0 && len(want) == 0 {
			return
		}
		if !reflect.DeepEqual(got, sortedCopy(want)) {
			t.Errorf("%s: free %q, want %q", what, got, want)
		}
	}
	check("never shared", release("s/a", "s/b"), "s/a", "s/b")

	share("s/1", "s/2") // two names each
	check("one of two names leaves", release("s/1"))
	check("the last name leaves", release("s/1"), "s/1")

	share("s/3")
	share("s/3") // three names
	check("two of three names leave at once", release("s/3", "s/3"))
	check("the third leaves", release("s/3"), "s/3")

	check("both names of s/2 leave at once, with a never-shared key", release("s/2", "s/2", "s/x"), "s/2", "s/x")
	check("nothing left recorded", release("s/1", "s/2", "s/3"), "s/1", "s/2", "s/3")

	// DeleteContainer: a key two names share is reported twice, a key a
	// blob shares with its own snapshot once.
	mustInsertContainer(t, s, "shares")
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		for _, n := range []string{"one", "two"} {
			b := fullBlob("shares", n)
			b.Extents = []leasedb.Extent{{Key: "shared/k", Size: 1}, {Key: "own/" + n, Size: 1}}
			if err := tx.PutBlob(ctx, b); err != nil {
				return err
			}
		}
		sn := fullBlob("shares", "one")
		sn.Extents = []leasedb.Extent{{Key: "own/one", Size: 1}}
		sn.Snapshot = "2024-05-17T06:41:12.3456780Z"
		return tx.PutSnapshot(ctx, sn)
	})
	keys := deleteContainer(t, s, "shares")
	if got, want := sortedCopy(keys), sortedCopy([]string{"shared/k", "shared/k", "own/one", "own/two"}); !reflect.DeepEqual(got, want) {
		t.Errorf("DeleteContainer keys %q, want %q", got, want)
	}
}
