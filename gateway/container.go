package gateway

import (
	"net/http"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

// Create Container: PUT ?restype=container → 201.
func (s *Server) createContainer(w http.ResponseWriter, r *http.Request, req *request) error {
	meta, err := parseMetadata(r.Header, req.metaNames)
	if err != nil {
		return err
	}
	access, err := parsePublicAccess(r.Header)
	if err != nil {
		return err
	}
	c, err := s.db.CreateContainer(r.Context(), req.account, req.container, meta, access)
	if err != nil {
		return err
	}
	setETagLM(w.Header(), c.ETag, c.LastModified)
	w.WriteHeader(http.StatusCreated)
	return nil
}

// Get Container Properties / Metadata: GET|HEAD ?restype=container[&comp=metadata] → 200.
func (s *Server) getContainerProperties(w http.ResponseWriter, r *http.Request, req *request) error {
	leaseID, err := leaseIDHeader(r.Header)
	if err != nil {
		return err
	}
	c, now, err := s.db.GetContainer(r.Context(), req.account, req.container, leaseID)
	if err != nil {
		return err
	}
	writeContainerHeaders(w.Header(), c, now)
	w.WriteHeader(http.StatusOK)
	return nil
}

// containerConditions parses the conditions a container operation accepts:
// the date conditions only; If-Match/If-None-Match are 400
// ConditionHeadersNotSupported, as on Azure's container operations.
func containerConditions(r *http.Request, allowIUS bool) (leasedb.Conditions, error) {
	cond, err := parseConditions(r.Header)
	if err != nil {
		return cond, err
	}
	if len(cond.IfMatch) > 0 || len(cond.IfNoneMatch) > 0 || (!allowIUS && cond.HadIUS) {
		return cond, svcerr.New(svcerr.ConditionHeadersNotSupported)
	}
	return cond, nil
}

// Set Container Metadata: PUT ?restype=container&comp=metadata → 200.
func (s *Server) setContainerMetadata(w http.ResponseWriter, r *http.Request, req *request) error {
	leaseID, err := leaseIDHeader(r.Header)
	if err != nil {
		return err
	}
	cond, err := containerConditions(r, false)
	if err != nil {
		return err
	}
	meta, err := parseMetadata(r.Header, req.metaNames)
	if err != nil {
		return err
	}
	c, err := s.db.SetContainerMetadata(r.Context(), req.account, req.container, leaseID, cond, meta)
	if err != nil {
		return err
	}
	setETagLM(w.Header(), c.ETag, c.LastModified)
	w.WriteHeader(http.StatusOK)
	return nil
}

// Delete Container: DELETE ?restype=container → 202. Blobs go with it;
// their bytes are collected after the grace period, or, with the account's
// container soft delete retention on, kept with them until it passes
// (container_restore.go).
func (s *Server) deleteContainer(w http.ResponseWriter, r *http.Request, req *request) error {
	leaseID, err := leaseIDHeader(r.Header)
	if err != nil {
		return err
	}
	cond, err := containerConditions(r, true)
	if err != nil {
		return err
	}
	retention := s.opt.ContainerDeleteRetention[req.account]
	if err := s.db.DeleteContainerRetained(r.Context(), req.account, req.container, leaseID, cond, retention); err != nil {
		return err
	}
	w.WriteHeader(http.StatusAccepted)
	return nil
}
