package storetest

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

// deletedVersion is a soft-deleted version row of container/name.
func deletedVersion(container, name, vid string, deleted time.Time, days int) *leasedb.Blob {
	b := deletedRow(container, name, "", deleted, days)
	b.VersionID, b.NonCurrent = vid, true
	return b
}

// testSoftDeletedVersions: a soft-deleted version (Delete Blob
// ?versionid= under a DeleteRetentionPolicy) is a row of deleted_blobs
// that round-trips every column through DeletedBlobs (after the base and
// the snapshots) and NameRows (so its extents stay a row of the name);
// it and a soft-deleted snapshot of the same id are two rows; ExpiredBlobs
// and RemoveDeletedBlob name it by its DeletedKey; ReferencedKeys names
// it by its version id; DeleteContainer returns its keys. The listings
// show it only with Versions and Deleted, among the live versions by id,
// flat and with a delimiter, resumable at every page size; with
// DeletedWithVersions a name whose versions are all soft-deleted is
// listed once (VersionsOnly), flat and with a delimiter.
func testSoftDeletedVersions(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	del := base.Add(time.Hour)
	aDel := deletedVersion("c", "a", ver2, del, 2)
	aDel.Extents = []leasedb.Extent{{Key: "k/a-v2", Size: 3}}
	aSnap := deletedRow("c", "a", ver2, del, 1) // a snapshot id equal to the version id
	aSnap.Extents = []leasedb.Extent{{Key: "k/a-s", Size: 3}}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		cur := fullBlob("c", "a")
		cur.Lease, cur.VersionID = leasedb.Lease{}, ver3
		if err := tx.PutBlob(ctx, cur); err != nil {
			return err
		}
		dx := fullBlob("c", "d/x")
		dx.Lease, dx.VersionID = leasedb.Lease{}, ver3
		if err := tx.PutBlob(ctx, dx); err != nil {
			return err
		}
		for _, v := range []*leasedb.Blob{fullVersion("c", "a", ver1), fullVersion("c", "b", ver1)} {
			if err := tx.PutVersion(ctx, v); err != nil {
				return err
			}
		}
		for _, r := range []*leasedb.Blob{aDel, aSnap, deletedVersion("c", "b", ver2, del, 2),
			deletedVersion("c", "c1", ver1, del, 2), deletedVersion("c", "c1", ver2, del, 2),
			deletedVersion("c", "d/x", ver1, del, 2), deletedVersion("c", "d/y", ver1, del, 2),
			deletedRow("c", "e", "", del, 2)} {
			if err := tx.PutDeletedBlob(ctx, r); err != nil {
				return fmt.Errorf("put deleted %s %s: %w", r.Name, leasedb.DeletedKey(r), err)
			}
		}
		return nil
	})
	putDeletedFails(t, s, deletedVersion("c", "a", ver2, del, 1), leasedb.ErrExists, "second soft-deleted version of one id")
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		// The snapshot and the version.
		if err := checkDeletedRows(t, ctx, tx, "a", aSnap, aDel); err != nil {
			return err
		}
		nr, err := tx.NameRows(ctx, acct, "c", "a")
		if err != nil {
			return err
		}
		var kinds []string
		for _, r := range nr {
			kinds = append(kinds, fmt.Sprintf("%s/%s/%v/%v", r.Snapshot, r.VersionID, r.NonCurrent, !r.DeletedTime.IsZero()))
		}
		want := []string{ver2 + "//false/true", "/" + ver1 + "/true/false", "/" + ver2 + "/true/true"}
		if fmt.Sprint(kinds) != fmt.Sprint(want) {
			t.Errorf("NameRows (snapshot/version/non-current/deleted) = %q, want %q", kinds, want)
		}
		// The snapshot alone.
		if err := checkExpired(t, ctx, tx, del.Add(36*time.Hour), leasedb.DeletedRef{BlobRef: leasedb.BlobRef{Account: acct, Container: "c", Name: "a"}, Snapshot: ver2}); err != nil {
			return err
		}
		exp, err := tx.ExpiredBlobs(ctx, del.Add(72*time.Hour), 100)
		if err != nil {
			return err
		}
		n := 0
		for _, e := range exp {
			if e.Name == "a" && e.Snapshot == leasedb.DeletedKey(aDel) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("ExpiredBlobs after 72 h = %+v, want a's version once by its key %q", exp, leasedb.DeletedKey(aDel))
		}
		return nil
	})

	db := &leasedb.DB{Store: s}
	entry := func(it leasedb.ListItem) string {
		if it.Prefix != "" {
			return "prefix " + it.Prefix
		}
		b := it.Blob
		var e string
		switch {
		case it.VersionsOnly:
			e = b.Name + " versions-only " + b.VersionID
		case b.Snapshot != "":
			e = b.Name + " snapshot " + b.Snapshot
		case b.NonCurrent:
			e = b.Name + " version " + b.VersionID
		case !b.DeletedTime.IsZero():
			e = b.Name + " base"
		default:
			e = b.Name + " current " + b.VersionID
		}
		if !b.DeletedTime.IsZero() {
			e += " (deleted)"
		}
		return e
	}
	tests := []struct {
		inc               leasedb.ListInclude
		prefix, delimiter string
		want              []string
	}{
		{leasedb.ListInclude{}, "", "", []string{"a current " + ver3, "d/x current " + ver3}},
		{leasedb.ListInclude{Versions: true}, "", "", []string{
			"a version " + ver1, "a current " + ver3, "b version " + ver1, "d/x current " + ver3}},
		{leasedb.ListInclude{Deleted: true}, "", "", []string{"a current " + ver3, "d/x current " + ver3, "e base (deleted)"}},
		{leasedb.ListInclude{Deleted: true, Snapshots: true}, "", "", []string{
			"a snapshot " + ver2 + " (deleted)", "a current " + ver3, "d/x current " + ver3, "e base (deleted)"}},
		{leasedb.ListInclude{Versions: true, Deleted: true}, "", "", []string{
			"a version " + ver1, "a version " + ver2 + " (deleted)", "a current " + ver3,
			"b version " + ver1, "b version " + ver2 + " (deleted)",
			"c1 version " + ver1 + " (deleted)", "c1 version " + ver2 + " (deleted)",
			"d/x version " + ver1 + " (deleted)", "d/x current " + ver3,
			"d/y version " + ver1 + " (deleted)",
			"e base (deleted)"}},
		{leasedb.ListInclude{Versions: true, Deleted: true, Snapshots: true}, "", "", []string{
			"a snapshot " + ver2 + " (deleted)", "a version " + ver1, "a version " + ver2 + " (deleted)", "a current " + ver3,
			"b version " + ver1, "b version " + ver2 + " (deleted)",
			"c1 version " + ver1 + " (deleted)", "c1 version " + ver2 + " (deleted)",
			"d/x version " + ver1 + " (deleted)", "d/x current " + ver3,
			"d/y version " + ver1 + " (deleted)",
			"e base (deleted)"}},
		{leasedb.ListInclude{Versions: true, Deleted: true}, "", "/", []string{
			"a version " + ver1, "a version " + ver2 + " (deleted)", "a current " + ver3,
			"b version " + ver1, "b version " + ver2 + " (deleted)",
			"c1 version " + ver1 + " (deleted)", "c1 version " + ver2 + " (deleted)",
			"prefix d/", "e base (deleted)"}},
		{leasedb.ListInclude{Versions: true, Deleted: true}, "d/", "/", []string{
			"d/x version " + ver1 + " (deleted)", "d/x current " + ver3, "d/y version " + ver1 + " (deleted)"}},
		{leasedb.ListInclude{DeletedWithVersions: true}, "", "", []string{
			"a current " + ver3, "b versions-only " + ver1, "c1 versions-only " + ver2, "d/x current " + ver3, "d/y versions-only " + ver1}},
		{leasedb.ListInclude{DeletedWithVersions: true}, "", "/", []string{
			"a current " + ver3, "b versions-only " + ver1, "c1 versions-only " + ver2, "prefix d/"}},
		{leasedb.ListInclude{DeletedWithVersions: true, Deleted: true}, "", "/", []string{
			"a current " + ver3, "b versions-only " + ver1, "c1 versions-only " + ver2, "prefix d/", "e base (deleted)"}},
		{leasedb.ListInclude{DeletedWithVersions: true}, "d/", "/", []string{"d/x current " + ver3, "d/y versions-only " + ver1}},
	}
	for _, tc := range tests {
		for _, size := range []int{1, 2, 3, 100} {
			got := listPages(t, db, tc.prefix, tc.delimiter, size, tc.inc, 30, entry)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("%+v prefix %q delimiter %q, pages of %d:\n got %q\nwant %q", tc.inc, tc.prefix, tc.delimiter, size, got, tc.want)
			}
		}
	}

	refs := keyRefs(t, s)
	if refs["k/a-v2"] != acct+"/c/a?versionid="+ver2+" (soft-deleted)" || refs["k/a-s"] != acct+"/c/a?snapshot="+ver2+" (soft-deleted)" {
		t.Errorf("ReferencedKeys = %q", refs)
	}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		return tx.RemoveDeletedBlob(ctx, acct, "c", "a", leasedb.DeletedKey(aDel))
	})
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		rows, err := tx.DeletedBlobs(ctx, acct, "c", "a")
		if err != nil || len(rows) != 1 || rows[0].Snapshot != ver2 || rows[0].NonCurrent {
			t.Errorf("after removing the version: %+v, %v; want the snapshot of the same id only", rows, err)
		}
		return nil
	})
	ctx := ctxT(t)
	if err := s.Update(ctx, func(tx leasedb.Tx) error {
		return tx.PutDeletedBlob(ctx, aDel)
	}); err != nil {
		t.Fatal(err)
	}
	var keys []string
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		var err error
		keys, err = tx.DeleteContainer(ctx, acct, "c")
		return err
	})
	found := map[string]bool{}
	for _, k := range keys {
		found[k] = true
	}
	if !found["k/a-v2"] || !found["k/a-s"] {
		t.Errorf("DeleteContainer keys %q lack the soft-deleted version's or snapshot's", keys)
	}
}

