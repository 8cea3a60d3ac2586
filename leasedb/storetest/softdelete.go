package storetest

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

const snapA = "2024-05-17T06:41:12.3456780Z"

func deletedRow(container, name, snapshot string, deleted time.Time, days int) *leasedb.Blob {
	b := fullBlob(container, name)
	b.Lease = leasedb.Lease{}
	b.Snapshot = snapshot
	b.DeletedTime, b.DeleteExpires = deleted.UTC(), deleted.Add(time.Duration(days)*24*time.Hour).UTC()
	return b
}

// testSoftDeletedRows: a soft-deleted base blob and snapshot round-trip
// every column (their times too) through DeletedBlobs (base first) and
// NameRows (which counts them as rows of the name); a second row of the
// same (name, snapshot) is ErrExists; ExpiredBlobs returns what expired,
// soonest first, any account; RemoveDeletedBlob removes one, then
// ErrNotFound; ReferencedKeys names them; the listing queries show them
// with include Deleted only (the base after the versions, the snapshot
// among the snapshots, resumable past either), and DeleteContainer
// returns their keys and removes them.
func testSoftDeletedRows(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	del := base.Add(time.Hour)
	baseRow := deletedRow("c", "n", "", del, 2)
	baseRow.Extents = []leasedb.Extent{{Key: "k/base", Size: 3}}
	snapRow := deletedRow("c", "n", snapA, del.Add(time.Second), 1)
	snapRow.Extents = []leasedb.Extent{{Key: "k/snap", Size: 3}}
	live := fullBlob("c", "o")
	live.Lease = leasedb.Lease{}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		for _, r := range []*leasedb.Blob{snapRow, baseRow} {
			if err := tx.PutDeletedBlob(ctx, r); err != nil {
				return err
			}
		}
		return tx.PutBlob(ctx, live)
	})
	putDeletedFails(t, s, deletedRow("c", "n", "", del, 1), leasedb.ErrExists, "second soft-deleted base")
	putDeletedFails(t, s, deletedRow("nope", "n", "", del, 1), leasedb.ErrNotFound, "soft-deleted row without its container")
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		if err := checkDeletedRows(t, ctx, tx, "n", baseRow, snapRow); err != nil {
			return err
		}
		nr, err := tx.NameRows(ctx, acct, "c", "n")
		if err != nil {
			return err
		}
		if len(nr) != 2 || nr[0].Snapshot != snapA || nr[0].DeletedTime.IsZero() || nr[1].Snapshot != "" || !nr[1].DeleteExpires.Equal(baseRow.DeleteExpires) {
			t.Errorf("NameRows = %+v, want the soft-deleted snapshot then base", nr)
		}
		if err := checkExpired(t, ctx, tx, del.Add(36*time.Hour), leasedb.DeletedRef{BlobRef: leasedb.BlobRef{Account: acct, Container: "c", Name: "n"}, Snapshot: snapA}); err != nil {
			return err
		}
		if exp, err := tx.ExpiredBlobs(ctx, del.Add(-time.Hour), 10); err != nil || len(exp) != 0 {
			t.Errorf("ExpiredBlobs before the deletion = %+v, %v", exp, err)
		}

		// Listing: hidden without Deleted; with it the base follows
		// the name's other rows, the snapshot comes with Snapshots.
		items, err := tx.ListEntries(ctx, acct, "c", "", "", "", 10, leasedb.ListInclude{})
		if err != nil {
			return err
		}
		if len(items) != 1 || items[0].Blob.Name != "o" {
			t.Errorf("ListEntries without Deleted: %+v", items)
		}
		items, err = tx.ListEntries(ctx, acct, "c", "", "", "", 10, leasedb.ListInclude{Deleted: true, Snapshots: true})
		if err != nil {
			return err
		}
		if len(items) != 3 || items[0].Blob.Snapshot != snapA || items[0].Blob.DeletedTime.IsZero() ||
			items[1].Blob.Name != "n" || items[1].Blob.Snapshot != "" || !items[1].Blob.DeletedTime.Equal(baseRow.DeletedTime) ||
			items[2].Blob.Name != "o" || !items[2].Blob.DeletedTime.IsZero() {
			t.Fatalf("ListEntries with Deleted: %+v", items)
		}
		// Past the soft-deleted snapshot: the base; past the base
		// (position "w"): the next name.
		items, err = tx.ListEntries(ctx, acct, "c", "", "n", snapA, 10, leasedb.ListInclude{Deleted: true, Snapshots: true})
		if err != nil {
			return err
		}
		if len(items) != 2 || items[0].Blob.Name != "n" || items[0].Blob.Snapshot != "" || items[1].Blob.Name != "o" {
			t.Errorf("ListEntries past the soft-deleted snapshot: %+v", items)
		}
		items, err = tx.ListEntries(ctx, acct, "c", "", "n", "w", 10, leasedb.ListInclude{Deleted: true, Snapshots: true})
		if err != nil {
			return err
		}
		if len(items) != 1 || items[0].Blob.Name != "o" {
			t.Errorf("ListEntries past the soft-deleted base: %+v", items)
		}
		items, err = tx.ListDelimited(ctx, acct, "c", "", "/", "", 10, leasedb.ListInclude{Deleted: true})
		if err != nil {
			return err
		}
		if len(items) != 2 || items[0].Blob == nil || items[0].Blob.Name != "n" || items[0].Blob.DeletedTime.IsZero() || items[1].Blob.Name != "o" {
			t.Errorf("ListDelimited with Deleted: %+v", items)
		}
		return nil
	})
	refs := keyRefs(t, s)
	if refs["k/base"] != acct+"/c/n (soft-deleted)" || refs["k/snap"] != acct+"/c/n?snapshot="+snapA+" (soft-deleted)" {
		t.Errorf("ReferencedKeys = %q", refs)
	}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		return tx.RemoveDeletedBlob(ctx, acct, "c", "n", snapA)
	})
	ctx := ctxT(t)
	err := s.Update(ctx, func(tx leasedb.Tx) error { return tx.RemoveDeletedBlob(ctx, acct, "c", "n", snapA) })
	if !errors.Is(err, leasedb.ErrNotFound) {
		t.Errorf("removing a removed row: %v, want ErrNotFound", err)
	}
	var keys []string
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		var err error
		keys, err = tx.DeleteContainer(ctx, acct, "c")
		return err
	})
	if got := sortedCopy(keys); !reflect.DeepEqual(got, sortedCopy(append([]string{"k/base"}, live.Keys()...))) {
		t.Errorf("DeleteContainer keys = %q", got)
	}
	mustInsertContainer(t, s, "c")
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		rows, err := tx.DeletedBlobs(ctx, acct, "c", "n")
		if err != nil || len(rows) != 0 {
			t.Errorf("soft-deleted rows outlived their container: %+v, %v", rows, err)
		}
		return nil
	})
}

