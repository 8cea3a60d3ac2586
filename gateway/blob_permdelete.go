package gateway

import (
	"net/http"
	"strings"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

// Delete Blob ?snapshot=X&deletetype=permanent or
// ?versionid=X&deletetype=permanent → 202: removes that soft-deleted
// snapshot or version for good, before its retention passes, when the
// account's DeleteRetentionPolicy is enabled with AllowPermanentDelete
// true (leasedb.PermanentDeleteBlob). A SAS needs y (permanent delete).
// deletetype's one value is "permanent" (the SDKs send "Permanent").
func (s *Server) permanentDelete(w http.ResponseWriter, r *http.Request, req *request) error {
	if v := req.query["deletetype"]; !strings.EqualFold(v, "permanent") {
		return svcerr.Query(svcerr.InvalidQueryParameterValue, "deletetype", v, "the only value is permanent")
	}
	// A soft-deleted row has no lease, no snapshots of its own and is
	// not a current blob a condition could be evaluated against: such
	// a header would go unused, so it is refused.
	if h, e := unsupportedHeader(r.Header, []string{"x-ms-delete-snapshots", "x-ms-lease-id", "If-Match", "If-None-Match",
		"If-Modified-Since", "If-Unmodified-Since", "x-ms-if-tags"}); e != nil {
		e.Message = "Delete Blob with deletetype=permanent takes no " + h + " header: a soft-deleted snapshot or version has no lease and is not the current blob."
		return e
	}
	var (
		id      string
		version bool
		err     error
	)
	if v, ok := req.query["versionid"]; ok {
		version = true
		id, err = leasedb.ParseVersionID(v)
	} else {
		id, err = leasedb.ParseSnapshot(req.query["snapshot"])
	}
	if err != nil {
		return err
	}
	if err := s.db.PermanentDeleteBlob(r.Context(), req.ref(), id, version); err != nil {
		return err
	}
	w.Header().Set("x-ms-delete-type-permanent", "true")
	w.WriteHeader(http.StatusAccepted)
	return nil
}