// testSoftDeleteVersionOps drives leasedb.DB over the store with
// versioning and a retention on: Delete Blob ?versionid= soft-deletes the
// version (soft reported; it reads as absent, a second delete is 404,
// nothing is queued), later writes take later version ids, Undelete Blob
// restores it as a previous version and leaves the current blob; with
// both settings off an overwrite (the few-statement path where the store
// has it) does not free the extents a soft-deleted version shares with
// the replaced blob; the purge once the retention passed removes the rows
// and queues their keys.
func testSoftDeleteVersionOps(t *testing.T, s leasedb.Store) {
	ctx := ctxT(t)
	db := &leasedb.DB{Store: s}
	mustInsertContainer(t, s, "c")
	if err := db.SetVersioning(ctx, acct, true); err != nil {
		t.Fatal(err)
	}
	if err := db.SetServicePropertiesRetention(ctx, acct, "<StorageServiceProperties/>", 3); err != nil {
		t.Fatal(err)
	}
	ref := leasedb.BlobRef{Account: acct, Container: "c", Name: "b"}
	put := func(key string) *leasedb.Blob {
		t.Helper()
		update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.AddIntent(ctx, key, base.Add(24*time.Hour)) })
		b, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: ref, Type: "BlockBlob", Extents: []leasedb.Extent{{Key: key, Size: 1}}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	v1 := put("k/1").VersionID
	// Set Blob Metadata keeps v1 as a version sharing k/1 with the
	// current blob.
	cur, err := db.SetBlobMetadata(ctx, ref, "", leasedb.Conditions{}, map[string]string{"m": "1"})
	if err != nil {
		t.Fatal(err)
	}
	soft, err := db.DeleteVersion(ctx, ref, v1, leasedb.Conditions{})
	if err != nil || !soft {
		t.Fatalf("DeleteVersion under a retention: soft %v, %v; want soft", soft, err)
	}
	if _, _, err := db.GetVersion(ctx, ref, v1, "", leasedb.Conditions{}); err == nil {
		t.Fatal("Get Blob ?versionid= of a soft-deleted version succeeded")
	}
	if _, err := db.DeleteVersion(ctx, ref, v1, leasedb.Conditions{}); err == nil {
		t.Error("deleting a soft-deleted version again succeeded")
	}
	if q := queued(t, s); len(q) != 0 {
		t.Fatalf("soft-deleting a version queued %q", q)
	}
	v3 := put("k/2").VersionID // cur (k/1) becomes a version
	if v3 <= cur.VersionID || cur.VersionID <= v1 {
		t.Fatalf("version ids %s, %s, %s not increasing", v1, cur.VersionID, v3)
	}
	if err := db.UndeleteBlob(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if v, _, err := db.GetVersion(ctx, ref, v1, "", leasedb.Conditions{}); err != nil || v.Extents[0].Key != "k/1" || !v.NonCurrent {
		t.Fatalf("undeleted version %+v, %v", v, err)
	}
	if b, _, err := db.GetBlob(ctx, ref, "", leasedb.Conditions{}); err != nil || b.VersionID != v3 || b.Extents[0].Key != "k/2" {
		t.Fatalf("current blob after Undelete Blob %+v, %v; want version %s (k/2)", b, err, v3)
	}
	// With versioning off, Set Blob Metadata keeps the current blob
	// (v3, k/2) as a version and leaves a current blob without a
	// version id that shares k/2 with it. Soft-delete every version and
	// turn the retention off: the overwrite is plain (few statements
	// where the store has them) and must not free k/2, which a
	// soft-deleted version still holds.
	if err := db.SetVersioning(ctx, acct, false); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SetBlobMetadata(ctx, ref, "", leasedb.Conditions{}, map[string]string{"m": "2"}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{v1, cur.VersionID, v3} {
		if soft, err := db.DeleteVersion(ctx, ref, v, leasedb.Conditions{}); err != nil || !soft {
			t.Fatalf("DeleteVersion %s: soft %v, %v", v, soft, err)
		}
	}
	if err := db.SetServicePropertiesRetention(ctx, acct, "<StorageServiceProperties/>", 0); err != nil {
		t.Fatal(err)
	}
	put("k/4")
	if got := queued(t, s); len(got) != 0 {
		t.Fatalf("queued %q after a plain overwrite, want nothing (k/1 and k/2 are held by soft-deleted versions)", got)
	}
	purgeAfterRetention(t, s, db)
	if err := db.UndeleteBlob(ctx, ref); err != nil {
		t.Errorf("Undelete Blob of a live blob with nothing soft-deleted: %v", err)
	}
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		if rows, err := tx.DeletedBlobs(ctx, acct, "c", "b"); err != nil || len(rows) != 0 {
			t.Errorf("soft-deleted rows after the purge: %+v, %v", rows, err)
		}
		return nil
	})
	// Retention off: a deleted version goes for good.
	if err := db.SetVersioning(ctx, acct, true); err != nil {
		t.Fatal(err)
	}
	put("k/5") // k/4 becomes a version
	vs := listVersionIDs(t, s, "b")
	if len(vs) != 1 {
		t.Fatalf("versions %q, want one", vs)
	}
	if soft, err := db.DeleteVersion(ctx, ref, vs[0], leasedb.Conditions{}); err != nil || soft {
		t.Fatalf("DeleteVersion without a retention: soft %v, %v; want a permanent delete", soft, err)
	}
	if got := sortedCopy(queued(t, s)); !reflect.DeepEqual(got, []string{"k/1", "k/2", "k/4"}) {
		t.Errorf("queued after a permanent version delete %q, want k/4 too", got)
	}
}