// testSoftDeleteOps drives leasedb.DB's soft delete over the store: with a
// retention set, Delete Blob keeps the blob and its snapshots, the name
// reads as absent, Undelete Blob brings both back with their extents; an
// overwrite keeps the replaced blob as a soft-deleted snapshot; the purge
// (database clock moved on) removes the rows and queues their keys.
func testSoftDeleteOps(t *testing.T, s leasedb.Store) {
	ctx := ctxT(t)
	db := &leasedb.DB{Store: s}
	mustInsertContainer(t, s, "c")
	if err := db.SetServicePropertiesRetention(ctx, acct, "<StorageServiceProperties/>", 3); err != nil {
		t.Fatal(err)
	}
	ref := leasedb.BlobRef{Account: acct, Container: "c", Name: "b"}
	put := func(key string) {
		t.Helper()
		update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.AddIntent(ctx, key, base.Add(24*time.Hour)) })
		if _, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: ref, Type: "BlockBlob", Extents: []leasedb.Extent{{Key: key, Size: 1}}}); err != nil {
			t.Fatal(err)
		}
	}
	put("k/1")
	if _, err := db.CreateSnapshot(ctx, ref, "", leasedb.Conditions{}, nil); err != nil {
		t.Fatal(err)
	}
	put("k/2") // keeps k/1 as a soft-deleted snapshot
	if err := db.DeleteBlob(ctx, ref, "", leasedb.Conditions{}, leasedb.IncludeSnapshots); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.GetBlob(ctx, ref, "", leasedb.Conditions{}); err == nil {
		t.Fatal("Get Blob of a soft-deleted blob succeeded")
	}
	if q := queued(t, s); len(q) != 0 {
		t.Fatalf("soft delete queued %q for collection", q)
	}
	if err := db.UndeleteBlob(ctx, ref); err != nil {
		t.Fatal(err)
	}
	b, _, err := db.GetBlob(ctx, ref, "", leasedb.Conditions{})
	if err != nil || b.Extents[0].Key != "k/2" {
		t.Fatalf("undeleted blob %+v, %v", b, err)
	}
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		snaps, err := tx.Snapshots(ctx, acct, "c", "b")
		if err != nil {
			return err
		}
		if len(snaps) != 2 || snaps[0].Extents[0].Key != "k/1" || snaps[1].Extents[0].Key != "k/1" {
			t.Errorf("undeleted snapshots %+v, want the snapshot and the overwritten blob (k/1)", snaps)
		}
		return nil
	})
	// Delete again, then let the retention pass by the database clock.
	if err := db.DeleteBlob(ctx, ref, "", leasedb.Conditions{}, leasedb.IncludeSnapshots); err != nil {
		t.Fatal(err)
	}
	purgeAfterRetention(t, s, db)
	if err := db.UndeleteBlob(ctx, ref); err == nil {
		t.Error("Undelete Blob after the purge succeeded")
	}
}

