package postgres_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

// TestPutBlobAwaitsNameLock: the few-statement Put Blob reads the name in
// the statement that waits for the name's lock, on a snapshot taken
// before the wait. What the lock's holder added meanwhile (the blob row of
// an absent name, a snapshot sharing the row's extents) must still decide
// the put, as it does in the Tx sequence, where the reads come after the
// lock: If-None-Match: * finds the new row, an overwrite collects the row
// it replaced, and a key a new snapshot references is not collected.
func TestPutBlobAwaitsNameLock(t *testing.T) {
	ctx := context.Background()
	s, race := nameLockRacer(t)
	db := &leasedb.DB{Store: s}
	row := func(name, key string, now time.Time) *leasedb.Blob {
		return &leasedb.Blob{Account: "a", Container: "c", Name: name, Type: "BlockBlob", ETag: `"0x2"`,
			Created: now, LastModified: now, Size: 1, Extents: []leasedb.Extent{{Key: key, Size: 1}}}
	}
	putBlob := func(name, key string, cond leasedb.Conditions) func() error {
		updateNow(t, s, func(tx leasedb.Tx, now time.Time) error { return tx.AddIntent(ctx, key, now.Add(time.Hour)) })
		return func() error {
			_, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: leasedb.BlobRef{Account: "a", Container: "c", Name: name},
				Type: "BlockBlob", Extents: []leasedb.Extent{{Key: key, Size: 1}}, Cond: cond})
			return err
		}
	}
	current := func(name string) *leasedb.Blob {
		t.Helper()
		return readBlob(t, s, name)
	}
	queued := func(key string) bool {
		t.Helper()
		keys, err := s.CollectionKeys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return slices.Contains(keys, key)
	}

	t.Run("if-none-match finds the row created meanwhile", func(t *testing.T) {
		err := race("created", func(tx leasedb.Tx, now time.Time) error { return tx.PutBlob(ctx, row("created", "holder-1", now)) },
			putBlob("created", "put-1", leasedb.Conditions{IfNoneMatch: []string{"*"}}))
		if !svcerr.HasCode(err, svcerr.BlobAlreadyExists) {
			t.Fatalf("Put Blob with If-None-Match: * over a row created while it waited: %v, want BlobAlreadyExists", err)
		}
		if b := current("created"); b == nil || b.Extents[0].Key != "holder-1" {
			t.Fatalf("the row is %+v, want the holder's", b)
		}
	})
	t.Run("an overwrite collects the row created meanwhile", func(t *testing.T) {
		if err := race("created2", func(tx leasedb.Tx, now time.Time) error { return tx.PutBlob(ctx, row("created2", "holder-2", now)) },
			putBlob("created2", "put-2", leasedb.Conditions{})); err != nil {
			t.Fatal(err)
		}
		if b := current("created2"); b == nil || b.Extents[0].Key != "put-2" {
			t.Fatalf("the row is %+v, want the put's", b)
		}
		if !queued("holder-2") {
			t.Fatal("the key of the row the put replaced was not queued for collection")
		}
	})
	t.Run("a snapshot taken meanwhile keeps its key", func(t *testing.T) {
		updateNow(t, s, func(tx leasedb.Tx, now time.Time) error { return tx.PutBlob(ctx, row("snapped", "base-3", now)) })
		if err := race("snapped", func(tx leasedb.Tx, now time.Time) error {
			sn := row("snapped", "base-3", now)
			sn.Snapshot = now.UTC().Format(leasedb.SnapshotFormat)
			return tx.PutSnapshot(ctx, sn)
		}, putBlob("snapped", "put-3", leasedb.Conditions{})); err != nil {
			t.Fatal(err)
		}
		if queued("base-3") {
			t.Fatal("the key a snapshot taken while the put waited references was queued for collection")
		}
	})
}
