package storetest

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/blobgw/blobgw/leasedb"
)

// Snapshot ids as the gateway makes them: they sort by time in byte order.
const (
	snap1 = "2024-05-17T06:41:12.3456780Z"
	snap2 = "2024-05-17T06:41:12.3456781Z"
	snap3 = "2024-05-18T00:00:00.0000000Z"
)

// fullSnapshot is fullBlob as a snapshot row: every column set.
func fullSnapshot(container, name, snapshot string) *leasedb.Blob {
	b := fullBlob(container, name)
	b.Snapshot = snapshot
	return b
}

func getSnapshot(t *testing.T, s leasedb.Store, container, name, snapshot string) *leasedb.Blob {
	t.Helper()
	var b *leasedb.Blob
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		var err error
		b, err = tx.Snapshot(ctx, acct, container, name, snapshot)
		return err
	})
	return b
}

func getSnapshots(t *testing.T, s leasedb.Store, container, name string) []*leasedb.Blob {
	t.Helper()
	var bs []*leasedb.Blob
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		var err error
		bs, err = tx.Snapshots(ctx, acct, container, name)
		return err
	})
	return bs
}

// snapshotIDs returns the snapshot ids of bs, in order.
func snapshotIDs(bs []*leasedb.Blob) []string {
	var ids []string
	for _, b := range bs {
		ids = append(ids, b.Snapshot)
	}
	return ids
}

// testSnapshotPutGet: a snapshot row round-trips every column (including
// zero values and nil ContentMD5) through Snapshot and Snapshots, in a View
// and in an Update; the base row of the same name is a separate row whose
// Snapshot reads back "" through Blob and ListBlobs.
func testSnapshotPutGet(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	name := "dir/name with spaces ☃"
	full := fullSnapshot("c", name, snap1)
	sparse := &leasedb.Blob{Account: acct, Container: "c", Name: name, Type: "AppendBlob", ETag: `"0x8D0000000000F00"`,
		Snapshot: snap2}
	baseRow := fullBlob("c", name)
	baseRow.ETag = `"0x8D0000000000B0B"`
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		if err := tx.PutBlob(ctx, baseRow); err != nil {
			return err
		}
		if err := tx.PutSnapshot(ctx, full); err != nil {
			return err
		}
		if err := tx.PutSnapshot(ctx, sparse); err != nil {
			return err
		}
		// Read back inside the writing transaction.
		got, err := tx.Snapshot(ctx, acct, "c", name, snap1)
		if err != nil {
			return err
		}
		checkBlob(t, full, got)
		return nil
	})
	checkBlob(t, full, getSnapshot(t, s, "c", name, snap1))
	checkBlob(t, sparse, getSnapshot(t, s, "c", name, snap2))
	if got := getSnapshot(t, s, "c", name, snap1); got != nil && got.Props.ContentMD5 == nil {
		t.Errorf("ContentMD5 lost")
	}
	if got := getSnapshot(t, s, "c", name, snap2); got != nil && got.Props.ContentMD5 != nil {
		t.Errorf("nil ContentMD5 came back as %#v", got.Props.ContentMD5)
	}
	ss := getSnapshots(t, s, "c", name)
	if len(ss) != 2 {
		t.Fatalf("Snapshots: got %d rows, want 2", len(ss))
	}
	checkBlob(t, full, ss[0])
	checkBlob(t, sparse, ss[1])

	// The base row is untouched and is no snapshot.
	checkBlob(t, baseRow, getBlob(t, s, "c", name))
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		got, err := tx.Blob(ctx, acct, "c", name, leasedb.LockExclusive)
		if err != nil {
			return err
		}
		checkBlob(t, baseRow, got)
		return nil
	})
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		bs, err := tx.ListBlobs(ctx, acct, "c", "", "", 100)
		if err != nil {
			return err
		}
		if len(bs) != 1 {
			t.Fatalf("ListBlobs lists snapshots: got %d rows, want 1", len(bs))
		}
		checkBlob(t, baseRow, bs[0])
		return nil
	})

	// Absent snapshots read as nil, nil; a snapshot id is not a blob name.
	for _, where := range [][3]string{{"c", name, snap3}, {"c", "absent", snap1}, {"no-container", name, snap1}, {"c", name, ""}} {
		if got := getSnapshot(t, s, where[0], where[1], where[2]); got != nil {
			t.Errorf("absent snapshot %q: got %+v, want nil", where, got)
		}
	}
	if got := getSnapshots(t, s, "c", "absent"); got != nil {
		t.Errorf("Snapshots of a name without any: got %+v, want nil", got)
	}

	// A snapshot needs no base row: deleting the base leaves them.
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.DeleteBlob(ctx, acct, "c", name) })
	if got := snapshotIDs(getSnapshots(t, s, "c", name)); !reflect.DeepEqual(got, []string{snap1, snap2}) {
		t.Errorf("Snapshots after deleting the base: %q", got)
	}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		return tx.PutSnapshot(ctx, fullSnapshot("c", "never-committed", snap1))
	})
	checkBlob(t, fullSnapshot("c", "never-committed", snap1), getSnapshot(t, s, "c", "never-committed", snap1))
}

