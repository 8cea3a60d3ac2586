package storetest

import (
	"errors"
	"slices"
	"testing"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

// testInlineAppend: Append Block of an inline extent commits it without an
// intent while the blob's inline bytes stay within AppendRequest.InlineMax,
// between staged extents; one that would pass the bound is ErrAppendStage
// and changes nothing; the append rules (appendpos) are checked before the
// bound; the row reads back with every inline extent's bytes, and key ""
// never reaches ReferencedKeys.
func testInlineAppend(t *testing.T, s leasedb.Store) {
	ctx := ctxT(t)
	db := &leasedb.DB{Store: s}
	const account = "inl-append"
	ref := leasedb.BlobRef{Account: account, Container: "c", Name: "log"}
	if _, err := db.CreateContainer(ctx, account, "c", nil, ""); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: ref, Type: "AppendBlob"}); err != nil {
		t.Fatal(err)
	}
	key := account + "/obj"
	addIntent(t, s, key)
	inline := func(data string) leasedb.Extent { return leasedb.Extent{Size: int64(len(data)), Data: []byte(data)} }
	appendX := func(x leasedb.Extent, pos int64) (*leasedb.Blob, int64, error) {
		b, off, _, err := db.AppendBlock(ctx, leasedb.AppendRequest{Ref: ref, Extent: x, AppendPos: pos, MaxSize: -1, InlineMax: 10})
		return b, off, err
	}
	want := []leasedb.Extent{inline("abcd"), {Key: key, Size: 100}, inline("efghij")}
	for i, x := range want {
		if _, off, err := appendX(x, -1); err != nil || off != []int64{0, 4, 104}[i] {
			t.Fatalf("append %d: offset %d, %v", i, off, err)
		}
	}
	before, _, err := db.GetBlob(ctx, ref, "", leasedb.Conditions{})
	if err != nil {
		t.Fatal(err)
	}
	// 10 inline bytes: one more is past the bound.
	if _, _, err := appendX(inline("k"), -1); !errors.Is(err, leasedb.ErrAppendStage) {
		t.Fatalf("append past the inline bound: %v, want ErrAppendStage", err)
	}
	// The append rules come first: a wrong appendpos is its own refusal.
	if _, _, err := appendX(inline("k"), 3); !svcerr.HasCode(err, svcerr.AppendPositionConditionNotMet) {
		t.Fatalf("append at a wrong position: %v, want AppendPositionConditionNotMet", err)
	}
	b, _, err := db.GetBlob(ctx, ref, "", leasedb.Conditions{})
	if err != nil {
		t.Fatal(err)
	}
	if b.ETag != before.ETag || b.Size != 110 || b.BlockCount != 3 || !slices.EqualFunc(b.Extents, want, leasedb.Extent.Equal) {
		t.Fatalf("row %+v after refused appends, want %d extents of 110 bytes, ETag %s", b, len(want), before.ETag)
	}
	if n := leasedb.InlineBytes(b.Extents); n != 10 {
		t.Fatalf("InlineBytes %d, want 10", n)
	}
	err = s.ReferencedKeys(ctx, func(k, _ string) error {
		if k == "" {
			t.Error("ReferencedKeys names key \"\"")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
