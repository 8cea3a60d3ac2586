package gateway

import (
	"net/http"
	"strconv"
)

// Delete Blob: DELETE → 202. The bytes are collected after the grace
// period, or kept while a DeleteRetentionPolicy keeps the blob.
func (s *Server) deleteBlob(w http.ResponseWriter, r *http.Request, req *request) error {
	cond, leaseID, err := blobConds(r)
	if err != nil {
		return err
	}
	snaps, err := parseDeleteSnapshots(r.Header)
	if err != nil {
		return err
	}
	soft, err := s.db.DeleteBlobSoft(r.Context(), req.ref(), leaseID, cond, snaps)
	if err != nil {
		return err
	}
	// false when the account's DeleteRetentionPolicy kept what went.
	w.Header().Set("x-ms-delete-type-permanent", strconv.FormatBool(!soft))
	w.WriteHeader(http.StatusAccepted)
	return nil
}
