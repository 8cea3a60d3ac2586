package gateway

import (
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
	public, err := s.publicRead(r, req)
	if err != nil {
		return err
	}
	if public {
		req.anonymous = true
		return nil
	}
	return svcerr.New(svcerr.NoAuthenticationInformation)
}

func (s *Server) authorizeSAS(r *http.Request, req *request, q map[string][]string) error {
	op, ok := req.op.sasOperation()
	if !ok {
		return svcerr.New(svcerr.AuthorizationPermissionMismatch)
	}
	sreq := auth.SASRequest{
		Query:    q,
		Resource: auth.Resource{Account: req.account, Container: req.container, Blob: req.blob, Snapshot: req.query["snapshot"]},
		Op:       op,
		HTTPS:    req.peer.https,
		ClientIP: req.peer.clientIP(),
		Now:      s.opt.Now(),
	}
	// A token naming a stored access policy (si) takes it from the
	// container's ACL, read once for this request.
	var dbErr error
	policies := s.sasPolicies(r, req, &dbErr)
	_, err := auth.VerifySAS(sreq, s.accounts, policies)
	if op == auth.OpOverwriteBlob && svcerr.HasCode(err, svcerr.AuthorizationPermissionMismatch) {
		// A create-only token (c without w) may still write a blob that
		// does not exist yet (SAS permission c: create a new blob only);
		// the commit refuses it atomically otherwise.
		sreq.Op = auth.OpCreateBlob
		if _, err2 := auth.VerifySAS(sreq, s.accounts, policies); err2 == nil {
			req.createOnly = true
			err = nil
		}
	}
	if err == nil && op == auth.OpListBlobs && listsTags(req) {
		// List Blobs include=tags shows what Get Blob Tags reads: the
		// token must grant t too.
		sreq.Op = auth.OpBlobTags
		_, err = auth.VerifySAS(sreq, s.accounts, policies)
	}
	if dbErr != nil {
		return dbErr
	}
	if err == nil {
		req.sas = true
	}
	return err
}

// listsTags reports whether a List Blobs asks for the blobs' tags
// (include=tags), as parseInclude reads include.
func listsTags(req *request) bool {
	for _, p := range strings.Split(req.query["include"], ",") {
		if strings.EqualFold(strings.TrimSpace(p), "tags") {
			return true
		}
	}
	return false
}

// publicRead reports whether an anonymous request is an operation the
// container's public access level allows: "blob" opens blob reads,
// "container" also container properties and listing. A store that cannot
// read the container is the error, answered as a server error.
func (s *Server) publicRead(r *http.Request, req *request) (bool, error) {
	if req.op.public == notPublic {
		return false, nil
	}
	if typ := req.query["blocklisttype"]; req.op.name == "GetBlockList" && typ != "" && typ != "committed" {
		// Get Block List is public for the committed blocks only: the
		// uncommitted ones are the owner's.
		return false, nil
	}
	if req.op.sas == auth.OpListBlobs && listsTags(req) {
		// Tags are never public (Get Blob Tags is not).
		return false, nil
	}
	c, _, err := s.db.GetContainer(r.Context(), req.account, req.container, "")
	if svcerr.HasCode(err, svcerr.ContainerNotFound) {
		return false, nil
	}
	if err != nil || c == nil {
		return false, err
	}
	switch c.PublicAccess {
	case "container":
		return true, nil
	case "blob":
		return req.op.public == publicBlob, nil
	}
	return false, nil
}
