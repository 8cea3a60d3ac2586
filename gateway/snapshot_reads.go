package gateway

import (
	"net/http"
	"strconv"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

// Get Block List and Get Blob Tags of a snapshot (?snapshot=): a snapshot
// is read-only and cannot be leased, so no lease id applies; its
// committed blocks are the extents it shares with the blob it was taken
// of, and it has no uncommitted blocks.

// Get Block List ?snapshot=: GET ?comp=blocklist&snapshot=... → 200.
func (s *Server) getSnapshotBlockList(w http.ResponseWriter, r *http.Request, req *request) error {
	typ, err := blockListType(req)
	if err != nil {
		return err
	}
	cond, err := ifTagsOnly.parse(r.Header)
	if err != nil {
		return err
	}
	b, err := s.snapshotRow(r, req, cond)
	if err != nil {
		return err
	}
	if b.Type != "BlockBlob" {
		return svcerr.New(svcerr.InvalidBlobType)
	}
	var out xmlBlockList
	if typ != "uncommitted" {
		out.Committed = []xmlBlock{}
		for _, e := range b.Extents {
			if e.BlockID != "" {
				out.Committed = append(out.Committed, xmlBlock{Name: e.BlockID, Size: e.Size})
			}
		}
	}
	if typ != "committed" {
		out.Uncommitted = []xmlBlock{}
	}
	h := w.Header()
	setETagLM(h, b.ETag, b.LastModified)
	h.Set("x-ms-blob-content-length", strconv.FormatInt(b.Size, 10))
	return writeXML(w, r, http.StatusOK, out)
}

// Get Blob Tags ?snapshot=: GET ?comp=tags&snapshot=... → 200 with the
// snapshot's tags.
func (s *Server) getSnapshotTags(w http.ResponseWriter, r *http.Request, req *request) error {
	cond, err := tagConditions(r.Header)
	if err != nil {
		return err
	}
	b, err := s.snapshotRow(r, req, cond)
	if err != nil {
		return err
	}
	sendTagSet(w, b.Tags)
	return nil
}

// snapshotRow reads the snapshot the request names and evaluates cond on
// it; a failed condition is 412 (these reads have no 304).
func (s *Server) snapshotRow(r *http.Request, req *request, cond leasedb.Conditions) (*leasedb.Blob, error) {
	snap, err := leasedb.ParseSnapshot(req.query["snapshot"])
	if err != nil {
		return nil, err
	}
	b, _, err := s.db.GetSnapshot(r.Context(), req.ref(), snap, cond)
	if leasedb.IsNotModified(err) {
		return nil, svcerr.New(svcerr.ConditionNotMet)
	}
	if err != nil {
		return nil, err
	}
	return b, nil
}
