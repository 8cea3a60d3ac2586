package gateway

import (
	"net/http"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

// parseDeleteSnapshots reads x-ms-delete-snapshots: include | only.
func parseDeleteSnapshots(h http.Header) (leasedb.DeleteSnapshots, error) {
	switch v := h.Get("x-ms-delete-snapshots"); v {
	case "":
		return leasedb.KeepSnapshots, nil
	case "include":
		return leasedb.IncludeSnapshots, nil
	case "only":
		return leasedb.OnlySnapshots, nil
	default:
		return 0, svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-delete-snapshots", v)
	}
}

// Snapshot Blob: PUT ?comp=snapshot → 201 with x-ms-snapshot. The snapshot
// shares the blob's extents (no bytes copied); x-ms-meta-* on the request
// gives it its own metadata.
func (s *Server) createSnapshot(w http.ResponseWriter, r *http.Request, req *request) error {
	cond, leaseID, meta, err := condsMetaWrite(r, req)
	if err != nil {
		return err
	}
	if len(meta) == 0 {
		meta = nil // keep the base blob's metadata (and ETag)
	}
	snap, err := s.db.CreateSnapshot(r.Context(), req.ref(), leaseID, cond, meta)
	if err != nil {
		return err
	}
	h := w.Header()
	setETagLM(h, snap.ETag, snap.LastModified)
	h.Set("x-ms-snapshot", snap.Snapshot)
	h.Set("x-ms-request-server-encrypted", "true")
	w.WriteHeader(http.StatusCreated)
	return nil
}

// Delete Blob of one snapshot: DELETE ?snapshot= → 202.
func (s *Server) deleteSnapshot(w http.ResponseWriter, r *http.Request, req *request) error {
	snap, err := leasedb.ParseSnapshot(req.query["snapshot"])
	if err != nil {
		return err
	}
	if r.Header.Get("x-ms-delete-snapshots") != "" {
		return svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-delete-snapshots", r.Header.Get("x-ms-delete-snapshots"))
	}
	cond, err := parseConditions(r.Header)
	if err != nil {
		return err
	}
	if err := s.db.DeleteSnapshot(r.Context(), req.ref(), snap, cond); err != nil {
		return err
	}
	w.WriteHeader(http.StatusAccepted)
	return nil
}

// Get Blob / Get Blob Properties / Get Blob Metadata of a snapshot
// (?snapshot=): the same answer from the snapshot row.
func (s *Server) getSnapshot(w http.ResponseWriter, r *http.Request, req *request) error {
	snap, err := leasedb.ParseSnapshot(req.query["snapshot"])
	if err != nil {
		return err
	}
	cond, err := parseConditions(r.Header)
	if err != nil {
		return err
	}
	b, now, err := s.db.GetSnapshot(r.Context(), req.ref(), snap, cond)
	if err == nil {
		w.Header().Set("x-ms-snapshot", snap)
	}
	return s.respondBlob(w, r, req, b, now, err)
}