// testSnapshotExists: a second PutSnapshot of the same id is ErrExists and
// leaves the row alone; the transaction stays usable; the same id on
// another name, container or account is a different row.
func testSnapshotExists(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	mustInsertContainer(t, s, "c2")
	first := fullSnapshot("c", "b", snap1)
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutSnapshot(ctx, first) })
	ctx := ctxT(t)
	err := s.Update(ctx, func(tx leasedb.Tx) error {
		again := &leasedb.Blob{Account: acct, Container: "c", Name: "b", Type: "AppendBlob", ETag: `"0x8D0000000000FFF"`, Snapshot: snap1}
		err := tx.PutSnapshot(ctx, again)
		if !errors.Is(err, leasedb.ErrExists) {
			t.Errorf("second PutSnapshot: got %v, want ErrExists", err)
		}
		// The transaction can go on after ErrExists.
		if err := tx.PutSnapshot(ctx, fullSnapshot("c", "b", snap2)); err != nil {
			t.Errorf("PutSnapshot after ErrExists: %v", err)
		}
		return err
	})
	if !errors.Is(err, leasedb.ErrExists) {
		t.Errorf("Update: got %v, want ErrExists unchanged", err)
	}
	checkBlob(t, first, getSnapshot(t, s, "c", "b", snap1))
	if got := getSnapshot(t, s, "c", "b", snap2); got != nil {
		t.Errorf("rolled-back snapshot is there: %+v", got)
	}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		for _, b := range []*leasedb.Blob{fullSnapshot("c", "b2", snap1), fullSnapshot("c2", "b", snap1)} {
			if err := tx.PutSnapshot(ctx, b); err != nil {
				return err
			}
		}
		if err := tx.InsertContainer(ctx, &leasedb.Container{Account: "other", Name: "c", ETag: `"0x1"`}); err != nil {
			return err
		}
		other := fullSnapshot("c", "b", snap1)
		other.Account = "other"
		return tx.PutSnapshot(ctx, other)
	})
}

// testSnapshotNeedsContainer: PutSnapshot into a missing container is
// ErrNotFound; so is one in a container of the same name in another
// account.
func testSnapshotNeedsContainer(t *testing.T, s leasedb.Store) {
	ctx := ctxT(t)
	err := s.Update(ctx, func(tx leasedb.Tx) error { return tx.PutSnapshot(ctx, fullSnapshot("missing", "b", snap1)) })
	if !errors.Is(err, leasedb.ErrNotFound) {
		t.Errorf("PutSnapshot into a missing container: got %v, want ErrNotFound", err)
	}
	mustInsertContainer(t, s, "c")
	err = s.Update(ctx, func(tx leasedb.Tx) error {
		b := fullSnapshot("c", "b", snap1)
		b.Account = "other"
		return tx.PutSnapshot(ctx, b)
	})
	if !errors.Is(err, leasedb.ErrNotFound) {
		t.Errorf("PutSnapshot into another account's container: got %v, want ErrNotFound", err)
	}
	err = s.Update(ctx, func(tx leasedb.Tx) error { return tx.PutSnapshot(ctx, fullSnapshot("c", "b", "")) })
	if err == nil {
		t.Errorf("PutSnapshot with an empty snapshot id succeeded")
	}
	if got := getSnapshots(t, s, "c", "b"); got != nil {
		t.Errorf("failed PutSnapshot left rows: %+v", got)
	}
}

