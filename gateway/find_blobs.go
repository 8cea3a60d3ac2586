package gateway

import (
	"net/http"
	"strings"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

// Find Blobs by Tags: GET /?comp=blobs&where=... (the account) and GET
// /<container>?restype=container&comp=blobs&where=... (one container) → 200.
// The where expression is the restricted grammar (no <>, no OR; @container
// allowed); each result carries the tags the expression names. The
// results are current blobs only, as Azure answers without
// include=versions.
func (s *Server) findBlobs(w http.ResponseWriter, r *http.Request, req *request) error {
	max, err := parseMaxResults(req)
	if err != nil {
		return err
	}
	if err := findInclude(req.query["include"]); err != nil {
		return err
	}
	src, ok := req.query["where"]
	if !ok || strings.TrimSpace(src) == "" {
		return svcerr.Query(svcerr.InvalidQueryParameterValue, "where", src, "a where expression is required")
	}
	where, err := leasedb.ParseTagFilter(src)
	if err != nil {
		e := svcerr.Query(svcerr.InvalidQueryParameterValue, "where", src, err.Error())
		e.Message = tagParseMessage(err)
		return e
	}
	res, err := s.db.FindBlobsByTags(r.Context(), req.account, req.container, where, req.query["marker"], max)
	if err != nil {
		return err
	}
	var x xmlWriter
	x.openEnumeration(r, req, "")
	x.elem("Where", src)
	x.open("Blobs")
	for _, b := range res.Blobs {
		x.open("Blob")
		x.elem("Name", b.Name)
		x.elem("ContainerName", b.Container)
		writeTagSet(&x, b.Tags)
		x.close("Blob")
	}
	x.close("Blobs")
	x.elem("NextMarker", res.Next)
	x.close("EnumerationResults")
	x.send(w)
	return nil
}

// findInclude checks Find Blobs by Tags' include parameter. Azure takes
// "none" (the default) and, since version 2021-08-06, "versions", which
// adds the previous versions whose tags match (with VersionId and
// IsCurrentVersion). The tag index here holds current blobs only, so
// include=versions is refused rather than answered as if no version
// matched; any other value is not a value of the parameter.
func findInclude(v string) error {
	if v == "" {
		return nil
	}
	for _, p := range strings.Split(v, ",") {
		switch strings.ToLower(strings.TrimSpace(p)) {
		case "none":
		case "versions":
			e := svcerr.Query(svcerr.NotImplemented, "include", v, "Find Blobs by Tags with include=versions is not implemented")
			e.Message = "Find Blobs by Tags with include=versions (tags of previous versions) is not implemented by this gateway."
			return e
		default:
			return svcerr.Query(svcerr.InvalidQueryParameterValue, "include", v, "include takes none or versions")
		}
	}
	return nil
}
