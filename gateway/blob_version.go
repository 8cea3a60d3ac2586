package gateway

import (
	"net/http"
	"strconv"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

// Blob versions (?versionid=): reads of one version, Delete Blob of a
// previous version, and Set Blob Tags / Set Blob Tier of one version
// (blob_tags.go, blob_tier.go). A version is otherwise immutable: every
// other operation naming one is refused in router.go (noOperation). The
// versions themselves are made by the writes, in leasedb, when the
// account has versioning on (blobgw account versioning).

// versionID returns the request's versionid, validated; "" when the
// request names none.
func versionID(req *request) (string, error) {
	v, ok := req.query["versionid"]
	if !ok {
		return "", nil
	}
	return leasedb.ParseVersionID(v)
}

// Get Blob / Get Blob Properties / Get Blob Metadata with ?versionid=: the
// same answer from that version (x-ms-version-id and
// x-ms-is-current-version say which one it is).
func (s *Server) getVersion(w http.ResponseWriter, r *http.Request, req *request) error {
	vid, err := versionID(req)
	if err != nil {
		return err
	}
	cond, leaseID, err := blobConds(r)
	if err != nil {
		return err
	}
	b, now, err := s.db.GetVersion(r.Context(), req.ref(), vid, leaseID, cond)
	return s.respondBlob(w, r, req, b, now, err)
}

// Delete Blob with ?versionid=: removes that previous version only (202),
// or soft-deletes it under a DeleteRetentionPolicy.
func (s *Server) deleteVersion(w http.ResponseWriter, r *http.Request, req *request) error {
	vid, err := versionID(req)
	if err != nil {
		return err
	}
	if v := r.Header.Get("x-ms-delete-snapshots"); v != "" {
		// Snapshots belong to the base blob, not to a version.
		return svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-delete-snapshots", v)
	}
	cond, err := parseConditions(r.Header)
	if err != nil {
		return err
	}
	soft, err := s.db.DeleteVersion(r.Context(), req.ref(), vid, cond)
	if err != nil {
		return err
	}
	// false when the account's DeleteRetentionPolicy kept the version
	// as a soft-deleted version.
	w.Header().Set("x-ms-delete-type-permanent", strconv.FormatBool(!soft))
	w.WriteHeader(http.StatusAccepted)
	return nil
}
