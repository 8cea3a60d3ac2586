package storetest

import (
	"bytes"
	"context"
	"testing"

	"github.com/blobgw/blobgw/leasedb"
)

// testBlobAttrsWrite: a plain Set Blob Metadata and Set Blob Properties
// change what Azure changes (the metadata; the content properties and the
// copy; the ETag and Last-Modified), and Set Blob Tags the tags alone
// (found by the new tags, not the old), and each keeps every other column of the
// row (the type, creation time, size, tier, tags, seal, sequence number,
// lease, a keyed and an inline extent with its 4 KiB of bytes), through
// the store as it is and through the generic Tx sequence alike. On a
// store offering BlobWriteLocker, CommitReplace with Attrs writes those
// columns alone, whatever else of the row it is handed (a row read
// without its inline bytes must not lose them), and refuses a write with
// Attrs that would also drop staged blocks.
func testBlobAttrsWrite(t *testing.T, s leasedb.Store) {
	ctx := ctxT(t)
	inline := make([]byte, 4096) // over Postgres's TOAST threshold once encoded
	for i := range inline {
		inline[i] = byte(i*7 + i/256)
	}
	leaseID := fullBlob("", "").Lease.ID
	put := func(container string) (*leasedb.Blob, leasedb.BlobRef) {
		t.Helper()
		mustInsertContainer(t, s, container)
		b := fullBlob(container, "x")
		b.Extents = []leasedb.Extent{{Key: "obj/" + container + "/x", Size: 17}, {Size: int64(len(inline)), Data: inline}}
		b.Size, b.BlockCount, b.SequenceNumber = 17+int64(len(inline)), 2, 7
		update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, b) })
		return b, leasedb.BlobRef{Account: acct, Container: container, Name: "x"}
	}
	for _, path := range []struct {
		name string
		db   *leasedb.DB
	}{{"store", &leasedb.DB{Store: s}}, {"generic", &leasedb.DB{Store: genericOnly{s}}}} {
		want, ref := put("attrs" + path.name)
		meta := map[string]string{"fresh": "1"}
		out, err := path.db.SetBlobMetadata(ctx, ref, leaseID, leasedb.Conditions{}, meta)
		if err != nil {
			t.Fatalf("%s: Set Blob Metadata: %v", path.name, err)
		}
		if out.ETag == want.ETag {
			t.Fatalf("%s: Set Blob Metadata kept the ETag %s", path.name, out.ETag)
		}
		want.Metadata, want.ETag, want.LastModified = meta, out.ETag, out.LastModified
		checkBlob(t, want, getBlob(t, s, ref.Container, ref.Name))

		p := leasedb.Props{ContentType: "text/plain", CacheControl: "no-cache", ContentMD5: []byte{1, 2, 3}}
		if out, err = path.db.SetBlobProperties(ctx, ref, leaseID, leasedb.Conditions{}, p); err != nil {
			t.Fatalf("%s: Set Blob Properties: %v", path.name, err)
		}
		if out.ETag == want.ETag {
			t.Fatalf("%s: Set Blob Properties kept the ETag %s", path.name, out.ETag)
		}
		want.Props, want.Copy, want.ETag, want.LastModified = p, nil, out.ETag, out.LastModified
		checkBlob(t, want, getBlob(t, s, ref.Container, ref.Name))

		// Set Blob Tags: the tags alone (the ETag and Last-Modified
		// stay), the tag index following them.
		newTags := map[string]string{"project": "tagged-" + path.name}
		if _, err := path.db.SetBlobTags(ctx, ref, leaseID, leasedb.Conditions{}, newTags); err != nil {
			t.Fatalf("%s: Set Blob Tags: %v", path.name, err)
		}
		want.Tags = newTags
		checkBlob(t, want, getBlob(t, s, ref.Container, ref.Name))
		view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
			for _, v := range []string{"blobgw", "tagged-" + path.name} {
				found, err := tx.FindTagged(ctx, acct, ref.Container, leasedb.TagRange{Key: "project", Lo: v, LoOp: ">=", Hi: v, HiOp: "<="}, "", "", 10)
				if err != nil {
					return err
				}
				wantFound := 1 // the new value's; the old one's none
				if v == "blobgw" {
					wantFound = 0
				}
				if len(found) != wantFound {
					t.Errorf("%s: Set Blob Tags: %d blobs found by project=%s, want %d", path.name, len(found), v, wantFound)
				}
			}
			return nil
		})
	}

	var offered bool
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		_, offered = tx.(leasedb.BlobWriteLocker)
		return nil
	})
	if !offered {
		return
	}
	want, ref := put("attrsdirect")
	commit := func(w func(row *leasedb.Blob) leasedb.ReplaceWrite) error {
		return s.Update(ctx, func(tx leasedb.Tx) error {
			l := tx.(leasedb.BlobWriteLocker)
			st, err := l.LockForReplace(ctx, ref, leasedb.ReadKeysIfPlain)
			if err != nil {
				return err
			}
			row := *st.Blob
			row.Metadata, row.ETag = map[string]string{"m": "attrs"}, st.ETag
			// Columns Set Blob Metadata and Properties never change:
			// CommitReplace with Attrs must leave them as stored.
			row.Type, row.Size, row.BlockCount, row.Extents = "AppendBlob", 1, 0, nil
			row.AccessTier, row.Tags, row.Sealed, row.SequenceNumber = "Hot", map[string]string{"gone": "1"}, false, 99
			return l.CommitReplace(ctx, w(&row))
		})
	}
	if err := commit(func(row *leasedb.Blob) leasedb.ReplaceWrite {
		return leasedb.ReplaceWrite{Row: row, Attrs: true, DropStaged: true}
	}); err == nil {
		t.Fatal("CommitReplace with Attrs and DropStaged: no error")
	}
	checkBlob(t, want, getBlob(t, s, ref.Container, ref.Name))
	var etag string
	if err := commit(func(row *leasedb.Blob) leasedb.ReplaceWrite {
		etag = row.ETag
		return leasedb.ReplaceWrite{Row: row, Attrs: true}
	}); err != nil {
		t.Fatalf("CommitReplace with Attrs: %v", err)
	}
	want.Metadata, want.ETag = map[string]string{"m": "attrs"}, etag
	got := getBlob(t, s, ref.Container, ref.Name)
	want.LastModified = got.LastModified // the row's, unchanged: the test sets none
	checkBlob(t, want, got)
	if len(got.Extents) != 2 || !bytes.Equal(got.Extents[1].Data, inline) {
		t.Fatalf("CommitReplace with Attrs: extents %s, want the inline bytes kept", extentsOf(got))
	}
}
