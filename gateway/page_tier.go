package gateway

import (
	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

// Premium page blob tiers (x-ms-access-tier P4 ... P80) are answered as a
// premium page blob account answers them: Put Blob and Copy Blob of a page
// blob, and Set Blob Tier on a page blob, store the tier (canonical
// spelling), and Get Blob, Get Blob Properties and List Blobs report it.
// The tier sets a disk's size, IOPS and bandwidth class on Azure; here
// only its size limit applies (leasedb.CheckPremiumTierSize: 409
// BlobTierInadequateForContentLength). A premium tier on a block or append
// blob is not a tier at all (400 InvalidHeaderValue), and Hot, Cool, Cold
// and Archive on a page blob stay refused as before.

// isPremiumPageTier reports whether v names a premium page blob tier
// (in any letter case, as tier names are read).
func isPremiumPageTier(v string) bool {
	_, _, ok := leasedb.CanonicalPremiumTier(v)
	return ok
}

// parsePremiumTier reads a premium tier on an upload of a page blob of
// size bytes (Put Blob: x-ms-blob-content-length; Copy Blob: the source's
// length): the canonical tier, or 409 BlobTierInadequateForContentLength
// when the blob would not fit it.
func parsePremiumTier(v string, size int64) (string, error) {
	tier, _, ok := leasedb.CanonicalPremiumTier(v)
	if !ok {
		return "", svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-access-tier", v)
	}
	if err := leasedb.CheckPremiumTierSize(tier, size); err != nil {
		return "", err
	}
	return tier, nil
}