// testSnapshotList: Snapshots lists only the name's rows (not those of
// names sharing a prefix, another container or another account), oldest
// first (byte order of the ids), whatever the insertion order.
func testSnapshotList(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	mustInsertContainer(t, s, "c2")
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		if err := tx.InsertContainer(ctx, &leasedb.Container{Account: "other", Name: "c", ETag: `"0x1"`}); err != nil {
			return err
		}
		for _, b := range []*leasedb.Blob{
			fullSnapshot("c", "b", snap3),
			fullSnapshot("c", "b", snap1),
			fullSnapshot("c", "b", snap2),
			fullSnapshot("c", "b/", "2024-05-17T06:41:12.3456779Z"),
			fullSnapshot("c", "b0", snap1),
			fullSnapshot("c", "a", snap1),
			fullSnapshot("c2", "b", "2023-01-01T00:00:00.0000000Z"),
		} {
			if err := tx.PutSnapshot(ctx, b); err != nil {
				return err
			}
		}
		other := fullSnapshot("c", "b", "2020-01-01T00:00:00.0000000Z")
		other.Account = "other"
		return tx.PutSnapshot(ctx, other)
	})
	ss := getSnapshots(t, s, "c", "b")
	if got, want := snapshotIDs(ss), []string{snap1, snap2, snap3}; !reflect.DeepEqual(got, want) {
		t.Errorf("Snapshots order:\n got %q\nwant %q", got, want)
	}
	for i, b := range ss {
		checkBlob(t, fullSnapshot("c", "b", b.Snapshot), b)
		if b.Name != "b" || b.Container != "c" || b.Account != acct {
			t.Errorf("row %d is %s/%s/%s", i, b.Account, b.Container, b.Name)
		}
	}
	if got := snapshotIDs(getSnapshots(t, s, "c2", "b")); !reflect.DeepEqual(got, []string{"2023-01-01T00:00:00.0000000Z"}) {
		t.Errorf("Snapshots in c2: %q", got)
	}
	// Snapshots are no blobs.
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		bs, err := tx.ListBlobs(ctx, acct, "c", "", "", 100)
		if len(bs) != 0 {
			t.Errorf("ListBlobs lists %d snapshot rows", len(bs))
		}
		return err
	})
	// The same in a write transaction.
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		ss, err := tx.Snapshots(ctx, acct, "c", "b")
		if got, want := snapshotIDs(ss), []string{snap1, snap2, snap3}; !reflect.DeepEqual(got, want) {
			t.Errorf("Snapshots in Update:\n got %q\nwant %q", got, want)
		}
		return err
	})
}

// testSnapshotDelete: DeleteSnapshot removes exactly one row; a missing one
// is ErrNotFound.
func testSnapshotDelete(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		if err := tx.PutBlob(ctx, fullBlob("c", "b")); err != nil {
			return err
		}
		for _, b := range []*leasedb.Blob{fullSnapshot("c", "b", snap1), fullSnapshot("c", "b", snap2), fullSnapshot("c", "b2", snap1)} {
			if err := tx.PutSnapshot(ctx, b); err != nil {
				return err
			}
		}
		return nil
	})
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.DeleteSnapshot(ctx, acct, "c", "b", snap1) })
	if got := getSnapshot(t, s, "c", "b", snap1); got != nil {
		t.Errorf("deleted snapshot still there")
	}
	if got := snapshotIDs(getSnapshots(t, s, "c", "b")); !reflect.DeepEqual(got, []string{snap2}) {
		t.Errorf("Snapshots after delete: %q", got)
	}
	if got := getSnapshot(t, s, "c", "b2", snap1); got == nil {
		t.Errorf("DeleteSnapshot removed the same id of another name")
	}
	checkBlob(t, fullBlob("c", "b"), getBlob(t, s, "c", "b"))
	for _, where := range [][3]string{{"c", "b", snap1}, {"c", "b", snap3}, {"c", "never", snap1}, {"nope", "b", snap2}, {"c", "b", ""}} {
		ctx := ctxT(t)
		err := s.Update(ctx, func(tx leasedb.Tx) error { return tx.DeleteSnapshot(ctx, acct, where[0], where[1], where[2]) })
		if !errors.Is(err, leasedb.ErrNotFound) {
			t.Errorf("DeleteSnapshot %q: got %v, want ErrNotFound", where, err)
		}
	}
	// The base blob is no snapshot either way.
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.DeleteSnapshot(ctx, acct, "c", "b", snap2) })
	checkBlob(t, fullBlob("c", "b"), getBlob(t, s, "c", "b"))
	if got := getSnapshots(t, s, "c", "b"); got != nil {
		t.Errorf("Snapshots after deleting all: %+v", got)
	}
}

