package gateway

import (
	"net/http"
	"strings"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

// Premium page blob tiers (x-ms-access-tier P4 ... P80) exist on premium
// storage accounts only, where they set a disk's size, IOPS and bandwidth
// class. This gateway is a standard (general-purpose v2) account, as the
// emulators are: Put Blob of a page blob and Set Blob Tier on a page blob
// with a premium tier are answered as a standard account answers them,
// 400 BlobAccessTierNotSupportedForAccountType, and nothing is stored. A
// premium tier on a block blob stays 400 InvalidHeaderValue (no account
// kind takes it there).

// premiumPageTiers are the premium page blob tiers of the Blob service.
var premiumPageTiers = []string{"P1", "P2", "P3", "P4", "P6", "P10", "P15", "P20", "P30", "P40", "P50", "P60", "P70", "P80"}

// isPremiumPageTier reports whether v names a premium page blob tier
// (in any letter case, as tier names are read).
func isPremiumPageTier(v string) bool {
	for _, t := range premiumPageTiers {
		if strings.EqualFold(strings.TrimSpace(v), t) {
			return true
		}
	}
	return false
}

// refusePremiumTier is the standard account's answer to a premium page blob
// tier on a page blob, naming the header as Azure does.
func refusePremiumTier(v string) error {
	return svcerr.Header(svcerr.BlobAccessTierNotSupportedForAccountType, "x-ms-access-tier", v)
}

// premiumTierOnPageBlob is Set Blob Tier's check for a premium tier: on a
// page blob it is the account kind that refuses it; on any other blob the
// value is simply not a tier (InvalidHeaderValue), and a missing blob is
// 404 as for every tier.
func (s *Server) premiumTierOnPageBlob(r *http.Request, req *request, v string) error {
	b, _, err := s.db.GetBlob(r.Context(), req.ref(), "", leasedb.Conditions{})
	if err != nil {
		return err
	}
	if b.Type == "PageBlob" {
		return refusePremiumTier(v)
	}
	return svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-access-tier", v)
}
