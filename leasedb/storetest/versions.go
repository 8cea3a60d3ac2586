package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/blobgw/blobgw/leasedb"
)

// Version ids as the gateway makes them: the snapshot id form, so the
// snapshot tests' ids serve.
const (
	ver1 = snap1
	ver2 = snap2
	ver3 = snap3
)

func fullVersion(container, name, vid string) *leasedb.Blob {
	b := fullBlob(container, name)
	b.VersionID, b.NonCurrent = vid, true
	return b
}

// testVersionPutGet: a version row round-trips every column through
// Version and Versions (oldest first, NonCurrent set); the blob row of the
// name keeps its own VersionID; PutVersion of an existing id changes only
// its tier and tags; DeleteVersion removes one row, then ErrNotFound; a
// version needs its container.
func testVersionPutGet(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	name := "dir/name with spaces ☃"
	cur := fullBlob("c", name)
	cur.VersionID = ver3
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		if err := tx.PutBlob(ctx, cur); err != nil {
			return err
		}
		for _, v := range []string{ver2, ver1} {
			if err := tx.PutVersion(ctx, fullVersion("c", name, v)); err != nil {
				return err
			}
		}
		return nil
	})
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		got, err := tx.Version(ctx, acct, "c", name, ver1)
		if err != nil {
			return err
		}
		checkBlob(t, fullVersion("c", name, ver1), got)
		vs, err := tx.Versions(ctx, acct, "c", name)
		if err != nil {
			return err
		}
		if len(vs) != 2 || vs[0].VersionID != ver1 || vs[1].VersionID != ver2 || !vs[0].NonCurrent {
			t.Errorf("Versions = %+v, want %s, %s", vs, ver1, ver2)
		}
		b, err := tx.Blob(ctx, acct, "c", name, leasedb.LockNone)
		if err != nil {
			return err
		}
		if b.VersionID != ver3 || b.NonCurrent {
			t.Errorf("blob row: version %q non-current %v", b.VersionID, b.NonCurrent)
		}
		if missing, err := tx.Version(ctx, acct, "c", name, ver3); err != nil || missing != nil {
			t.Errorf("Version of the current blob's id = %+v, %v; want nil (it is the blob row)", missing, err)
		}
		return nil
	})
	// Replacing an existing version changes its tier and tags only.
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		v := fullVersion("c", name, ver1)
		v.ETag, v.Size, v.AccessTier, v.Tags = `"0x8D00000000000FF"`, 1, leasedb.TierArchive, map[string]string{"new": "tag"}
		return tx.PutVersion(ctx, v)
	})
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		got, err := tx.Version(ctx, acct, "c", name, ver1)
		if err != nil {
			return err
		}
		want := fullVersion("c", name, ver1)
		want.AccessTier, want.Tags = leasedb.TierArchive, map[string]string{"new": "tag"}
		checkBlob(t, want, got)
		return nil
	})
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		return tx.DeleteVersion(ctx, acct, "c", name, ver1)
	})
	err := s.Update(ctxT(t), func(tx leasedb.Tx) error {
		return tx.DeleteVersion(ctxT(t), acct, "c", name, ver1)
	})
	if !errors.Is(err, leasedb.ErrNotFound) {
		t.Fatalf("second DeleteVersion: %v, want ErrNotFound", err)
	}
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		vs, err := tx.Versions(ctx, acct, "c", name)
		if err != nil {
			return err
		}
		if len(vs) != 1 || vs[0].VersionID != ver2 {
			t.Errorf("Versions after delete = %+v, want %s only", vs, ver2)
		}
		return nil
	})
	err = s.Update(ctxT(t), func(tx leasedb.Tx) error {
		return tx.PutVersion(ctxT(t), fullVersion("nope", "x", ver1))
	})
	if !errors.Is(err, leasedb.ErrNotFound) {
		t.Fatalf("PutVersion in a missing container: %v, want ErrNotFound", err)
	}
}

