package storetest

import (
	"errors"
	"slices"
	"testing"

	"github.com/blobgw/blobgw/leasedb"
)

// testAdoptBlob runs DB.AdoptBlob over the store: insert, idempotent rerun,
// changed size, conflict with another blob, a queued key, and ownership
// (a delete queues the adopted key).
func testAdoptBlob(t *testing.T, s leasedb.Store) {
	ctx := ctxT(t)
	db := &leasedb.DB{Store: s}
	if _, err := db.CreateContainer(ctx, "acct", "c", nil, ""); err != nil {
		t.Fatal(err)
	}
	ref := leasedb.BlobRef{Account: "acct", Container: "c", Name: "dir/a.txt"}
	req := leasedb.AdoptRequest{Key: "x/YQ", Size: 5, Props: leasedb.Props{ContentType: "text/plain", ContentMD5: []byte("0123456789abcdef")}, Metadata: map[string]string{"k": "v"}}
	if ok, err := db.AdoptBlob(ctx, ref, req); err != nil || !ok {
		t.Fatalf("AdoptBlob = %v, %v; want true", ok, err)
	}
	b, _, err := db.GetBlob(ctx, ref, "", leasedb.Conditions{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Type != "BlockBlob" || b.Size != 5 || b.ETag == "" || b.Props.ContentType != "text/plain" || string(b.Props.ContentMD5) != "0123456789abcdef" ||
		b.Metadata["k"] != "v" || len(b.Extents) != 1 || b.Extents[0] != (leasedb.Extent{Key: "x/YQ", Size: 5}) {
		t.Fatalf("adopted row %+v", b)
	}
	if keys, err := s.CollectionKeys(ctx); err != nil || len(keys) != 0 {
		t.Fatalf("collection queue after adopting = %q, %v", keys, err)
	}
	if ok, err := db.AdoptBlob(ctx, ref, req); err != nil || ok {
		t.Fatalf("second AdoptBlob = %v, %v; want false", ok, err)
	}
	if b2, _, err := db.GetBlob(ctx, ref, "", leasedb.Conditions{}); err != nil || b2.ETag != b.ETag {
		t.Fatalf("rerun changed the row: %v, %v", b2, err)
	}
	changed := req
	changed.Size = 6
	if _, err := db.AdoptBlob(ctx, ref, changed); !errors.Is(err, leasedb.ErrAdoptChanged) {
		t.Fatalf("AdoptBlob with another size = %v", err)
	}
	other := req
	other.Key = "x/Yg"
	if _, err := db.AdoptBlob(ctx, ref, other); !errors.Is(err, leasedb.ErrAdoptConflict) {
		t.Fatalf("AdoptBlob over another blob = %v", err)
	}
	if _, err := db.AdoptBlob(ctx, leasedb.BlobRef{Account: "acct", Container: "missing", Name: "n"}, req); err == nil {
		t.Fatal("AdoptBlob into a missing container succeeded")
	}

	// Ownership: deleting the blob queues the adopted key; adopting the
	// queued object again is refused.
	if err := db.DeleteBlob(ctx, ref, "", leasedb.Conditions{}, leasedb.KeepSnapshots); err != nil {
		t.Fatal(err)
	}
	if keys, err := s.CollectionKeys(ctx); err != nil || !slices.Equal(keys, []string{"x/YQ"}) {
		t.Fatalf("collection queue after delete = %q, %v", keys, err)
	}
	if _, err := db.AdoptBlob(ctx, ref, req); !errors.Is(err, leasedb.ErrAdoptQueued) {
		t.Fatalf("AdoptBlob of a queued key = %v", err)
	}
	if keys, err := s.CollectionKeys(ctx); err != nil || !slices.Equal(keys, []string{"x/YQ"}) {
		t.Fatalf("collection queue after the refused adoption = %q, %v", keys, err)
	}
	// Once collected (forgotten), the name can be adopted again.
	if err := s.Forget(ctx, []string{"x/YQ"}); err != nil {
		t.Fatal(err)
	}
	if ok, err := db.AdoptBlob(ctx, ref, req); err != nil || !ok {
		t.Fatalf("AdoptBlob after collection = %v, %v", ok, err)
	}
}