// listVersionIDs is the ids of the previous versions of c/name.
func listVersionIDs(t *testing.T, s leasedb.Store, name string) []string {
	t.Helper()
	var out []string
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		vs, err := tx.Versions(ctx, acct, "c", name)
		for _, v := range vs {
			out = append(out, v.VersionID)
		}
		return err
	})
	return out
}

// testSoftDeletedManyRows: a name with more soft-deleted snapshots and
// versions than one listing batch and a soft-deleted base lists every row
// once, in order (snapshots, versions by id, then the base), at every
// page size, flat and with a delimiter: the base, first in the table's
// key order, must not push the later rows out of a batch.
func testSoftDeletedManyRows(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	del := base.Add(time.Hour)
	var want []string
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		if err := tx.PutDeletedBlob(ctx, deletedRow("c", "n", "", del, 2)); err != nil {
			return err
		}
		for i := 0; i < 20; i++ {
			id := fmt.Sprintf("2024-05-17T06:41:%02d.0000000Z", i)
			if err := tx.PutDeletedBlob(ctx, deletedRow("c", "n", id, del, 2)); err != nil {
				return err
			}
		}
		for i := 0; i < 20; i++ {
			id := fmt.Sprintf("2024-05-17T06:42:%02d.0000000Z", i)
			if err := tx.PutDeletedBlob(ctx, deletedVersion("c", "n", id, del, 2)); err != nil {
				return err
			}
		}
		// p: more soft-deleted versions than the batch (64) that a
		// delimited page reads of the name its marker stopped in, and
		// more than a page of 70 reads.
		if err := tx.PutDeletedBlob(ctx, deletedRow("c", "p", "", del, 2)); err != nil {
			return err
		}
		for i := 0; i < 150; i++ {
			if err := tx.PutDeletedBlob(ctx, deletedVersion("c", "p", pVersion(i), del, 2)); err != nil {
				return err
			}
		}
		return tx.PutBlob(ctx, fullBlob("c", "o"))
	})
	var pvers []string
	for i := 0; i < 150; i++ {
		pvers = append(pvers, "version "+pVersion(i))
	}
	for i := 0; i < 20; i++ {
		want = append(want, fmt.Sprintf("snapshot 2024-05-17T06:41:%02d.0000000Z", i))
	}
	vers := []string{}
	for i := 0; i < 20; i++ {
		vers = append(vers, fmt.Sprintf("version 2024-05-17T06:42:%02d.0000000Z", i))
	}
	db := &leasedb.DB{Store: s}
	pRows := append(append([]string{}, pvers...), "base")
	for _, tc := range []struct {
		inc       leasedb.ListInclude
		delimiter string
		want      []string
	}{
		{leasedb.ListInclude{Deleted: true, Snapshots: true}, "", append(append([]string{}, want...), "base", "o", "base")},
		{leasedb.ListInclude{Deleted: true, Versions: true}, "", append(append(append([]string{}, vers...), "base", "o"), pRows...)},
		{leasedb.ListInclude{Deleted: true, Versions: true, Snapshots: true}, "", append(append(append(append([]string{}, want...), vers...), "base", "o"), pRows...)},
		{leasedb.ListInclude{Deleted: true, Versions: true}, "/", append(append(append([]string{}, vers...), "base", "o"), pRows...)},
	} {
		for _, size := range []int{1, 2, 7, 70, 500} {
			var got []string
			marker := ""
			for pages := 0; pages < 300; pages++ {
				res, err := db.ListBlobsInclude(ctxT(t), acct, "c", "", tc.delimiter, marker, size, tc.inc)
				if err != nil {
					t.Fatal(err)
				}
				for _, it := range res.Items {
					b := it.Blob
					switch {
					case b.Name == "o":
						got = append(got, "o")
					case b.Snapshot != "":
						got = append(got, "snapshot "+b.Snapshot)
					case b.NonCurrent:
						got = append(got, "version "+b.VersionID)
					default:
						got = append(got, "base")
					}
				}
				if marker = res.Next; marker == "" {
					break
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("%+v delimiter %q, pages of %d:\n got %q\nwant %q", tc.inc, tc.delimiter, size, got, tc.want)
			}
		}
	}
}

// pVersion is the i-th version id of testSoftDeletedManyRows' name p.
func pVersion(i int) string {
	return fmt.Sprintf("2024-05-17T%02d:%02d:00.0000000Z", 8+i/60, i%60)
}
