package storetest

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/blobgw/blobgw/leasedb"
)

// testInlineExtents: a blob whose extent is inline (bytes in the row, no
// key, no intent) commits on both Put Blob paths (the store's own and the
// generic Tx sequence); its snapshot, its version and a copy sharing its
// extents hold the bytes; and no key "" ever reaches the collection
// queue, ReferencedKeys or the keys Delete Container frees, while the
// object an inline overwrite replaces is queued.
func testInlineExtents(t *testing.T, s leasedb.Store) {
	for _, path := range []struct {
		account string
		db      *leasedb.DB
	}{{"inl-own", &leasedb.DB{Store: s}}, {"inl-generic", &leasedb.DB{Store: genericOnly{s}}}} {
		ctx := ctxT(t)
		db, account := path.db, path.account
		ref := func(name string) leasedb.BlobRef {
			return leasedb.BlobRef{Account: account, Container: "c", Name: name}
		}
		if _, err := db.CreateContainer(ctx, account, "c", nil, ""); err != nil {
			t.Fatal(err)
		}
		inline := func(data string) []leasedb.Extent {
			return []leasedb.Extent{{Size: int64(len(data)), Data: []byte(data)}}
		}
		put := func(name string, x []leasedb.Extent, cp leasedb.CopyTarget) *leasedb.Blob {
			t.Helper()
			b, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: ref(name), Type: "BlockBlob", Extents: x, Copy: cp})
			if err != nil {
				t.Fatalf("%s: put %s: %v", account, name, err)
			}
			return b
		}
		wantData := func(what string, b *leasedb.Blob, data string) {
			t.Helper()
			if b == nil || len(b.Extents) != 1 || !b.Extents[0].Inline() || !bytes.Equal(b.Extents[0].Data, []byte(data)) || b.Extents[0].Size != int64(len(data)) {
				t.Fatalf("%s: %s: row %+v, want one inline extent %q", account, what, b, data)
			}
		}
		queue := func() []string {
			t.Helper()
			keys, err := s.CollectionKeys(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return keys
		}
		get := func(name string) *leasedb.Blob {
			t.Helper()
			b, _, err := db.GetBlob(ctx, ref(name), "", leasedb.Conditions{})
			if err != nil {
				t.Fatal(err)
			}
			return b
		}

		put("a", inline("hello"), leasedb.CopyTarget{})
		wantData("put", get("a"), "hello")
		snap, err := db.CreateSnapshot(ctx, ref("a"), "", leasedb.Conditions{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		// A key extent, then inline over it: the key is queued, "" never.
		key := account + "/obj"
		addIntent(t, s, key)
		put("a", []leasedb.Extent{{Key: key, Size: 3}}, leasedb.CopyTarget{})
		put("a", inline("world!"), leasedb.CopyTarget{})
		wantData("overwrite", get("a"), "world!")
		sb, _, err := db.GetSnapshot(ctx, ref("a"), snap.Snapshot, leasedb.Conditions{})
		if err != nil {
			t.Fatal(err)
		}
		wantData("snapshot", sb, "hello")
		// A copy sharing the extents of an inline source.
		src := get("a")
		put("copy", src.Extents, leasedb.CopyTarget{SharedExtents: true, Source: ref("a")})
		wantData("copy", get("copy"), "world!")
		// A version of an inline blob.
		if err := db.SetVersioning(ctx, account, true); err != nil {
			t.Fatal(err)
		}
		v1 := put("v", inline("first"), leasedb.CopyTarget{})
		put("v", inline("second"), leasedb.CopyTarget{})
		vb, _, err := db.GetVersion(ctx, ref("v"), v1.VersionID, "", leasedb.Conditions{})
		if err != nil {
			t.Fatal(err)
		}
		wantData("version", vb, "first")
		if err := db.SetVersioning(ctx, account, false); err != nil {
			t.Fatal(err)
		}
		// Inline over inline and a delete, no other row of the name:
		// nothing to queue.
		put("b", inline("x"), leasedb.CopyTarget{})
		put("b", inline("y"), leasedb.CopyTarget{})
		if err := db.DeleteBlob(ctx, ref("b"), "", leasedb.Conditions{}, leasedb.KeepSnapshots); err != nil {
			t.Fatal(err)
		}
		if q := queue(); slices.Contains(q, "") || !slices.Contains(q, key) {
			t.Fatalf("%s: collection queue %q: want the replaced key, never \"\"", account, q)
		}
		err = s.ReferencedKeys(ctx, func(k, ref string) error {
			if k == "" {
				t.Errorf("%s: ReferencedKeys names key \"\" for %s", account, ref)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		var freed []string
		update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
			var err error
			freed, err = tx.DeleteContainer(ctx, account, "c")
			return err
		})
		if slices.Contains(freed, "") {
			t.Fatalf("%s: Delete Container freed key \"\": %q", account, freed)
		}
	}
}