// testContainerDeleteSnapshots: DeleteContainer deletes the snapshot rows
// with the blobs and blocks, and returns every key they referenced once,
// though the base blob, its snapshots and a staged block share some.
func testContainerDeleteSnapshots(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c1")
	mustInsertContainer(t, s, "c2")
	ext := func(keys ...string) []leasedb.Extent {
		var x []leasedb.Extent
		for _, k := range keys {
			x = append(x, leasedb.Extent{Key: k, Size: 1})
		}
		return x
	}
	put := func(b *leasedb.Blob, keys ...string) *leasedb.Blob {
		b.Extents = ext(keys...)
		return b
	}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		// The base commits a key twice; snapshots share keys with it and
		// with each other.
		if err := tx.PutBlob(ctx, put(fullBlob("c1", "x"), "k/1", "k/2", "k/1")); err != nil {
			return err
		}
		for _, b := range []*leasedb.Blob{
			put(fullSnapshot("c1", "x", snap1), "k/0", "k/1"),
			put(fullSnapshot("c1", "x", snap2), "k/0", "k/3"),
			// A snapshot whose base is gone.
			put(fullSnapshot("c1", "gone", snap1), "g/1", "k/3"),
			put(fullSnapshot("c1", "empty", snap1)),
			put(fullSnapshot("c2", "x", snap1), "c2/1"),
		} {
			if err := tx.PutSnapshot(ctx, b); err != nil {
				return err
			}
		}
		// A staged block whose object a snapshot references too (a block
		// staged again after a commit), and one of its own.
		for _, b := range []leasedb.Block{{ID: "YQ==", Key: "k/3", Size: 1, StagedAt: base}, {ID: "Yg==", Key: "blk/x", Size: 1, StagedAt: base}} {
			if _, err := tx.StageBlock(ctx, acct, "c1", "x", b); err != nil {
				return err
			}
		}
		return nil
	})
	keys := deleteContainer(t, s, "c1")
	// Each key once per name referencing it: k/3 belongs to x (a snapshot
	// and a staged block) and to gone.
	want := []string{"k/0", "k/1", "k/2", "k/3", "k/3", "g/1", "blk/x"}
	if !reflect.DeepEqual(sortedCopy(keys), sortedCopy(want)) {
		t.Errorf("DeleteContainer keys:\n got %q\nwant %q (once per name)", keys, want)
	}
	for _, n := range []string{"x", "gone", "empty"} {
		if got := getSnapshots(t, s, "c1", n); got != nil {
			t.Errorf("snapshots of %s remain: %q", n, snapshotIDs(got))
		}
	}
	if got := snapshotIDs(getSnapshots(t, s, "c2", "x")); !reflect.DeepEqual(got, []string{snap1}) {
		t.Errorf("snapshots in another container: %q", got)
	}
	// A re-created container has no old snapshots.
	mustInsertContainer(t, s, "c1")
	if got := getSnapshot(t, s, "c1", "x", snap1); got != nil {
		t.Errorf("re-created container has an old snapshot")
	}
	// A container holding only snapshots.
	keys = deleteContainer(t, s, "c2")
	if !reflect.DeepEqual(keys, []string{"c2/1"}) {
		t.Errorf("DeleteContainer of a container with only snapshots: keys %q", keys)
	}
	if c := getContainer(t, s, "c2"); c != nil {
		t.Errorf("container still there")
	}
}
