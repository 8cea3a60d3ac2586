package gateway

import (
	"net/http"
)

// Append Blob Seal: PUT ?comp=seal → 200. The blob becomes read-only for
// appends (Append Block and Append Block From URL: 409 BlobIsSealed) until
// it is overwritten; properties, metadata and tags still change. The call
// is idempotent and keeps the ETag and Last-Modified. The lease, If-*
// conditions, x-ms-if-tags and x-ms-blob-condition-appendpos are checked
// under the row lock (leasedb.DB.SealBlob).
func (s *Server) sealBlob(w http.ResponseWriter, r *http.Request, req *request) error {
	cond, leaseID, err := blobConds(r)
	if err != nil {
		return err
	}
	pos, err := int64Header(r.Header, "x-ms-blob-condition-appendpos")
	if err != nil {
		return err
	}
	b, err := s.db.SealBlob(r.Context(), req.ref(), leaseID, cond, pos)
	if err != nil {
		return err
	}
	h := w.Header()
	setETagLM(h, b.ETag, b.LastModified)
	h.Set("x-ms-blob-sealed", "true")
	w.WriteHeader(http.StatusOK)
	return nil
}
