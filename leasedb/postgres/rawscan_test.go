package postgres_test

import (
	"bytes"
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
	"github.com/blobgw/blobgw/leasedb/postgres"
)

// fullBlob is a blob row with every column set to something other than
// its zero value.
func fullBlob(now time.Time) *leasedb.Blob {
	return &leasedb.Blob{Account: "a", Container: "c", Name: "full", Type: "AppendBlob", ETag: `"0x8D0000000000ABC"`,
		Created: now.Add(-time.Hour), LastModified: now, Size: 7,
		Props: leasedb.Props{ContentType: "text/plain", ContentEncoding: "gzip", ContentLanguage: "en",
			ContentDisposition: "attachment", CacheControl: "no-cache", ContentMD5: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}},
		Metadata:   map[string]string{"k": "v", "other": "value"},
		Extents:    []leasedb.Extent{{Key: "obj-1", Size: 3, BlockID: "YmxvY2s="}, {Size: 4, Data: []byte("data")}},
		BlockCount: 2,
		Lease: leasedb.Lease{ID: "5e3d3d3a-1c1b-4f4e-9a9a-0a0b0c0d0e0f", State: "breaking", Duration: 15,
			Expires: now.Add(15 * time.Second), BreakAt: now.Add(5 * time.Second), Since: now.Add(-time.Minute)},
		AccessTier: "Cool", Tags: map[string]string{"tag": "x"},
		Copy: &leasedb.CopyInfo{ID: "copy-1", Source: "http://127.0.0.1/a/c/src", Status: "success", Progress: "7/7",
			Completed: now.Add(-time.Second).UTC().Truncate(time.Microsecond)},
		Sealed: true, VersionID: "2026-12-01T23:00:00.0000000Z", SequenceNumber: 42}
}

// scanOneBlob decodes the row of ReadBlob's and LockForReplace's
// statements from the bytes as received; what it returns must be what
// pgx's Scan into sqlq's blob row gives, for a row with every column set,
// one with every nullable column NULL, an absent blob and an absent
// container, and the same through a connection in the simple protocol
// (text results: decoded by sqlq).
func TestScanOneBlobRaw(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t)
	s := open(t, dsn)
	var full *leasedb.Blob
	updateNow(t, s, func(tx leasedb.Tx, now time.Time) error {
		if err := tx.InsertContainer(ctx, &leasedb.Container{Account: "a", Name: "c", ETag: `"0x1"`, LastModified: now}); err != nil {
			return err
		}
		full = fullBlob(now)
		if err := tx.PutBlob(ctx, full); err != nil {
			return err
		}
		return tx.PutBlob(ctx, &leasedb.Blob{Account: "a", Container: "c", Name: "bare", Type: "BlockBlob", ETag: `"0x2"`})
	})
	if got := postgres.BlobColCount; got != len(postgres.BlobCols) {
		t.Fatalf("scanOneBlob decodes %d blob columns, sqlq.BlobCols has %d", got, len(postgres.BlobCols))
	}
	// scanOneBlob reads the columns by position: the order it was
	// written for.
	want := strings.Fields(`account container name blob_type etag created last_modified size
		content_type content_encoding content_language content_disposition cache_control content_md5
		metadata extents block_count lease_id lease_state lease_duration lease_expires lease_break_at lease_since
		access_tier tags copy_info sealed version_id sequence_number`)
	if !slices.Equal(postgres.BlobCols, want) {
		t.Fatalf("sqlq.BlobCols is\n%v\nscanOneBlob decodes\n%v", postgres.BlobCols, want)
	}
	simple := open(t, dsn+"&default_query_exec_mode=simple_protocol")
	for _, st := range []*postgres.Store{s, simple} {
		for _, tc := range []struct {
			ref       leasedb.BlobRef
			found, ce bool
		}{
			{leasedb.BlobRef{Account: "a", Container: "c", Name: "full"}, true, true},
			{leasedb.BlobRef{Account: "a", Container: "c", Name: "bare"}, true, true},
			{leasedb.BlobRef{Account: "a", Container: "c", Name: "none"}, false, true},
			{leasedb.BlobRef{Account: "a", Container: "nocontainer", Name: "none"}, false, false},
		} {
			for _, forReplace := range []bool{false, true} {
				raw, generic, err := postgres.ReadOneBlobBothWays(ctx, st, tc.ref, forReplace)
				if err != nil {
					t.Fatalf("%v (for replace %v): %v", tc.ref, forReplace, err)
				}
				if (raw.Blob != nil) != tc.found || raw.ContainerExists != tc.ce {
					t.Errorf("%v (for replace %v): found %v, container %v; want %v, %v", tc.ref, forReplace, raw.Blob != nil, raw.ContainerExists, tc.found, tc.ce)
				}
				if !reflect.DeepEqual(raw.Blob, generic.Blob) || raw.ContainerExists != generic.ContainerExists {
					t.Errorf("%v (for replace %v): raw decoding\n%+v %v\npgx Scan\n%+v %v", tc.ref, forReplace, raw.Blob, raw.ContainerExists, generic.Blob, generic.ContainerExists)
				}
				for i := range raw.Extra {
					r, g := reflect.ValueOf(raw.Extra[i]).Elem().Interface(), reflect.ValueOf(generic.Extra[i]).Elem().Interface()
					if rt, ok := r.(time.Time); ok {
						// The clock, read twice: the raw read was first.
						if gt := g.(time.Time); rt.IsZero() || rt.After(gt) || gt.Sub(rt) > time.Minute {
							t.Errorf("%v (for replace %v): clock %v, then %v", tc.ref, forReplace, rt, gt)
						}
						continue
					}
					if i == 3 { // nextval('etag_seq'): one more at the second read
						r, g = r.(int64)+1, g.(int64)
					}
					if r != g {
						t.Errorf("%v (for replace %v): column %d after the container check: %v, pgx Scan %v", tc.ref, forReplace, i, r, g)
					}
				}
			}
		}
	}
	// And what was written is what reads back.
	b, ok, _, err := s.ReadBlob(ctx, "a", "c", "full")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if !reflect.DeepEqual(b, full) {
		t.Errorf("ReadBlob:\n%+v\nwrote\n%+v", b, full)
	}
}

