package storetest

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

// testUndeleteAfterRetention: once a soft-deleted row's retention has
// passed by the database clock it is permanently deleted, as Azure
// documents for blob soft delete ("after the retention period expires,
// the object is permanently deleted"), even while the collector has yet
// to purge it: Undelete Blob restores none of it (a name with nothing
// else is 404 BlobNotFound), and the purge then removes every such row
// and queues the keys no row keeps.
func testUndeleteAfterRetention(t *testing.T, s leasedb.Store) {
	ctx := ctxT(t)
	db := &leasedb.DB{Store: s}
	mustInsertContainer(t, s, "c")
	if err := db.SetServicePropertiesRetention(ctx, acct, "<StorageServiceProperties/>", 3); err != nil {
		t.Fatal(err)
	}
	ref := func(name string) leasedb.BlobRef { return leasedb.BlobRef{Account: acct, Container: "c", Name: name} }
	put := func(name, key string) {
		t.Helper()
		addIntent(t, s, key)
		if _, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: ref(name), Type: "BlockBlob", Extents: []leasedb.Extent{{Key: key, Size: 1}}}); err != nil {
			t.Fatal(err)
		}
	}
	// a: a soft-deleted base blob.
	put("a", "k/a")
	if err := db.DeleteBlob(ctx, ref("a"), "", leasedb.Conditions{}, leasedb.KeepSnapshots); err != nil {
		t.Fatal(err)
	}
	// b: a live blob, its overwrite's soft-deleted snapshot and a
	// soft-deleted snapshot.
	put("b", "k/b1")
	if _, err := db.CreateSnapshot(ctx, ref("b"), "", leasedb.Conditions{}, nil); err != nil {
		t.Fatal(err)
	}
	put("b", "k/b2")
	if err := db.DeleteBlob(ctx, ref("b"), "", leasedb.Conditions{}, leasedb.OnlySnapshots); err != nil {
		t.Fatal(err)
	}
	// v: a live blob and a soft-deleted previous version.
	if err := db.SetVersioning(ctx, acct, true); err != nil {
		t.Fatal(err)
	}
	put("v", "k/v1")
	put("v", "k/v2")
	var vid string
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		vs, err := tx.Versions(ctx, acct, "c", "v")
		if err == nil && len(vs) == 1 {
			vid = vs[0].VersionID
		}
		return err
	})
	if vid == "" {
		t.Fatal("no previous version of v")
	}
	if soft, err := db.DeleteVersion(ctx, ref("v"), vid, leasedb.Conditions{}); err != nil || !soft {
		t.Fatalf("Delete Blob ?versionid=: soft %v, %v", soft, err)
	}
	if q := queued(t, s); len(q) != 0 {
		t.Fatalf("soft delete queued %q", q)
	}

	co, ok := s.(leasedb.ClockOffsetter)
	if !ok {
		t.Fatalf("%T does not offer ClockOffsetter", s)
	}
	co.SetClockOffset(3*24*time.Hour + time.Minute)
	t.Cleanup(func() { co.SetClockOffset(0) })

	if err := db.UndeleteBlob(ctx, ref("a")); !svcerr.HasCode(err, svcerr.BlobNotFound) {
		t.Errorf("Undelete Blob of a blob past its retention: %v, want BlobNotFound", err)
	}
	if _, _, err := db.GetBlob(ctx, ref("a"), "", leasedb.Conditions{}); !svcerr.HasCode(err, svcerr.BlobNotFound) {
		t.Errorf("Get Blob after Undelete Blob past the retention: %v, want BlobNotFound", err)
	}
	for _, name := range []string{"b", "v"} {
		if err := db.UndeleteBlob(ctx, ref(name)); err != nil {
			t.Errorf("Undelete Blob of live blob %s: %v", name, err)
		}
	}
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		snaps, err := tx.Snapshots(ctx, acct, "c", "b")
		if err != nil {
			return err
		}
		if len(snaps) != 0 {
			t.Errorf("Undelete Blob restored %d snapshots past their retention", len(snaps))
		}
		vs, err := tx.Versions(ctx, acct, "c", "v")
		if err != nil {
			return err
		}
		if len(vs) != 0 {
			t.Errorf("Undelete Blob restored %d versions past their retention", len(vs))
		}
		return nil
	})
	// a's blob, b's snapshot and the blob its overwrite kept, v's version.
	if n, err := db.PurgeExpiredBlobs(ctx, 10); err != nil || n != 4 {
		t.Fatalf("purge after expiry: %d rows, %v; want 4", n, err)
	}
	// k/b1 is the snapshot's alone (the live b is k/b2); k/v2 is v's.
	if got, want := sortedCopy(queued(t, s)), []string{"k/a", "k/b1", "k/v1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("queued after the purge %q, want %q", got, want)
	}
}
