package gateway

import (
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

// writeVersionsOnlyEntry writes the List Blobs entry of a name whose
// current version was deleted but that has previous versions
// (include=deletedwithversions): the base blob's name with
// HasVersionsOnly true, as Azure lists it, and the properties of its
// newest version v. It names no version (VersionId, IsCurrentVersion):
// the entry is the base blob, which has no current version; and, having
// no current blob, nothing that could hold a lease.
func writeVersionsOnlyEntry(x *xmlWriter, v *leasedb.Blob, include map[string]bool, now time.Time, day time.Duration) {
	b := *v
	b.VersionID, b.NonCurrent = "", true
	writeBlobFields(x, &b, include, now, day)
	x.elem("HasVersionsOnly", "true")
	x.close("Blob")
}
