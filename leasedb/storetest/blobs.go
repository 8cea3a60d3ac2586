package storetest

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

func testBlobPutGet(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	want := fullBlob("c", "dir/name with spaces ☃")
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, want) })
	checkBlob(t, want, getBlob(t, s, "c", want.Name))
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		for _, m := range []leasedb.LockMode{leasedb.LockNone, leasedb.LockShare, leasedb.LockExclusive} {
			got, err := tx.Blob(ctx, acct, "c", want.Name, m)
			if err != nil {
				return err
			}
			checkBlob(t, want, got)
		}
		for _, m := range []leasedb.LockMode{leasedb.LockNone, leasedb.LockExclusive} {
			for _, where := range [][2]string{{"c", "absent"}, {"no-container", want.Name}} {
				got, err := tx.Blob(ctx, acct, where[0], where[1], m)
				if err != nil {
					return err
				}
				if got != nil {
					t.Errorf("absent blob %v: got %+v, want nil", where, got)
				}
			}
		}
		return nil
	})
	if got := getBlob(t, s, "c", want.Name); got == nil || !reflect.DeepEqual(got.Keys(), []string{"obj/" + want.Name + "/2", "obj/" + want.Name + "/1"}) {
		t.Errorf("extent order not kept: %+v", got)
	}
}

func testBlobOverwrite(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, fullBlob("c", "b")) })
	// Every column replaced, including with zero values.
	want := &leasedb.Blob{Account: acct, Container: "c", Name: "b", Type: "AppendBlob", ETag: `"0x8D0000000000FFF"`}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, want) })
	checkBlob(t, want, getBlob(t, s, "c", "b"))
	// And back.
	full := fullBlob("c", "b")
	full.Extents = append(full.Extents, leasedb.Extent{Key: "third", Size: 0})
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, full) })
	checkBlob(t, full, getBlob(t, s, "c", "b"))
}

func testBlobDelete(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		if err := tx.PutBlob(ctx, fullBlob("c", "b")); err != nil {
			return err
		}
		return tx.PutBlob(ctx, fullBlob("c", "b2"))
	})
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.DeleteBlob(ctx, acct, "c", "b") })
	if b := getBlob(t, s, "c", "b"); b != nil {
		t.Errorf("deleted blob still there")
	}
	if b := getBlob(t, s, "c", "b2"); b == nil {
		t.Errorf("DeleteBlob removed a neighbour")
	}
	for _, where := range [][2]string{{"c", "b"}, {"c", "never"}, {"nope", "b2"}} {
		ctx := ctxT(t)
		err := s.Update(ctx, func(tx leasedb.Tx) error { return tx.DeleteBlob(ctx, acct, where[0], where[1]) })
		if !errors.Is(err, leasedb.ErrNotFound) {
			t.Errorf("DeleteBlob %v: got %v, want ErrNotFound", where, err)
		}
	}
}

func testBlobNeedsContainer(t *testing.T, s leasedb.Store) {
	ctx := ctxT(t)
	err := s.Update(ctx, func(tx leasedb.Tx) error { return tx.PutBlob(ctx, fullBlob("missing", "b")) })
	if !errors.Is(err, leasedb.ErrNotFound) {
		t.Errorf("PutBlob into a missing container: got %v, want ErrNotFound", err)
	}
}

func testTimes(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	times := []time.Time{
		{}, // zero stays zero
		time.Unix(0, 0),
		time.Unix(0, 1000),
		time.Unix(-1, 999999000),
		time.Date(1999, 12, 31, 23, 59, 59, 999999000, time.UTC),
		time.Date(2038, 1, 19, 3, 14, 8, 1000, time.FixedZone("minus", -7*3600)),
		time.Date(2262, 4, 11, 23, 47, 16, 854775000, time.UTC),
		time.Date(2024, 2, 29, 12, 0, 0, 123456789, time.UTC), // nanoseconds are truncated
		time.Now(), // carries a monotonic reading
	}
	for i, tm := range times {
		name := "b" + strconv.Itoa(i)
		b := &leasedb.Blob{Account: acct, Container: "c", Name: name, Type: "BlockBlob", ETag: `"e"`,
			Created: tm, LastModified: tm, Lease: leasedb.Lease{Expires: tm, BreakAt: tm, Since: tm}}
		update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, b) })
		got := getBlob(t, s, "c", name)
		checkBlob(t, b, got)
		if got != nil && !got.LastModified.Equal(normTime(tm)) {
			t.Errorf("time %v came back as %v", tm, got.LastModified)
		}
		cname := "c" + strconv.Itoa(i)
		c := &leasedb.Container{Account: acct, Name: cname, ETag: `"e"`, LastModified: tm, Lease: leasedb.Lease{Expires: tm, BreakAt: tm, Since: tm}}
		update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.InsertContainer(ctx, c) })
		checkContainer(t, c, getContainer(t, s, cname))
	}
}

