package gateway

import (
	"net/http"

	"github.com/blobgw/blobgw/svcerr"
)

// Restore Container: PUT ?restype=container&comp=undelete → 201. The
// soft-deleted container that x-ms-deleted-container-name and
// x-ms-deleted-container-version name (as List Containers include=deleted
// reports them) comes back under its name, with its properties, metadata,
// blobs, snapshots and staged blocks as they were when it was deleted. A
// restore under another name (the request's container differing from
// x-ms-deleted-container-name, which Azure no longer allows) is refused;
// a name in use again is 409 ContainerAlreadyExists; an unknown or
// expired version is 404 ContainerNotFound.
func (s *Server) restoreContainer(w http.ResponseWriter, r *http.Request, req *request) error {
	name, version := r.Header.Get("x-ms-deleted-container-name"), r.Header.Get("x-ms-deleted-container-version")
	switch {
	case name == "":
		return svcerr.Header(svcerr.MissingRequiredHeader, "x-ms-deleted-container-name", "")
	case version == "":
		return svcerr.Header(svcerr.MissingRequiredHeader, "x-ms-deleted-container-version", "")
	case name != req.container:
		return svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-deleted-container-name", name)
	case !validDeletedVersion(version):
		// Not a version this gateway (or Azure) hands out: nothing by
		// that version was deleted.
		return svcerr.New(svcerr.ContainerNotFound)
	}
	if err := s.db.RestoreContainer(r.Context(), req.account, req.container, version); err != nil {
		return err
	}
	w.WriteHeader(http.StatusCreated)
	return nil
}

// validDeletedVersion: 16 hex digits, the form of leasedb.DeletedContainer
// versions.
func validDeletedVersion(v string) bool {
	if len(v) != 16 {
		return false
	}
	for _, c := range v {
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}