// testVersionListing: List Blobs with Versions lists, per name, its
// snapshots, its previous versions oldest first, then its blob; a name
// with versions and no blob is listed by its versions; without Versions
// no version row is listed. Every page size resumes exactly (markers in
// the middle of a name's versions), flat and with a delimiter.
func testVersionListing(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		for _, n := range []string{"a", "d/x", "z"} {
			b := fullBlob("c", n)
			b.VersionID = ver3
			if err := tx.PutBlob(ctx, b); err != nil {
				return err
			}
		}
		for _, v := range []*leasedb.Blob{fullVersion("c", "a", ver1), fullVersion("c", "a", ver2),
			fullVersion("c", "b", ver1), fullVersion("c", "d/x", ver2), fullVersion("c", "d/y", ver1)} {
			if err := tx.PutVersion(ctx, v); err != nil {
				return err
			}
		}
		return tx.PutSnapshot(ctx, fullSnapshot("c", "a", snap3))
	})
	db := &leasedb.DB{Store: s}
	entry := func(it leasedb.ListItem) string {
		if it.Prefix != "" {
			return "prefix " + it.Prefix
		}
		switch {
		case it.Blob.Snapshot != "":
			return it.Blob.Name + " snapshot " + it.Blob.Snapshot
		case it.Blob.NonCurrent:
			return it.Blob.Name + " version " + it.Blob.VersionID
		}
		return it.Blob.Name + " current " + it.Blob.VersionID
	}
	tests := []struct {
		inc       leasedb.ListInclude
		delimiter string
		want      []string
	}{
		{leasedb.ListInclude{}, "", []string{"a current " + ver3, "d/x current " + ver3, "z current " + ver3}},
		{leasedb.ListInclude{Versions: true}, "", []string{
			"a version " + ver1, "a version " + ver2, "a current " + ver3,
			"b version " + ver1,
			"d/x version " + ver2, "d/x current " + ver3,
			"d/y version " + ver1,
			"z current " + ver3}},
		{leasedb.ListInclude{Versions: true, Snapshots: true}, "", []string{
			"a snapshot " + snap3, "a version " + ver1, "a version " + ver2, "a current " + ver3,
			"b version " + ver1,
			"d/x version " + ver2, "d/x current " + ver3,
			"d/y version " + ver1,
			"z current " + ver3}},
		{leasedb.ListInclude{Versions: true}, "/", []string{
			"a version " + ver1, "a version " + ver2, "a current " + ver3,
			"b version " + ver1,
			"prefix d/",
			"z current " + ver3}},
	}
	for _, tc := range tests {
		for _, size := range []int{1, 2, 3, 100} {
			got := listPages(t, db, "", tc.delimiter, size, tc.inc, 20, entry)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("%+v delimiter %q, pages of %d:\n got %q\nwant %q", tc.inc, tc.delimiter, size, got, tc.want)
			}
		}
	}
}

// testVersionKeys: Delete Container returns the keys of version rows (once
// per name) and ReferencedKeys names them "...?versionid=ID".
func testVersionKeys(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		b := fullBlob("c", "b")
		b.VersionID = ver2
		b.Extents = []leasedb.Extent{{Key: "k/shared", Size: 1}}
		if err := tx.PutBlob(ctx, b); err != nil {
			return err
		}
		v := fullVersion("c", "b", ver1)
		v.Extents = []leasedb.Extent{{Key: "k/shared", Size: 1}, {Key: "k/version-only", Size: 1}}
		if err := tx.PutVersion(ctx, v); err != nil {
			return err
		}
		gone := fullVersion("c", "gone", ver1)
		gone.Extents = []leasedb.Extent{{Key: "k/gone", Size: 1}}
		return tx.PutVersion(ctx, gone)
	})
	refs := keyRefs(t, s)
	want := map[string]string{
		"k/shared":       acct + "/c/b",
		"k/version-only": acct + "/c/b?versionid=" + ver1,
		"k/gone":         acct + "/c/gone?versionid=" + ver1,
	}
	for k, r := range want {
		got, ok := refs[k]
		if !ok {
			t.Errorf("ReferencedKeys misses %s", k)
			continue
		}
		if k != "k/shared" && got != r {
			t.Errorf("ReferencedKeys %s: ref %q, want %q", k, got, r)
		}
	}
	var keys []string
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		var err error
		keys, err = tx.DeleteContainer(ctx, acct, "c")
		return err
	})
	if got, want := sortedCopy(keys), sortedCopy([]string{"k/shared", "k/version-only", "k/gone"}); !reflect.DeepEqual(got, want) {
		t.Fatalf("DeleteContainer keys = %q, want %q", got, want)
	}
	mustInsertContainer(t, s, "c")
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		vs, err := tx.Versions(ctx, acct, "c", "b")
		if err != nil {
			return err
		}
		if len(vs) != 0 {
			t.Errorf("versions outlived their container: %+v", vs)
		}
		return nil
	})
}

// testAccountSettings: no row reads as the defaults (versioning off); a
// stored setting reads back and can be replaced; accounts are separate.
func testAccountSettings(t *testing.T, s leasedb.Store) {
	read := func(account string) leasedb.AccountSettings {
		t.Helper()
		var got leasedb.AccountSettings
		view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
			var err error
			got, err = tx.AccountSettings(ctx, account)
			return err
		})
		return got
	}
	if got := read(acct); got.Versioning {
		t.Fatal("versioning on without a stored setting")
	}
	for _, on := range []bool{true, false, true} {
		update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
			return tx.PutAccountSettings(ctx, acct, leasedb.AccountSettings{Versioning: on})
		})
		if got := read(acct); got.Versioning != on {
			t.Fatalf("versioning %v after storing %v", got.Versioning, on)
		}
	}
	if got := read("other"); got.Versioning {
		t.Fatal("another account's setting leaked")
	}
}