func testMetadata(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	cases := []struct {
		meta map[string]string
		md5  []byte
		ext  []leasedb.Extent
	}{
		{nil, nil, nil},
		{map[string]string{}, []byte{1}, []leasedb.Extent{}},
		{map[string]string{"a": "1", "B": "2", "quote": `"'\`, "nl": "x\ty", "long": strings.Repeat("v", 4000)},
			[]byte("0123456789abcdef"), []leasedb.Extent{{Key: "k", Size: 0}}},
	}
	for i, tc := range cases {
		name := "b" + strconv.Itoa(i)
		b := &leasedb.Blob{Account: acct, Container: "c", Name: name, Type: "BlockBlob", ETag: `"e"`,
			Metadata: tc.meta, Extents: tc.ext, Props: leasedb.Props{ContentMD5: tc.md5}}
		update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, b) })
		got := getBlob(t, s, "c", name)
		checkBlob(t, b, got)
		if got != nil && got.Metadata == nil {
			t.Errorf("metadata came back as a nil map; want an empty map")
		}
		cname := "c" + strconv.Itoa(i)
		c := &leasedb.Container{Account: acct, Name: cname, ETag: `"e"`, Metadata: tc.meta}
		update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.InsertContainer(ctx, c) })
		checkContainer(t, c, getContainer(t, s, cname))
	}
}

// testNames: names that cannot be stored in every database are refused the
// same way by every store; long and unusual valid names round-trip.
func testNames(t *testing.T, s leasedb.Store) {
	long := strings.Repeat("ß/", 400)
	valid := []string{long, " leading", "trailing ", "..", "%", "_", "'; DROP TABLE blobs; --", "\u200b", "\U0010FFFF"}
	mustInsertContainer(t, s, "c")
	for _, n := range valid {
		b := fullBlob("c", n)
		update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, b) })
		checkBlob(t, b, getBlob(t, s, "c", n))
	}
	for _, bad := range []string{"nul\x00byte", "bad\xffutf8"} {
		ctx := ctxT(t)
		err := s.Update(ctx, func(tx leasedb.Tx) error { return tx.PutBlob(ctx, fullBlob("c", bad)) })
		if err == nil {
			t.Errorf("PutBlob(%q) succeeded; want an error (not storable in every database)", bad)
		}
		err = s.Update(ctx, func(tx leasedb.Tx) error {
			return tx.InsertContainer(ctx, &leasedb.Container{Account: acct, Name: bad, ETag: `"e"`})
		})
		if err == nil {
			t.Errorf("InsertContainer(%q) succeeded; want an error", bad)
		}
	}
}

// testLeaseSince: Lease.Since is stored like the other lease times (UTC,
// microseconds, zero stays zero) on containers and blobs, through insert,
// update and overwrite.
func testLeaseSince(t *testing.T, s leasedb.Store) {
	since := time.Date(2023, 11, 5, 1, 2, 3, 456789123, time.FixedZone("Y", -5*3600))
	c := fullContainer("c")
	c.Lease.Since = since
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.InsertContainer(ctx, c) })
	checkContainer(t, c, getContainer(t, s, "c"))
	// Only Since changes: the update still writes it.
	c.Lease.Since = since.Add(time.Hour + time.Microsecond)
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.UpdateContainer(ctx, c) })
	checkContainer(t, c, getContainer(t, s, "c"))
	// Released: back to zero.
	c.Lease = leasedb.Lease{State: "available"}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.UpdateContainer(ctx, c) })
	got := getContainer(t, s, "c")
	checkContainer(t, c, got)
	if got != nil && !got.Lease.Since.IsZero() {
		t.Errorf("cleared container Since came back as %v", got.Lease.Since)
	}

	b := fullBlob("c", "b")
	b.Lease.Since = since
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, b) })
	checkBlob(t, b, getBlob(t, s, "c", "b"))
	b.Lease.Since = since.Add(-time.Microsecond)
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, b) })
	checkBlob(t, b, getBlob(t, s, "c", "b"))
	b.Lease = leasedb.Lease{}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, b) })
	gb := getBlob(t, s, "c", "b")
	checkBlob(t, b, gb)
	if gb != nil && !gb.Lease.Since.IsZero() {
		t.Errorf("cleared blob Since came back as %v", gb.Lease.Since)
	}
}

// testExtentBlockID: the block id of an extent round-trips; extents
// without one keep "".
func testExtentBlockID(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	b := fullBlob("c", "b")
	b.Extents = []leasedb.Extent{
		{Key: "k1", Size: 4 << 20, BlockID: "AAAAAA=="},
		{Key: "k2", Size: 1, BlockID: "+/+/ab=="},
		{Key: "k3", Size: 0},                            // Put Blob or append extent: no id
		{Key: "k1", Size: 4 << 20, BlockID: "AAAAAA=="}, // one block committed twice
	}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, b) })
	checkBlob(t, b, getBlob(t, s, "c", "b"))
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		bs, err := tx.ListBlobs(ctx, acct, "c", "", "", 10)
		if err != nil {
			return err
		}
		if len(bs) != 1 {
			t.Fatalf("ListBlobs: %d rows", len(bs))
		}
		checkBlob(t, b, bs[0])
		return nil
	})
	// Overwritten with extents that carry no id: none comes back.
	b.Extents = []leasedb.Extent{{Key: "k5", Size: 3}}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, b) })
	checkBlob(t, b, getBlob(t, s, "c", "b"))
}

// testTierTags: the access tier and the index tags round-trip; an unset
// tier reads back as "", no tags (nil or empty) as a nil map; overwriting a
// row replaces both.
func testTierTags(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	ten := map[string]string{}
	for i := 0; i < 10; i++ {
		ten["k"+strconv.Itoa(i)] = strings.Repeat("v", 256)
	}
	ten[strings.Repeat("K", 128)] = "a+b-c./:=_ Z9"
	cases := []struct {
		tier string
		tags map[string]string
	}{
		{"", nil},
		{"Hot", map[string]string{}},
		{"Archive", map[string]string{"a": "1"}},
		{"Cold", ten},
	}
	for i, tc := range cases {
		name := "b" + strconv.Itoa(i)
		b := &leasedb.Blob{Account: acct, Container: "c", Name: name, Type: "BlockBlob", ETag: `"e"`,
			AccessTier: tc.tier, Tags: tc.tags}
		update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, b) })
		got := getBlob(t, s, "c", name)
		checkBlob(t, b, got)
		if got != nil && len(tc.tags) == 0 && got.Tags != nil {
			t.Errorf("%s: no tags came back as %#v; want nil", name, got.Tags)
		}
	}
	// Overwrite clears both; and back.
	b := fullBlob("c", "x")
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, b) })
	checkBlob(t, b, getBlob(t, s, "c", "x"))
	b.AccessTier, b.Tags = "", nil
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, b) })
	checkBlob(t, b, getBlob(t, s, "c", "x"))
	b.AccessTier, b.Tags = "Archive", map[string]string{"z": "y"}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, b) })
	checkBlob(t, b, getBlob(t, s, "c", "x"))
	// Listed rows carry them too.
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		bs, err := tx.ListBlobs(ctx, acct, "c", "x", "", 10)
		if err != nil {
			return err
		}
		if len(bs) != 1 {
			t.Fatalf("got %d rows", len(bs))
		}
		checkBlob(t, b, bs[0])
		return nil
	})
}
