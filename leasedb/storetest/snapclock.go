package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

// frozenStore is s with the database clock standing still at at (a
// clock stepped back, or two transactions in one tick).
type frozenStore struct {
	leasedb.Store
	at time.Time
}

type frozenTx struct {
	leasedb.Tx
	at time.Time
}

func (t frozenTx) Now(context.Context) (time.Time, error) { return t.at, nil }

func (s frozenStore) Update(ctx context.Context, fn func(leasedb.Tx) error) error {
	return s.Store.Update(ctx, func(tx leasedb.Tx) error { return fn(frozenTx{tx, s.at}) })
}

func (s frozenStore) View(ctx context.Context, fn func(leasedb.Tx) error) error {
	return s.Store.View(ctx, func(tx leasedb.Tx) error { return fn(frozenTx{tx, s.at}) })
}

// testSnapshotIDPastSoftDeleted: with the clock standing still, Snapshot
// Blob never hands out the id of a soft-deleted snapshot of the name:
// two snapshots of one id would be one after Undelete Blob (the second
// soft delete renamed the client's snapshot), and the id the client holds
// would name the other's bytes.
func testSnapshotIDPastSoftDeleted(t *testing.T, s leasedb.Store) {
	ctx := ctxT(t)
	mustInsertContainer(t, s, "c")
	fs := frozenStore{Store: s, at: base.Add(time.Hour)}
	db := &leasedb.DB{Store: fs}
	if err := db.SetServicePropertiesRetention(ctx, acct, "<StorageServiceProperties/>", 3); err != nil {
		t.Fatal(err)
	}
	ref := leasedb.BlobRef{Account: acct, Container: "c", Name: "n"}
	put := func(key string) {
		t.Helper()
		addIntent(t, s, key)
		if _, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: ref, Type: "BlockBlob", Extents: []leasedb.Extent{{Key: key, Size: 1}}}); err != nil {
			t.Fatal(err)
		}
	}
	snapshot := func() string {
		t.Helper()
		sn, err := db.CreateSnapshot(ctx, ref, "", leasedb.Conditions{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return sn.Snapshot
	}
	put("k/1")
	first := snapshot()
	if err := db.DeleteSnapshot(ctx, ref, first, leasedb.Conditions{}); err != nil {
		t.Fatal(err)
	}
	put("k/2")
	second := snapshot()
	if second == first {
		t.Fatalf("Snapshot Blob gave id %s, the soft-deleted snapshot's", first)
	}
	if err := db.DeleteSnapshot(ctx, ref, second, leasedb.Conditions{}); err != nil {
		t.Fatal(err)
	}
	if err := db.UndeleteBlob(ctx, ref); err != nil {
		t.Fatal(err)
	}
	for id, key := range map[string]string{first: "k/1", second: "k/2"} {
		sn, _, err := db.GetSnapshot(ctx, ref, id, leasedb.Conditions{})
		if err != nil {
			t.Fatalf("snapshot %s after Undelete Blob: %v", id, err)
		}
		if len(sn.Extents) != 1 || sn.Extents[0].Key != key {
			t.Errorf("snapshot %s after Undelete Blob holds %+v, want %s", id, sn.Extents, key)
		}
	}
}
