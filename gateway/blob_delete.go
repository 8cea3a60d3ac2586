package gateway

import "net/http"

// Delete Blob: DELETE → 202. The bytes are collected after the grace
// period.
func (s *Server) deleteBlob(w http.ResponseWriter, r *http.Request, req *request) error {
	cond, leaseID, err := writeConds(r)
	if err != nil {
		return err
	}
	snaps, err := parseDeleteSnapshots(r.Header)
	if err != nil {
		return err
	}
	if err := s.db.DeleteBlob(r.Context(), req.ref(), leaseID, cond, snaps); err != nil {
		return err
	}
	w.Header().Set("x-ms-delete-type-permanent", "true")
	w.WriteHeader(http.StatusAccepted)
	return nil
}