// CommitReplace passes the row's columns to pgx as pointers to the row's
// fields (commitArgs) rather than as the values sqlq.BlobValues boxes;
// pgx must send the very same parameters: bytes, NULLs and formats, for a
// row with every column set and one with every nullable column NULL; so
// must the pair sender (the extents appended in place), for those and a
// 4 KiB inline extent.
func TestCommitArgsEncoding(t *testing.T) {
	ctx := context.Background()
	s := open(t, pgtest.Start(t))
	now := time.Date(2026, 12, 1, 23, 0, 0, 123456789, time.FixedZone("x", 3600))
	for _, b := range []*leasedb.Blob{
		fullBlob(now),
		{Account: "a", Container: "c", Name: "bare", Type: "BlockBlob", ETag: `"0x2"`},
		{Account: "a", Container: "c", Name: "empty-md5", Type: "BlockBlob", ETag: `"0x2"`, Props: leasedb.Props{ContentMD5: []byte{}}, Metadata: map[string]string{}, Tags: map[string]string{}},
		{Account: "a", Container: "c", Name: "inline", Type: "BlockBlob", ETag: `"0x3"`, Size: 4096,
			Extents: []leasedb.Extent{{Size: 4096, Data: bytes.Repeat([]byte{0xfe}, 4096)}}},
	} {
		typed, boxed, tf, bf, err := postgres.EncodeCommitArgsBothWays(ctx, s, b)
		if err != nil {
			t.Fatal(err)
		}
		paired, pf, err := postgres.EncodeCommitArgsPaired(ctx, s, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, got := range []struct {
			how     string
			params  [][]byte
			formats []int16
		}{{"typed", typed, tf}, {"paired", paired, pf}} {
			if len(got.params) != len(boxed) || !slices.Equal(got.formats, bf) {
				t.Fatalf("%s, %s: %d parameters in formats %v, want %d in %v", b.Name, got.how, len(got.params), got.formats, len(boxed), bf)
			}
			for i, p := range got.params {
				if (p == nil) != (boxed[i] == nil) || !slices.Equal(p, boxed[i]) {
					t.Errorf("%s, %s: parameter $%d: %.100q (NULL %v), want %.100q (NULL %v)", b.Name, got.how, i+1, p, p == nil, boxed[i], boxed[i] == nil)
				}
			}
		}
	}
}
