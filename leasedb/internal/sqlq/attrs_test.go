package sqlq

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

// TestBlobAttrArgs: SetBlobAttrs' arguments are BlobValues' at
// BlobAttrValues, one per parameter, and its statement writes neither the
// extents nor a column Set Blob Metadata and Set Blob Properties keep.
func TestBlobAttrArgs(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	b := &leasedb.Blob{Account: "a", Container: "c", Name: "n", Type: "BlockBlob", ETag: `"0x1"`, Created: at.Add(-time.Hour),
		LastModified: at, Size: 3, Props: leasedb.Props{ContentType: "t", ContentEncoding: "e", ContentLanguage: "l",
			ContentDisposition: "d", CacheControl: "cc", ContentMD5: []byte{1}},
		Metadata: map[string]string{"m": "v"}, Extents: []leasedb.Extent{{Size: 3, Data: []byte("abc")}}, BlockCount: 1,
		Lease:      leasedb.Lease{ID: "id", State: "leased", Duration: 15, Expires: at.Add(time.Minute), Since: at},
		AccessTier: "Hot", Tags: map[string]string{"t": "v"}, Copy: &leasedb.CopyInfo{ID: "x", Status: "success"},
		Sealed: true, VersionID: "v", SequenceNumber: 9}
	toTime := func(t time.Time) any { return t.UnixMicro() }
	all, err := BlobValues(b, toTime)
	if err != nil {
		t.Fatal(err)
	}
	got, err := BlobAttrArgs(b, toTime)
	if err != nil {
		t.Fatal(err)
	}
	var want []any
	for _, i := range BlobAttrValues {
		want = append(want, all[i])
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("BlobAttrArgs:\n got %#v\nwant %#v", got, want)
	}
	q := SetBlobAttrs(dollar)
	if n := strings.Count(q, "$"); n != len(got) {
		t.Fatalf("SetBlobAttrs has %d parameters, BlobAttrArgs %d values:\n%s", n, len(got), q)
	}
	for _, kept := range []string{"extents", "blob_type", "created", "size", "block_count", "access_tier", "tags", "sealed", "version_id", "sequence_number"} {
		if strings.Contains(q, " "+kept+" =") {
			t.Errorf("SetBlobAttrs writes %s:\n%s", kept, q)
		}
	}
}
