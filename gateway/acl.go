package gateway

import (
	"encoding/xml"
	"net/http"
	"strings"

	"github.com/blobgw/blobgw/gateway/auth"
	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

// Stored access policies (Set/Get Container ACL). A container holds up to
// leasedb.MaxSignedIdentifiers policies; a service SAS naming one with si=
// takes the policy's permissions and times, so changing or removing the
// policy changes or revokes every token that names it.

// aclTimeFormat is how Get Container ACL writes policy times (Azure's
// seven fractional digits).
const aclTimeFormat = "2006-01-02T15:04:05.0000000Z"

// maxIdentifierLen is the longest signed identifier Azure accepts.
const maxIdentifierLen = 64

// containerPermissionLetters are the permission letters of a container
// SAS, which is what a stored policy grants.
const containerPermissionLetters = "racwdxyltfmeopi"

type aclXML struct {
	XMLName     xml.Name        `xml:"SignedIdentifiers"`
	Identifiers []identifierXML `xml:"SignedIdentifier"`
}

type identifierXML struct {
	ID     string     `xml:"Id"`
	Policy *policyXML `xml:"AccessPolicy"`
}

type policyXML struct {
	Start      string `xml:"Start,omitempty"`
	Expiry     string `xml:"Expiry,omitempty"`
	Permission string `xml:"Permission,omitempty"`
}

// parseACL validates a Set Container ACL body: at most 5 identifiers, each
// with a unique, non-empty id of at most 64 characters, times in the SAS
// time formats and container permission letters. Anything else is 400
// InvalidXmlDocument, as Azure answers.
func parseACL(doc *aclXML) ([]leasedb.SignedIdentifier, error) {
	if len(doc.Identifiers) > leasedb.MaxSignedIdentifiers {
		return nil, svcerr.Newf(svcerr.InvalidXmlDocument, "XML specified is not syntactically valid: at most %d signed identifiers are allowed, got %d.", leasedb.MaxSignedIdentifiers, len(doc.Identifiers))
	}
	bad := func(format string, args ...any) error {
		return svcerr.Newf(svcerr.InvalidXmlDocument, "XML specified is not syntactically valid: "+format, args...)
	}
	var out []leasedb.SignedIdentifier
	seen := map[string]bool{}
	for _, x := range doc.Identifiers {
		id := x.ID
		switch {
		case id == "":
			return nil, bad("a signed identifier has no Id.")
		case len([]rune(id)) > maxIdentifierLen:
			return nil, bad("the signed identifier %q is longer than %d characters.", id, maxIdentifierLen)
		case seen[id]:
			return nil, bad("the signed identifier %q appears twice.", id)
		}
		seen[id] = true
		si := leasedb.SignedIdentifier{ID: id}
		if p := x.Policy; p != nil {
			var ok bool
			if v := strings.TrimSpace(p.Start); v != "" {
				if si.Start, ok = auth.ParseTime(v); !ok {
					return nil, bad("Start %q of %q is not a valid UTC time.", v, id)
				}
			}
			if v := strings.TrimSpace(p.Expiry); v != "" {
				if si.Expiry, ok = auth.ParseTime(v); !ok {
					return nil, bad("Expiry %q of %q is not a valid UTC time.", v, id)
				}
			}
			si.Permission = strings.TrimSpace(p.Permission)
			for _, c := range si.Permission {
				if !strings.ContainsRune(containerPermissionLetters, c) {
					return nil, bad("Permission %q of %q has a letter that is not a container permission.", si.Permission, id)
				}
			}
		}
		out = append(out, si)
	}
	return out, nil
}

func formatACL(acl []leasedb.SignedIdentifier) aclXML {
	doc := aclXML{Identifiers: []identifierXML{}}
	for _, si := range acl {
		p := &policyXML{Permission: si.Permission}
		if !si.Start.IsZero() {
			p.Start = si.Start.UTC().Format(aclTimeFormat)
		}
		if !si.Expiry.IsZero() {
			p.Expiry = si.Expiry.UTC().Format(aclTimeFormat)
		}
		doc.Identifiers = append(doc.Identifiers, identifierXML{ID: si.ID, Policy: p})
	}
	return doc
}

// Get Container ACL: GET|HEAD ?restype=container&comp=acl → 200 with the
// public access level header and the stored access policies.
func (s *Server) getContainerACL(w http.ResponseWriter, r *http.Request, req *request) error {
	c, _, err := s.readContainer(r, req)
	if err != nil {
		return err
	}
	h := w.Header()
	setETagLM(h, c.ETag, c.LastModified)
	if c.PublicAccess != "" {
		h.Set("x-ms-blob-public-access", c.PublicAccess)
	}
	return writeXML(w, r, http.StatusOK, formatACL(c.ACL))
}

// Set Container ACL: PUT ?restype=container&comp=acl → 200. The public
// access level (header) and the stored access policies (body; an empty
// body removes them all) are replaced together in one transaction.
func (s *Server) setContainerACL(w http.ResponseWriter, r *http.Request, req *request) error {
	leaseID, cond, err := containerWrite(r, true)
	if err != nil {
		return err
	}
	access, err := parsePublicAccess(r.Header)
	if err != nil {
		return err
	}
	var doc aclXML
	if err := readXML(r, 64<<10, &doc, true); err != nil {
		return err
	}
	acl, err := parseACL(&doc)
	if err != nil {
		return err
	}
	c, err := s.db.SetContainerACL(r.Context(), req.account, req.container, leaseID, cond, access, acl)
	if err != nil {
		return err
	}
	return writeContainerETag(w, c, http.StatusOK)
}

// sasPolicies returns the stored-policy lookup for one SAS request: the
// container's policies are read at most once, when the verified token names
// one. A database failure is kept in *dbErr so the caller answers it as a
// server error, not as a refused token.
func (s *Server) sasPolicies(r *http.Request, req *request, dbErr *error) auth.Policies {
	type result struct {
		si leasedb.SignedIdentifier
		ok bool
	}
	cache := map[string]result{}
	return func(container, id string) (auth.StoredPolicy, bool) {
		res, done := cache[id]
		if !done {
			si, ok, err := s.db.ContainerPolicy(r.Context(), req.account, container, id)
			if err != nil {
				*dbErr = err
				return auth.StoredPolicy{}, false
			}
			res = result{si, ok}
			cache[id] = res
		}
		if !res.ok {
			return auth.StoredPolicy{}, false
		}
		return auth.StoredPolicy{ID: res.si.ID, Start: res.si.Start, Expiry: res.si.Expiry, Permission: res.si.Permission}, true
	}
}
