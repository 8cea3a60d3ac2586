package gateway

import (
	"net"
	"net/http"
	"strings"

	"github.com/blobgw/blobgw/gateway/auth"
	"github.com/blobgw/blobgw/svcerr"
)

// authorize decides who the caller is: Shared Key when an Authorization
// header is present, a SAS when the query carries one, else anonymous,
// which only the container's public access level can allow.
func (s *Server) authorize(r *http.Request, req *request) error {
	if r.Header.Get("Authorization") != "" {
		_, err := auth.VerifySharedKey(r, s.accounts, req.account, s.opt.Now())
		return err
	}
	q := r.URL.Query()
	if auth.IsSAS(q) {
		return s.authorizeSAS(r, req, q)
	}
	if s.publicRead(r, req) {
		req.anonymous = true
		return nil
	}
	return svcerr.New(svcerr.NoAuthenticationInformation)
}

func (s *Server) authorizeSAS(r *http.Request, req *request, q map[string][]string) error {
	op, ok := sasOperation(r, req)
	if !ok {
		return svcerr.New(svcerr.AuthorizationPermissionMismatch)
	}
	sreq := auth.SASRequest{
		Query:    q,
		Resource: auth.Resource{Account: req.account, Container: req.container, Blob: req.blob, Snapshot: req.query["snapshot"]},
		Op:       op,
		HTTPS:    r.TLS != nil,
		ClientIP: clientIP(r),
		Now:      s.opt.Now(),
	}
	// A token naming a stored access policy (si) takes it from the
	// container's ACL, read once for this request.
	var dbErr error
	policies := s.sasPolicies(r, req, &dbErr)
	_, err := auth.VerifySAS(sreq, s.accounts, policies)
	if op == auth.OpOverwriteBlob && svcerr.HasCode(err, svcerr.AuthorizationPermissionMismatch) {
		// A create-only token (c without w) may still write a blob that
		// does not exist yet; the commit refuses it atomically otherwise
		// (contract §2.4).
		sreq.Op = auth.OpCreateBlob
		if _, err2 := auth.VerifySAS(sreq, s.accounts, policies); err2 == nil {
			req.createOnly = true
			err = nil
		}
	}
	if dbErr != nil {
		return dbErr
	}
	if err == nil {
		req.sas = true
	}
	return err
}

func clientIP(r *http.Request) net.IP {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return net.ParseIP(host)
}

// sasOperation maps a request to the operation whose permission a SAS must
// grant (mirrors route).
func sasOperation(r *http.Request, req *request) (auth.Operation, bool) {
	restype, comp := req.query["restype"], req.query["comp"]
	get := r.Method == http.MethodGet || r.Method == http.MethodHead
	put, del := r.Method == http.MethodPut, r.Method == http.MethodDelete
	isBreak := strings.EqualFold(r.Header.Get("x-ms-lease-action"), "break")
	if restype == "account" && comp == "properties" {
		return auth.OpAccountInfo, get
	}
	switch {
	case req.container == "":
		switch {
		case comp == "list" && get:
			return auth.OpListContainers, true
		case comp == "blobs" && get:
			return auth.OpFindBlobsService, true
		case restype == "service" && comp == "properties":
			if put {
				return auth.OpSetServiceProperties, true
			}
			return auth.OpGetServiceProperties, get
		}
	case req.blob == "":
		switch comp {
		case "":
			switch {
			case put:
				return auth.OpCreateContainer, true
			case get:
				return auth.OpGetContainer, true
			case del:
				return auth.OpDeleteContainer, true
			}
		case "metadata":
			if put {
				return auth.OpSetContainerMetadata, true
			}
			return auth.OpGetContainer, get
		case "acl":
			return auth.OpContainerACL, true
		case "list":
			return auth.OpListBlobs, get
		case "blobs":
			return auth.OpFindBlobsContainer, get
		case "lease":
			if isBreak {
				return auth.OpBreakContainerLease, put
			}
			return auth.OpLeaseContainer, put
		}
	default:
		switch comp {
		case "":
			switch {
			case put:
				return auth.OpOverwriteBlob, true
			case get:
				return auth.OpReadBlob, true
			case del:
				return auth.OpDeleteBlob, true
			}
		case "metadata", "properties":
			if put {
				return auth.OpWriteBlobProps, true
			}
			return auth.OpReadBlob, get
		case "block":
			return auth.OpPutBlock, put
		case "blocklist":
			if put {
				return auth.OpOverwriteBlob, true
			}
			return auth.OpReadBlob, get
		case "appendblock":
			return auth.OpAppendBlock, put
		case "lease":
			if isBreak {
				return auth.OpBreakBlobLease, put
			}
			return auth.OpLeaseBlob, put
		case "snapshot":
			return auth.OpSnapshotBlob, put
		case "copy":
			// Abort Copy Blob: write permission on the destination.
			return auth.OpOverwriteBlob, put
		case "tags":
			return auth.OpBlobTags, true
		case "tier":
			return auth.OpWriteBlobProps, put
		case "seal":
			// Append Blob Seal: "a SAS that has write permissions".
			return auth.OpOverwriteBlob, put
		}
	}
	return 0, false
}

// publicRead reports whether an anonymous request is a read the container's
// public access level allows: "blob" opens blob reads, "container" also
// container properties and listing.
func (s *Server) publicRead(r *http.Request, req *request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead || req.container == "" {
		return false
	}
	comp := req.query["comp"]
	blobRead := req.blob != "" && (comp == "" || comp == "metadata" || comp == "blocklist")
	containerRead := req.blob == "" && req.query["restype"] == "container" && (comp == "" || comp == "metadata" || comp == "list")
	if !blobRead && !containerRead {
		return false
	}
	c, _, err := s.db.GetContainer(r.Context(), req.account, req.container, "")
	if err != nil || c == nil {
		return false
	}
	switch c.PublicAccess {
	case "container":
		return true
	case "blob":
		return blobRead
	}
	return false
}
