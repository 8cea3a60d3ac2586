package storetest

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/blobgw/blobgw/leasedb"
)

// testInlineOldBytes: a plain Put Blob does not read the inline bytes of
// the row it replaces (LockForReplace with ReadKeysIfPlain), so every
// write that keeps the row, or makes one from it, must still get them
// whole: Set Blob Metadata and Set Blob Properties over an inline blob
// (the row stored again), Put Blob with versioning on (the previous
// version) and with blob soft delete on (the soft-deleted snapshot, read
// back through Undelete Blob), each then read back byte for byte. On a
// store offering BlobWriteLocker, LockForReplace itself: with
// ReadKeysIfPlain on a plain write the row comes without its bytes
// (NoData) but with its keys, sizes and ETag; with ReadWhole, or where
// the account keeps versions, whole.
func testInlineOldBytes(t *testing.T, s leasedb.Store) {
	ctx := ctxT(t)
	db := &leasedb.DB{Store: s}
	mustInsertContainer(t, s, "c")
	ref := func(name string) leasedb.BlobRef { return leasedb.BlobRef{Account: acct, Container: "c", Name: name} }
	body := func(c byte) []byte { return bytes.Repeat([]byte{c}, 4096) }
	put := func(name string, data []byte) *leasedb.Blob {
		t.Helper()
		b, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: ref(name), Type: "BlockBlob",
			Extents: []leasedb.Extent{{Size: int64(len(data)), Data: data}}})
		if err != nil {
			t.Fatalf("put %s: %v", name, err)
		}
		return b
	}
	want := func(what string, b *leasedb.Blob, data []byte) {
		t.Helper()
		if b == nil || len(b.Extents) != 1 || !b.Extents[0].Inline() || !bytes.Equal(b.Extents[0].Data, data) {
			t.Fatalf("%s: row %s, want one inline extent of %d bytes %q", what, extentsOf(b), len(data), data[:1])
		}
	}
	get := func(name string) *leasedb.Blob {
		t.Helper()
		b, _, err := db.GetBlob(ctx, ref(name), "", leasedb.Conditions{})
		if err != nil {
			t.Fatalf("get %s: %v", name, err)
		}
		return b
	}

	put("meta", body('m'))
	if _, err := db.SetBlobMetadata(ctx, ref("meta"), "", leasedb.Conditions{}, map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	want("Set Blob Metadata", get("meta"), body('m'))
	if _, err := db.SetBlobProperties(ctx, ref("meta"), "", leasedb.Conditions{}, leasedb.Props{ContentType: "text/plain"}); err != nil {
		t.Fatal(err)
	}
	want("Set Blob Properties", get("meta"), body('m'))

	// The locked read itself, on a plain account.
	key := acct + "/inlineold"
	addIntent(t, s, key)
	if _, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: ref("mixed"), Type: "BlockBlob",
		Extents: []leasedb.Extent{{Key: key, Size: 3}, {Size: 4096, Data: body('x')}}}); err != nil {
		t.Fatal(err)
	}
	lock := func(name string, read leasedb.ReplaceRead) (st leasedb.ReplaceState, ok bool) {
		t.Helper()
		update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
			l, is := tx.(leasedb.BlobWriteLocker)
			if !is {
				return nil
			}
			ok = true
			var err error
			st, err = l.LockForReplace(ctx, ref(name), read)
			return err
		})
		return st, ok
	}
	// The keys and sizes always; the bytes whole or, with NoData, none
	// (a driver may read them anyway: NoData false).
	mixed := func(what string, st leasedb.ReplaceState) {
		t.Helper()
		b := st.Blob
		if b == nil || len(b.Extents) != 2 || b.Extents[0].Key != key || b.Extents[0].Size != 3 || b.Extents[0].Data != nil ||
			b.Extents[1].Key != "" || b.Extents[1].Size != 4096 || b.ETag != get("mixed").ETag {
			t.Fatalf("LockForReplace %s: row %s", what, extentsOf(b))
		}
		if d := b.Extents[1].Data; st.NoData && d != nil || !st.NoData && !bytes.Equal(d, body('x')) {
			t.Fatalf("LockForReplace %s: NoData %v, %d inline bytes", what, st.NoData, len(d))
		}
	}
	if st, ok := lock("mixed", leasedb.ReadKeysIfPlain); ok {
		mixed("ReadKeysIfPlain, plain write", st)
	}
	if st, ok := lock("mixed", leasedb.ReadWhole); ok {
		if st.NoData {
			t.Fatal("LockForReplace ReadWhole: NoData")
		}
		mixed("ReadWhole", st)
	}
	put("meta", body('n')) // a plain overwrite of an inline blob
	want("plain overwrite", get("meta"), body('n'))

	// Versioning: the previous version keeps the replaced bytes.
	if err := db.SetVersioning(ctx, acct, true); err != nil {
		t.Fatal(err)
	}
	put("ver", body('1')) // a version of its own: versioning is on
	if st, ok := lock("ver", leasedb.ReadKeysIfPlain); ok {
		if st.NoData {
			t.Fatal("LockForReplace ReadKeysIfPlain with versioning on: NoData")
		}
		want("LockForReplace ReadKeysIfPlain with versioning on", st.Blob, body('1'))
	}
	v1 := get("ver")
	put("ver", body('2'))
	vb, _, err := db.GetVersion(ctx, ref("ver"), v1.VersionID, "", leasedb.Conditions{})
	if err != nil {
		t.Fatal(err)
	}
	want("previous version", vb, body('1'))
	want("current version", get("ver"), body('2'))
	if err := db.SetVersioning(ctx, acct, false); err != nil {
		t.Fatal(err)
	}

	// Blob soft delete: the overwritten blob is kept as a soft-deleted
	// snapshot, which Undelete Blob turns back into a snapshot.
	put("soft", body('a'))
	if err := db.SetServicePropertiesRetention(ctx, acct, "<StorageServiceProperties/>", 3); err != nil {
		t.Fatal(err)
	}
	put("soft", body('b'))
	if err := db.UndeleteBlob(ctx, ref("soft")); err != nil {
		t.Fatal(err)
	}
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		snaps, err := tx.Snapshots(ctx, acct, "c", "soft")
		if err != nil {
			return err
		}
		if len(snaps) != 1 {
			t.Fatalf("snapshots of soft after Undelete Blob: %+v, want the overwritten blob", snaps)
		}
		want("soft-deleted snapshot", snaps[0], body('a'))
		return nil
	})
	want("soft, current", get("soft"), body('b'))
}

// extentsOf is b's extents for a message: key, size and the inline
// bytes' length and first byte.
func extentsOf(b *leasedb.Blob) string {
	if b == nil {
		return "absent"
	}
	out := b.ETag
	for _, e := range b.Extents {
		first := byte(0)
		if len(e.Data) > 0 {
			first = e.Data[0]
		}
		out += fmt.Sprintf(" {%q %d: %d bytes %q}", e.Key, e.Size, len(e.Data), first)
	}
	return out
}
