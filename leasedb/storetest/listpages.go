package storetest

import (
	"testing"

	"github.com/blobgw/blobgw/leasedb"
)

// listPages lists container "c" of acct through List Blobs pages of size
// entries, each from the marker the page before returned, and renders
// every entry with entry. More than maxPages pages fail the test: the
// markers loop.
func listPages(t *testing.T, db *leasedb.DB, prefix, delimiter string, size int, inc leasedb.ListInclude, maxPages int, entry func(leasedb.ListItem) string) []string {
	t.Helper()
	var got []string
	marker := ""
	for pages := 0; ; pages++ {
		if pages > maxPages {
			t.Fatalf("%+v %q size %d: marker loop", inc, delimiter, size)
		}
		res, err := db.ListBlobsInclude(ctxT(t), acct, "c", prefix, delimiter, marker, size, inc)
		if err != nil {
			t.Fatalf("ListBlobsInclude %+v: %v", inc, err)
		}
		for _, it := range res.Items {
			got = append(got, entry(it))
		}
		if res.Next == "" {
			return got
		}
		marker = res.Next
	}
}
