package gateway

import (
	"encoding/base64"
	"net/http"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

// blobConds parses the conditions and lease id every blob write carries,
// and the reads that take both (Get Blob, Get Page Ranges).
func blobConds(r *http.Request) (leasedb.Conditions, string, error) {
	cond, err := parseConditions(r.Header)
	if err != nil {
		return cond, "", err
	}
	leaseID, err := leaseIDHeader(r.Header)
	return cond, leaseID, err
}

// metaWriteConds parses a write that also sets the blob's metadata (Put
// Block List, Copy Blob, Put Blob From URL): its x-ms-meta-* headers
// first, then its conditions and lease id (blobConds).
func metaWriteConds(r *http.Request, req *request) (map[string]string, leasedb.Conditions, string, error) {
	meta, err := parseMetadata(r.Header, req.metaNames)
	if err != nil {
		return nil, leasedb.Conditions{}, "", err
	}
	cond, leaseID, err := blobConds(r)
	return meta, cond, leaseID, err
}

// condsMetaWrite parses Set Blob Metadata's and Snapshot Blob's request:
// its conditions and lease id (blobConds) first, then its x-ms-meta-*
// headers (the other order from metaWriteConds, as these two always had).
func condsMetaWrite(r *http.Request, req *request) (leasedb.Conditions, string, map[string]string, error) {
	cond, leaseID, err := blobConds(r)
	if err != nil {
		return cond, "", nil, err
	}
	meta, err := parseMetadata(r.Header, req.metaNames)
	return cond, leaseID, meta, err
}

// Set Blob Properties: PUT ?comp=properties → 200, new ETag. The
// x-ms-blob-content-* set replaces the stored one wholesale.
func (s *Server) setBlobProperties(w http.ResponseWriter, r *http.Request, req *request) error {
	cond, leaseID, err := blobConds(r)
	if err != nil {
		return err
	}
	pp, err := parsePageProps(r.Header)
	if err != nil {
		return err
	}
	if pp.Any() {
		return s.setPageBlobProperties(w, r, req, pp)
	}
	// Set Blob Properties stores x-ms-blob-content-md5 as given, in any
	// length: Azure checks it against nothing there.
	hdr := r.Header
	md5v := hdr.Get("x-ms-blob-content-md5")
	if md5v != "" {
		hdr = hdr.Clone()
		hdr.Del("x-ms-blob-content-md5")
	}
	props, err := parseBlobProps(hdr, false)
	if err != nil {
		return err
	}
	if md5v != "" {
		if props.ContentMD5, err = base64.StdEncoding.DecodeString(md5v); err != nil {
			return svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-blob-content-md5", md5v)
		}
	}
	b, err := s.db.SetBlobProperties(r.Context(), req.ref(), leaseID, cond, props)
	if err != nil {
		return err
	}
	setETagLM(w.Header(), b.ETag, b.LastModified)
	w.WriteHeader(http.StatusOK)
	return nil
}

// Set Blob Metadata: PUT ?comp=metadata → 200, new ETag.
func (s *Server) setBlobMetadata(w http.ResponseWriter, r *http.Request, req *request) error {
	cond, leaseID, meta, err := condsMetaWrite(r, req)
	if err != nil {
		return err
	}
	b, err := s.db.SetBlobMetadata(r.Context(), req.ref(), leaseID, cond, meta)
	if err != nil {
		return err
	}
	h := w.Header()
	setETagLM(h, b.ETag, b.LastModified)
	setVersionID(h, b)
	h.Set("x-ms-request-server-encrypted", "true")
	w.WriteHeader(http.StatusOK)
	return nil
}
