package sqlq

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/blobgw/blobgw/leasedb"
)

// TestListEntriesArgsInTextOrder: ListEntries binds its arguments in the
// order their placeholders appear in the text, as plain "?" placeholders
// need (the SQLite plan test runs it so), for every include of soft
// deletes, snapshots and versions, from the start and from a cursor in a
// name's snapshots, versions or past its soft-deleted base.
func TestListEntriesArgsInTextOrder(t *testing.T) {
	ph := regexp.MustCompile(`\$(\d+)`)
	for _, inc := range []leasedb.ListInclude{
		{Deleted: true}, {Deleted: true, Snapshots: true}, {Deleted: true, Versions: true},
		{Deleted: true, Versions: true, Snapshots: true, Uncommitted: true},
	} {
		for _, afterSnap := range []string{"", "2024-05-17T06:41:12.3456780Z", VersionPos + "2024-05-17T06:41:12.3456780Z", DeletedBasePos} {
			q, args := ListEntries(dollar, "acct", "c", "p", "p/x", afterSnap, 10, inc)
			got := ph.FindAllStringSubmatch(q, -1)
			if len(got) != len(args) {
				t.Errorf("%+v after %q: %d placeholders, %d args", inc, afterSnap, len(got), len(args))
				continue
			}
			for i, m := range got {
				if n, _ := strconv.Atoi(m[1]); n != i+1 {
					t.Errorf("%+v after %q: placeholder %d of the text is $%d", inc, afterSnap, i+1, n)
					break
				}
			}
		}
	}
}
