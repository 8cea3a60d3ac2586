package gateway

import (
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

// writeVersionsOnlyEntry writes the List Blobs entry of a name whose
// current version was deleted but that has previous versions
// (include=deletedwithversions): the base blob's name with
// HasVersionsOnly true right after the name, as Azure lists it, and the
// properties of its newest version v. It names no version (VersionId,
// IsCurrentVersion): the entry is the base blob, which has no current
// version; Azure lists it unleased (LeaseStatus unlocked, LeaseState
// available), as nothing there can hold a lease.
func writeVersionsOnlyEntry(x *xmlWriter, v *leasedb.Blob, include map[string]bool, now time.Time, day time.Duration) {
	b := *v
	b.VersionID, b.NonCurrent, b.Lease = "", false, leasedb.Lease{}
	x.open("Blob")
	x.elem("Name", b.Name)
	x.elem("HasVersionsOnly", "true")
	writeAfterName(x, &b, include, now, day)
	x.close("Blob")
}
