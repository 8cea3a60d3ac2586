package gateway

import (
	"net/http"
	"time"

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
	return writeContainerETag(w, c, http.StatusCreated)
}

// Get Container Properties / Metadata: GET|HEAD ?restype=container[&comp=metadata] → 200.
func (s *Server) getContainerProperties(w http.ResponseWriter, r *http.Request, req *request) error {
	c, now, err := s.readContainer(r, req)
	if err != nil {
		return err
	}
	writeContainerHeaders(w.Header(), c, now)
	w.WriteHeader(http.StatusOK)
	return nil
}

// containerConditions parses the conditions a container operation accepts:
// the date conditions only; If-Match/If-None-Match are 400
// ConditionHeadersNotSupported, as on Azure's container operations, and
// so is x-ms-if-tags (a container has no tags to match: leasedb would pass
// it, so the operation would run unguarded).
func containerConditions(r *http.Request, allowIUS bool) (leasedb.Conditions, error) {
	cond, err := parseConditions(r.Header)
	if err != nil {
		return cond, err
	}
	if cond.IfTags != nil {
		return cond, svcerr.Header(svcerr.ConditionHeadersNotSupported, "x-ms-if-tags", cond.IfTags.String())
	}
	if len(cond.IfMatch) > 0 || len(cond.IfNoneMatch) > 0 || (!allowIUS && cond.HadIUS) {
		return cond, svcerr.New(svcerr.ConditionHeadersNotSupported)
	}
	return cond, nil
}

// readContainer reads the container a Get Container Properties, Metadata
// or ACL names, checking its x-ms-lease-id when one is sent.
func (s *Server) readContainer(r *http.Request, req *request) (*leasedb.Container, time.Time, error) {
	leaseID, err := leaseIDHeader(r.Header)
	if err != nil {
		return nil, time.Time{}, err
	}
	return s.db.GetContainer(r.Context(), req.account, req.container, leaseID)
}

// containerWrite parses what every container write (Set Container
// Metadata, Set Container ACL, Delete Container) takes before its own
// input: x-ms-lease-id and the container conditions.
func containerWrite(r *http.Request, allowIUS bool) (leaseID string, cond leasedb.Conditions, err error) {
	if leaseID, err = leaseIDHeader(r.Header); err != nil {
		return "", cond, err
	}
	cond, err = containerConditions(r, allowIUS)
	return leaseID, cond, err
}

// writeContainerETag answers a container write: the container's new ETag
// and Last-Modified, and status.
func writeContainerETag(w http.ResponseWriter, c *leasedb.Container, status int) error {
	setETagLM(w.Header(), c.ETag, c.LastModified)
	w.WriteHeader(status)
	return nil
}

// Set Container Metadata: PUT ?restype=container&comp=metadata → 200.
func (s *Server) setContainerMetadata(w http.ResponseWriter, r *http.Request, req *request) error {
	leaseID, cond, err := containerWrite(r, false)
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
	return writeContainerETag(w, c, http.StatusOK)
}

// Delete Container: DELETE ?restype=container → 202. Blobs go with it;
// their bytes are collected after the grace period, or, with the account's
// container soft delete retention on, kept with them until it passes
// (container_restore.go).
func (s *Server) deleteContainer(w http.ResponseWriter, r *http.Request, req *request) error {
	leaseID, cond, err := containerWrite(r, true)
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
