package gateway

import (
	"io"
	"net/http"
	"strings"

	"github.com/blobgw/blobgw/svcerr"
)

// The secondary endpoint. An account with read-access geo-redundant
// storage answers reads at <account>-secondary (host form
// <account>-secondary.blob..., or the first path segment in path form).
// The gateway's store is one copy that every endpoint reads, so the
// secondary is the primary's data, always in sync: reads work there,
// writes are refused as Azure refuses them (403
// InsufficientAccountPermissions), and Get Blob Service Stats, which Azure
// answers only there, reports the replication live as of the database
// clock. Authorization uses the primary name throughout: a Shared Key
// request names the primary account in its Authorization header and
// canonicalized resource ("/account" + the path as sent), and a SAS is
// signed for the primary's resources.

const secondarySuffix = "-secondary"

// primaryOf maps an account name from the URL to the account it
// addresses: "<account>-secondary" is account's secondary endpoint when
// account is served (and no account is itself called so).
func (s *Server) primaryOf(name string) (account string, secondary bool) {
	base, ok := strings.CutSuffix(name, secondarySuffix)
	if !ok || base == "" {
		return name, false
	}
	if _, exists := s.accounts.Lookup(name); exists {
		return name, false
	}
	if _, exists := s.accounts.Lookup(base); !exists {
		return name, false
	}
	return base, true
}

// refuseSecondaryWrite refuses at the secondary endpoint every operation
// but reads (GET and HEAD): Azure's secondary is read-only, and answers so
// in these words.
func refuseSecondaryWrite(r *http.Request, req *request) error {
	if !req.secondary || r.Method == http.MethodGet || r.Method == http.MethodHead {
		return nil
	}
	return svcerr.Newf(svcerr.InsufficientAccountPermissions, "Write operations are not allowed.")
}

// Get Blob Service Stats: GET ?restype=service&comp=stats at the secondary
// endpoint → 200 with the GeoReplication status "live" and LastSyncTime
// (RFC 1123), the database clock: everything committed before it is
// readable at the secondary, since it is the same store. At the primary
// endpoint Azure answers 400 InvalidQueryParameterValue.
func (s *Server) getServiceStats(w http.ResponseWriter, r *http.Request, req *request) error {
	if !req.secondary {
		return svcerr.New(svcerr.InvalidQueryParameterValue)
	}
	now, err := s.db.Now(r.Context())
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, xmlDecl+`<StorageServiceStats><GeoReplication><Status>live</Status><LastSyncTime>`+
		now.UTC().Format(http.TimeFormat)+`</LastSyncTime></GeoReplication></StorageServiceStats>`)
	return nil
}

// Get User Delegation Key: POST ?restype=service&comp=userdelegationkey.
// Azure issues the key only to a caller authorized with a Microsoft Entra
// ID bearer token; a Shared Key caller gets 403 AuthenticationFailed with
// the detail "Only authentication scheme Bearer is supported", before the
// KeyInfo body is looked at. The gateway verifies no bearer tokens (an
// Authorization: Bearer header is 400 InvalidAuthenticationInfo like any
// scheme other than SharedKey), so every caller that reaches this handler
// is refused so, and no key is ever issued.
func (s *Server) getUserDelegationKey(w http.ResponseWriter, r *http.Request, req *request) error {
	e := svcerr.New(svcerr.AuthenticationFailed)
	e.Details = [][2]string{{"AuthenticationErrorDetail", "Only authentication scheme Bearer is supported"}}
	return e
}
