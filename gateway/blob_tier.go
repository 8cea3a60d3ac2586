package gateway

import (
	"net/http"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

// Set Blob Tier: PUT ?comp=tier with x-ms-access-tier → 200. The tier is
// stored and reported; there is no rehydration, so leaving Archive is
// immediate, which meets either x-ms-rehydrate-priority (Standard or High;
// any other value is 400, as on Azure).
func (s *Server) setBlobTier(w http.ResponseWriter, r *http.Request, req *request) error {
	v := r.Header.Get("x-ms-access-tier")
	if v == "" {
		return svcerr.Header(svcerr.MissingRequiredHeader, "x-ms-access-tier", "")
	}
	tier, ok := leasedb.CanonicalTier(v)
	if !ok {
		// A premium tier: leasedb takes it on a page blob only (and
		// checks the blob fits it) under the row lock.
		tier, _, ok = leasedb.CanonicalPremiumTier(v)
	}
	if !ok {
		return svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-access-tier", v)
	}
	if err := rehydratePriority(r.Header); err != nil {
		return err
	}
	leaseID, err := leaseIDHeader(r.Header)
	if err != nil {
		return err
	}
	cond, err := ifTagsOnly.parseOnly(r.Header)
	if err != nil {
		return err
	}
	vid, err := versionID(req)
	if err != nil {
		return err
	}
	if vid != "" {
		_, err = s.db.SetVersionTier(r.Context(), req.ref(), vid, leaseID, cond, tier)
	} else {
		_, err = s.db.SetBlobTier(r.Context(), req.ref(), leaseID, cond, tier)
	}
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}