// queued is the collection queue's keys.
func queued(t *testing.T, s leasedb.Store) []string {
	t.Helper()
	keys, err := s.CollectionKeys(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// putDeletedFails puts r as a soft-deleted row in a transaction of its
// own and checks that the store refuses it with wantErr.
func putDeletedFails(t *testing.T, s leasedb.Store, r *leasedb.Blob, wantErr error, what string) {
	t.Helper()
	ctx := ctxT(t)
	err := s.Update(ctx, func(tx leasedb.Tx) error { return tx.PutDeletedBlob(ctx, r) })
	if !errors.Is(err, wantErr) {
		t.Errorf("%s: %v, want %v", what, err, wantErr)
	}
}

// checkDeletedRows checks the soft-deleted rows of blob name in container
// "c" against want, in order.
func checkDeletedRows(t *testing.T, ctx context.Context, tx leasedb.Tx, name string, want ...*leasedb.Blob) error {
	t.Helper()
	rows, err := tx.DeletedBlobs(ctx, acct, "c", name)
	if err != nil {
		return err
	}
	if len(rows) != len(want) {
		t.Fatalf("DeletedBlobs of %s = %d rows, want %d", name, len(rows), len(want))
	}
	for i, w := range want {
		checkBlob(t, w, rows[i])
	}
	return nil
}

// checkExpired checks the first 10 soft-deleted rows that have expired by
// at against want.
func checkExpired(t *testing.T, ctx context.Context, tx leasedb.Tx, at time.Time, want ...leasedb.DeletedRef) error {
	t.Helper()
	exp, err := tx.ExpiredBlobs(ctx, at, 10)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(exp, want) {
		t.Errorf("ExpiredBlobs at %v = %+v, want %+v", at, exp, want)
	}
	return nil
}

// keyRefs collects Store.ReferencedKeys: each object key with the
// row that references it.
func keyRefs(t *testing.T, s leasedb.Store) map[string]string {
	t.Helper()
	refs := map[string]string{}
	if err := s.ReferencedKeys(ctxT(t), func(key, ref string) error {
		refs[key] = ref
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return refs
}

// purgeAfterRetention purges nothing before the retention of 3 days is
// over, then moves the database clock past it (back again when the test
// ends) and checks that the purge removes 3 soft-deleted rows and queues
// their objects k/1 and k/2 for collection.
func purgeAfterRetention(t *testing.T, s leasedb.Store, db *leasedb.DB) {
	t.Helper()
	ctx := ctxT(t)
	co, ok := s.(leasedb.ClockOffsetter)
	if !ok {
		t.Fatalf("%T does not offer ClockOffsetter", s)
	}
	if n, err := db.PurgeExpiredBlobs(ctx, 10); err != nil || n != 0 {
		t.Fatalf("purge before expiry: %d, %v", n, err)
	}
	co.SetClockOffset(3*24*time.Hour + time.Minute)
	t.Cleanup(func() { co.SetClockOffset(0) })
	if n, err := db.PurgeExpiredBlobs(ctx, 10); err != nil || n != 3 {
		t.Fatalf("purge after expiry: %d rows, %v; want 3", n, err)
	}
	if got := sortedCopy(queued(t, s)); !reflect.DeepEqual(got, []string{"k/1", "k/2"}) {
		t.Errorf("queued after the purge %q, want k/1 and k/2", got)
	}
}

// addIntent records an upload intent for key that expires an hour from
// the database clock.
func addIntent(t *testing.T, s leasedb.Store, key string) {
	t.Helper()
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		return tx.AddIntent(ctx, key, now.Add(time.Hour))
	})
}
