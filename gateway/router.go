package gateway

import (
	"net/http"

	"github.com/blobgw/blobgw/svcerr"
)

type handler func(w http.ResponseWriter, r *http.Request, req *request) error

// route picks the operation from method + restype + comp + discriminating
// headers (contract §1.3).
func (s *Server) route(r *http.Request, req *request) (handler, error) {
	restype, comp := req.query["restype"], req.query["comp"]
	m := r.Method
	get := m == http.MethodGet || m == http.MethodHead
	if restype == "account" && comp == "properties" && get {
		return s.getAccountInfo, nil
	}
	switch {
	case req.container == "":
		switch {
		case comp == "list" && m == http.MethodGet:
			return s.listContainers, nil
		case comp == "blobs" && m == http.MethodGet:
			return s.findBlobs, nil
		case restype == "service" && comp == "properties" && get:
			return s.getServiceProperties, nil
		case restype == "service" && comp == "properties" && m == http.MethodPut:
			return s.setServiceProperties, nil
		}
	case req.blob == "":
		if restype != "container" {
			break
		}
		switch comp {
		case "":
			switch {
			case m == http.MethodPut:
				return s.createContainer, nil
			case get:
				return s.getContainerProperties, nil
			case m == http.MethodDelete:
				return s.deleteContainer, nil
			}
		case "metadata":
			switch {
			case get:
				return s.getContainerProperties, nil
			case m == http.MethodPut:
				return s.setContainerMetadata, nil
			}
		case "acl":
			switch {
			case get:
				return s.getContainerACL, nil
			case m == http.MethodPut:
				return s.setContainerACL, nil
			}
		case "list":
			if m == http.MethodGet {
				return s.listBlobs, nil
			}
		case "blobs":
			if m == http.MethodGet {
				return s.findBlobs, nil
			}
		case "lease":
			if m == http.MethodPut {
				return s.leaseContainer, nil
			}
		default:
			return nil, svcerr.Query(svcerr.InvalidQueryParameterValue, "comp", comp, "")
		}
	default:
		if snap, ok := req.query["snapshot"]; ok {
			// Snapshots are read-only: reads and delete only (lease
			// refuses them with its own error).
			switch {
			case comp == "lease":
			case (comp == "" || comp == "metadata") && get:
				return s.getSnapshot, nil
			case comp == "" && m == http.MethodDelete:
				return s.deleteSnapshot, nil
			default:
				return nil, svcerr.Query(svcerr.InvalidQueryParameterValue, "snapshot", snap, "snapshots are read-only")
			}
		}
		switch comp {
		case "":
			switch {
			case m == http.MethodPut:
				if r.Header.Get("x-ms-copy-source") != "" {
					if r.Header.Get("x-ms-blob-type") != "" {
						return s.putBlobFromURL, nil
					}
					return s.copyBlob, nil
				}
				return s.putBlob, nil
			case get:
				return s.getBlob, nil
			case m == http.MethodDelete:
				return s.deleteBlob, nil
			}
		case "metadata":
			switch {
			case get:
				return s.getBlob, nil
			case m == http.MethodPut:
				return s.setBlobMetadata, nil
			}
		case "properties":
			if m == http.MethodPut {
				return s.setBlobProperties, nil
			}
		case "lease":
			if m == http.MethodPut {
				return s.leaseBlob, nil
			}
		case "block":
			if m == http.MethodPut {
				if r.Header.Get("x-ms-copy-source") != "" {
					return s.putBlockFromURL, nil
				}
				return s.putBlock, nil
			}
		case "blocklist":
			switch {
			case m == http.MethodPut:
				return s.putBlockList, nil
			case get:
				return s.getBlockList, nil
			}
		case "appendblock":
			if m == http.MethodPut {
				if r.Header.Get("x-ms-copy-source") != "" {
					return s.appendBlockFromURL, nil
				}
				return s.appendBlock, nil
			}
		case "tags":
			switch {
			case m == http.MethodGet:
				return s.getBlobTags, nil
			case m == http.MethodPut:
				return s.setBlobTags, nil
			}
		case "tier":
			if m == http.MethodPut {
				return s.setBlobTier, nil
			}
		case "copy":
			if m == http.MethodPut {
				return s.abortCopy, nil
			}
		case "snapshot":
			if m == http.MethodPut {
				return s.createSnapshot, nil
			}
		case "seal":
			if m == http.MethodPut {
				return s.sealBlob, nil
			}
		default:
			return nil, svcerr.Query(svcerr.InvalidQueryParameterValue, "comp", comp, "")
		}
	}
	return nil, svcerr.New(svcerr.UnsupportedHttpVerb)
}
