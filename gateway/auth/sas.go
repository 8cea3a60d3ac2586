// SAS verification (Create a service SAS, Create an account SAS, and the
// checks a token's fields impose). A shared access signature is a query-string token signed with an
// account key; VerifySAS rebuilds the string-to-sign from the token's fields
// exactly as sent, signs it with each key of the addressed account and, only
// once a key reproduces the signature, applies the token's restrictions
// (stored policy, validity window, source IP, protocol, service, resource
// type, scope and permissions) to the request. Everything is a pure function
// of the query, the request facts, the account table, the stored-policy
// lookup and an injected clock and client IP.
//
// Rules for anyone editing this file: never accept a token whose signature
// was not compared with hmac.Equal (constant time, via matches); never log,
// print or put into an error an account key or the token's sig value. The
// string-to-sign may appear in an error detail (Azure does the same): it is
// made of the token's own public fields only.

package auth

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/blobgw/blobgw/svcerr"
)

// Operation identifies what a request does, for permission checks.
type Operation int

// The operations SAS permissions are checked for.
const (
	OpListContainers       Operation = iota
	OpCreateContainer                // Create Container
	OpGetContainer                   // Get Container Properties / Metadata
	OpSetContainerMetadata           // Set Container Metadata
	OpContainerACL                   // Get or Set Container ACL (never by SAS)
	OpDeleteContainer                // Delete Container
	OpLeaseContainer                 // acquire, renew, change, release a container lease
	OpBreakContainerLease            // break a container lease
	OpListBlobs                      // List Blobs
	OpReadBlob                       // Get Blob, Get Blob Properties / Metadata, Get Block List
	OpCreateBlob                     // Put Blob, Put Block List, Copy Blob onto a NEW blob
	OpOverwriteBlob                  // the same onto an existing blob
	OpPutBlock                       // Put Block
	OpAppendBlock                    // Append Block
	OpWriteBlobProps                 // Set Blob Properties / Metadata
	OpSnapshotBlob                   // Snapshot Blob
	OpLeaseBlob                      // acquire, renew, change, release a blob lease
	OpBreakBlobLease                 // break a blob lease
	OpDeleteBlob                     // Delete Blob (or snapshot)
	OpBlobTags                       // Get or Set Blob Tags
	OpServiceProperties              // Get or Set Blob Service Properties: needs both r and w
	OpAccountInfo                    // Get Account Information
	// OpGetServiceProperties and OpSetServiceProperties are the two
	// directions of OpServiceProperties for callers that can tell them
	// apart (account SAS r resp. w).
	OpGetServiceProperties
	OpSetServiceProperties
	OpFindBlobsContainer // Find Blobs by Tags in one container
	OpFindBlobsService   // Find Blobs by Tags across the account
	OpDeleteBlobVersion  // Delete Blob with versionid
	// OpBlobBatch is the Blob Batch request itself; each of its
	// sub-requests (Delete Blob, Set Blob Tier) is checked on its own.
	OpBlobBatch
	OpPermanentDeleteBlob // Delete Blob deletetype=permanent of a soft-deleted snapshot or version
)

var opNames = [...]string{
	OpListContainers:       "ListContainers",
	OpCreateContainer:      "CreateContainer",
	OpGetContainer:         "GetContainer",
	OpSetContainerMetadata: "SetContainerMetadata",
	OpContainerACL:         "ContainerACL",
	OpDeleteContainer:      "DeleteContainer",
	OpLeaseContainer:       "LeaseContainer",
	OpBreakContainerLease:  "BreakContainerLease",
	OpListBlobs:            "ListBlobs",
	OpReadBlob:             "ReadBlob",
	OpCreateBlob:           "CreateBlob",
	OpOverwriteBlob:        "OverwriteBlob",
	OpPutBlock:             "PutBlock",
	OpAppendBlock:          "AppendBlock",
	OpWriteBlobProps:       "WriteBlobProps",
	OpSnapshotBlob:         "SnapshotBlob",
	OpLeaseBlob:            "LeaseBlob",
	OpBreakBlobLease:       "BreakBlobLease",
	OpDeleteBlob:           "DeleteBlob",
	OpBlobTags:             "BlobTags",
	OpServiceProperties:    "ServiceProperties",
	OpAccountInfo:          "AccountInfo",
	OpGetServiceProperties: "GetServiceProperties",
	OpSetServiceProperties: "SetServiceProperties",
	OpFindBlobsContainer:   "FindBlobsContainer",
	OpFindBlobsService:     "FindBlobsService",
	OpDeleteBlobVersion:    "DeleteBlobVersion",
	OpBlobBatch:            "BlobBatch",
	OpPermanentDeleteBlob:  "PermanentDeleteBlob",
}

func (op Operation) String() string {
	if op >= 0 && int(op) < len(opNames) && opNames[op] != "" {
		return opNames[op]
	}
	return fmt.Sprintf("Operation(%d)", int(op))
}

// Resource is what the request addresses. Names are URL-decoded; Snapshot
// is the request's snapshot query value ("" for the base blob).
type Resource struct {
	Account, Container, Blob, Snapshot string
}

// StoredPolicy is a container stored access policy (signed identifier).
// Zero Start/Expiry and empty Permission mean "not specified by the policy".
type StoredPolicy struct {
	ID            string
	Start, Expiry time.Time
	Permission    string
}

// Policies looks up a container's stored policies (nil func → no policies).
type Policies func(container, id string) (StoredPolicy, bool)

// SASRequest is the request facts SAS verification needs.
type SASRequest struct {
	Query    url.Values // the request's decoded query
	Resource Resource
	Op       Operation
	HTTPS    bool
	ClientIP net.IP
	Now      time.Time
}

// Signed-version (sv) boundaries: where the string-to-sign layout or the
// permission rules of a service or account SAS change.
const (
	svFirstService   = "2013-08-15" // oldest service SAS format accepted
	svBlobPrefix     = "2015-02-21" // canonicalizedResource gains "/blob"
	svIPProtocol     = "2015-04-05" // sip, spr signed; first account SAS version
	svBreakDelete    = "2017-07-29" // 'd' also allows Break Lease
	svResourceSigned = "2018-11-09" // sr and snapshot time signed
	svEncScope       = "2020-12-06" // ses signed
)

// sasParamNames are the query parameters that belong to a SAS token. Names
// are matched case-insensitively, and each may appear at most once: a token
// whose meaning depends on which of two values is read is refused.
var sasParamNames = map[string]bool{
	"sv": true, "ss": true, "srt": true, "sr": true, "sp": true, "st": true,
	"se": true, "si": true, "sip": true, "spr": true, "ses": true, "sig": true,
	"rscc": true, "rscd": true, "rsce": true, "rscl": true, "rsct": true,
	// user delegation (unsupported) and other SAS-only names
	"skoid": true, "sktid": true, "skt": true, "ske": true, "sks": true, "skv": true,
	"skdutid": true, "sduoid": true, "saoid": true, "suoid": true, "scid": true,
	"sdd": true, "srh": true, "srq": true,
}

// userDelegationParams mark a user delegation SAS (signed with a user
// delegation key, not the account key).
var userDelegationParams = []string{"skoid", "sktid", "skt", "ske", "sks", "skv"}

// SASParams returns only the parameters of q that belong to a SAS token
// (Blob Batch: a sub-request without a credential of its own is
// authorized by the batch request's SAS).
func SASParams(q url.Values) url.Values {
	out := url.Values{}
	for k, v := range q {
		if sasParamNames[strings.ToLower(k)] {
			out[k] = v
		}
	}
	return out
}

// IsSAS reports whether q carries a SAS (sig present).
func IsSAS(q url.Values) bool {
	for name := range q {
		if strings.EqualFold(name, "sig") {
			return true
		}
	}
	return false
}

// sasParams extracts the SAS parameters of q, lowercased names → value.
func sasParams(q url.Values) (map[string]string, error) {
	p := make(map[string]string)
	for name, vs := range q {
		ln := strings.ToLower(name)
		if !sasParamNames[ln] {
			continue
		}
		if _, dup := p[ln]; dup || len(vs) != 1 {
			return nil, authFailed(fmt.Sprintf("Signature fields not well formed: the SAS parameter '%s' must appear exactly once.", ln))
		}
		p[ln] = vs[0]
	}
	return p, nil
}

func has(p map[string]string, name string) bool {
	_, ok := p[name]
	return ok
}

// VerifySAS checks the service SAS (sr present) or account SAS (ss and srt
// present) in req.Query and returns the account name it authorizes. Any
// failure is a 403 *svcerr.Error:
//
//   - malformed or unsupported token (bad sig, sv, time, sip, spr, ss, srt,
//     sr; user delegation; fields the token's version does not sign),
//     signature mismatch, unknown account, scope that does not fit the
//     addressed resource, unknown or removed stored policy, time window →
//     AuthenticationFailed with an AuthenticationErrorDetail;
//   - client IP outside sip → AuthorizationSourceIPMismatch;
//   - spr=https on plain HTTP → AuthorizationProtocolMismatch;
//   - account SAS whose ss lacks b → AuthorizationServiceMismatch;
//   - account SAS whose srt lacks the operation's type →
//     AuthorizationResourceTypeMismatch;
//   - permission letters do not allow req.Op → AuthorizationPermissionMismatch.
//
// The signature is checked first; no other property of the token is trusted
// before a key reproduced it.
func VerifySAS(req SASRequest, accounts Accounts, policies Policies) (string, error) {
	p, err := sasParams(req.Query)
	if err != nil {
		return "", err
	}
	if !has(p, "sig") {
		return "", authFailed("Signature fields not well formed: the SAS carries no signature (sig).")
	}
	for _, k := range userDelegationParams {
		if has(p, k) {
			return "", authFailed("User delegation SAS (skoid) is not supported by this service; use a service or account SAS signed with the account key.")
		}
	}
	sig, err := base64.StdEncoding.DecodeString(p["sig"])
	if err != nil || len(sig) == 0 {
		return "", authFailed("Signature fields not well formed: the signature (sig) is not valid base64.")
	}
	if !validDate(p["sv"]) {
		return "", authFailed("Signature fields not well formed: the signed version (sv) must be a date of the form YYYY-MM-DD.")
	}
	hasSR, hasSS, hasSRT := has(p, "sr"), has(p, "ss"), has(p, "srt")
	switch {
	case hasSR && (hasSS || hasSRT):
		return "", authFailed("Signature fields not well formed: a SAS cannot carry both sr (service SAS) and ss/srt (account SAS).")
	case hasSR:
		return verifyServiceSAS(req, p, sig, accounts, policies)
	case hasSS && hasSRT:
		return verifyAccountSAS(req, p, sig, accounts)
	default:
		return "", authFailed("Signature fields not well formed: a SAS needs sr (service SAS) or both ss and srt (account SAS).")
	}
}

// lookupSASAccount returns the account the request addresses.
func lookupSASAccount(accounts Accounts, name string) (*Account, error) {
	if name == "" || accounts == nil {
		return nil, authFailed("The request does not address an account known to this service.")
	}
	acct, ok := accounts.Lookup(name)
	if !ok || len(acct.Keys) == 0 {
		return nil, authFailed(fmt.Sprintf("The account %q is not known to this service.", name))
	}
	return acct, nil
}

func signatureMismatch(sts string) error {
	return authFailed("Signature did not match. String to sign used was " + sts)
}

// ---- service SAS -------------------------------------------------------

func verifyServiceSAS(req SASRequest, p map[string]string, sig []byte, accounts Accounts, policies Policies) (string, error) {
	sv, sr, res := p["sv"], p["sr"], req.Resource
	if sv < svFirstService {
		return "", authFailed(fmt.Sprintf("The signed version '%s' is not supported for a service SAS; use %s or later.", sv, svFirstService))
	}
	switch sr {
	case "c":
		if res.Container == "" {
			return "", authFailed("A container SAS (sr=c) cannot authorize a request that addresses no container.")
		}
	case "b":
		if res.Container == "" || res.Blob == "" {
			return "", authFailed("A blob SAS (sr=b) can only authorize a request that addresses its blob.")
		}
	case "bs":
		if sv < svResourceSigned {
			return "", authFailed(fmt.Sprintf("Signature fields not well formed: sr=bs requires signed version %s or later.", svResourceSigned))
		}
		if res.Container == "" || res.Blob == "" || res.Snapshot == "" {
			return "", authFailed("A snapshot SAS (sr=bs) can only authorize a request that addresses its blob snapshot.")
		}
	default:
		return "", authFailed(fmt.Sprintf("Signature fields not well formed: signed resource '%s' is not supported (use c, b or bs).", sr))
	}
	// Fields the token's version does not sign would be unauthenticated
	// restrictions; such a token is refused rather than half-honoured.
	if sv < svIPProtocol && (has(p, "sip") || has(p, "spr")) {
		return "", authFailed(fmt.Sprintf("Signature fields not well formed: sip and spr are not part of a SAS with signed version %s.", sv))
	}
	if sv < svEncScope && has(p, "ses") {
		return "", authFailed(fmt.Sprintf("Signature fields not well formed: ses is not part of a SAS with signed version %s.", sv))
	}
	acct, err := lookupSASAccount(accounts, res.Account)
	if err != nil {
		return "", err
	}
	sts := serviceStringToSign(p, res, acct.Name)
	if !matches(acct.Keys, sts, sig) {
		return "", signatureMismatch(sts)
	}

	// The signature is authentic from here on.
	perm, win, err := applyPolicy(p, res.Container, policies)
	if err != nil {
		return "", err
	}
	if err := win.check(req.Now); err != nil {
		return "", err
	}
	if err := checkSourceIP(p["sip"], req.ClientIP); err != nil {
		return "", err
	}
	if err := checkProtocol(p["spr"], req.HTTPS); err != nil {
		return "", err
	}
	if err := servicePermits(req.Op, sr, perm, sv); err != nil {
		return "", err
	}
	return acct.Name, nil
}

// serviceCanonicalResource is /blob/<account>/<container>[/<blob>], names
// decoded, without the /blob prefix before 2015-02-21.
func serviceCanonicalResource(p map[string]string, res Resource, account string) string {
	var b strings.Builder
	if p["sv"] >= svBlobPrefix {
		b.WriteString("/blob")
	}
	b.WriteByte('/')
	b.WriteString(account)
	b.WriteByte('/')
	b.WriteString(res.Container)
	if p["sr"] != "c" {
		b.WriteByte('/')
		b.WriteString(res.Blob)
	}
	return b.String()
}

// serviceStringToSign builds the service SAS string-to-sign for the token's
// version (Create a service SAS): fields joined by '\n', no trailing newline,
// values exactly as sent.
func serviceStringToSign(p map[string]string, res Resource, account string) string {
	sv := p["sv"]
	fields := []string{p["sp"], p["st"], p["se"], serviceCanonicalResource(p, res, account), p["si"]}
	if sv >= svIPProtocol {
		fields = append(fields, p["sip"], p["spr"])
	}
	fields = append(fields, sv)
	if sv >= svResourceSigned {
		snapshot := ""
		if p["sr"] == "bs" {
			snapshot = res.Snapshot
		}
		fields = append(fields, p["sr"], snapshot)
	}
	if sv >= svEncScope {
		fields = append(fields, p["ses"])
	}
	fields = append(fields, p["rscc"], p["rscd"], p["rsce"], p["rscl"], p["rsct"])
	return strings.Join(fields, "\n")
}

// applyPolicy merges a stored access policy (si) into the token's
// permissions and validity window. A field present both in the token and in
// the policy is refused, as Azure does.
func applyPolicy(p map[string]string, container string, policies Policies) (string, window, error) {
	sp, st, se := p["sp"], p["st"], p["se"]
	var w window
	var err error
	if st != "" {
		if w.start, err = parseSASTime("st", st); err != nil {
			return "", w, err
		}
		w.hasStart = true
	}
	if se != "" {
		if w.expiry, err = parseSASTime("se", se); err != nil {
			return "", w, err
		}
		w.hasExpiry = true
	}
	if si := p["si"]; si != "" {
		var pol StoredPolicy
		ok := false
		if policies != nil {
			pol, ok = policies(container, si)
		}
		if !ok {
			return "", w, authFailed(fmt.Sprintf("The signed identifier '%s' does not match any stored access policy on container '%s'.", si, container))
		}
		dup := func(field string) error {
			return authFailed(fmt.Sprintf("Signature fields not well formed: %s is specified both in the SAS and in stored access policy '%s'.", field, si))
		}
		if sp != "" && pol.Permission != "" {
			return "", w, dup("the signed permission (sp)")
		}
		if st != "" && !pol.Start.IsZero() {
			return "", w, dup("the signed start (st)")
		}
		if se != "" && !pol.Expiry.IsZero() {
			return "", w, dup("the signed expiry (se)")
		}
		if sp == "" {
			sp = pol.Permission
		}
		if !w.hasStart && !pol.Start.IsZero() {
			w.start, w.hasStart = pol.Start, true
		}
		if !w.hasExpiry && !pol.Expiry.IsZero() {
			w.expiry, w.hasExpiry = pol.Expiry, true
		}
	}
	if !w.hasExpiry {
		return "", w, authFailed("Signature fields not well formed: the signed expiry time (se) must be specified in the SAS or in its stored access policy.")
	}
	if sp == "" {
		return "", w, authFailed("Signature fields not well formed: the signed permissions (sp) must be specified in the SAS or in its stored access policy.")
	}
	return sp, w, nil
}

// ---- account SAS -------------------------------------------------------

func verifyAccountSAS(req SASRequest, p map[string]string, sig []byte, accounts Accounts) (string, error) {
	sv := p["sv"]
	if sv < svIPProtocol {
		return "", authFailed(fmt.Sprintf("The signed version '%s' is not supported for an account SAS; use %s or later.", sv, svIPProtocol))
	}
	if sv < svEncScope && has(p, "ses") {
		return "", authFailed(fmt.Sprintf("Signature fields not well formed: ses is not part of a SAS with signed version %s.", sv))
	}
	acct, err := lookupSASAccount(accounts, req.Resource.Account)
	if err != nil {
		return "", err
	}
	sts := accountStringToSign(p, acct.Name)
	if !matches(acct.Keys, sts, sig) {
		return "", signatureMismatch(sts)
	}

	// The signature is authentic from here on.
	ss, srt, sp := p["ss"], p["srt"], p["sp"]
	if !onlyLetters(ss, "bfqt") {
		return "", authFailed(fmt.Sprintf("Signature fields not well formed: signed services '%s' must be a non-empty subset of b, f, q, t.", ss))
	}
	if !onlyLetters(srt, "sco") {
		return "", authFailed(fmt.Sprintf("Signature fields not well formed: signed resource types '%s' must be a non-empty subset of s, c, o.", srt))
	}
	if sp == "" {
		return "", authFailed("Signature fields not well formed: the signed permissions (sp) must be specified.")
	}
	var w window
	if st := p["st"]; st != "" {
		if w.start, err = parseSASTime("st", st); err != nil {
			return "", err
		}
		w.hasStart = true
	}
	se := p["se"]
	if se == "" {
		return "", authFailed("Signature fields not well formed: the signed expiry time (se) must be specified.")
	}
	if w.expiry, err = parseSASTime("se", se); err != nil {
		return "", err
	}
	w.hasExpiry = true
	if err := w.check(req.Now); err != nil {
		return "", err
	}
	if err := checkSourceIP(p["sip"], req.ClientIP); err != nil {
		return "", err
	}
	if err := checkProtocol(p["spr"], req.HTTPS); err != nil {
		return "", err
	}
	if !strings.Contains(ss, "b") {
		return "", svcerr.New(svcerr.AuthorizationServiceMismatch)
	}
	if err := accountPermits(req.Op, srt, sp, sv); err != nil {
		return "", err
	}
	return acct.Name, nil
}

// accountStringToSign builds the account SAS string-to-sign (Create an
// account SAS): every field followed by '\n'.
func accountStringToSign(p map[string]string, account string) string {
	fields := []string{account, p["sp"], p["ss"], p["srt"], p["st"], p["se"], p["sip"], p["spr"], p["sv"]}
	if p["sv"] >= svEncScope {
		fields = append(fields, p["ses"])
	}
	return strings.Join(fields, "\n") + "\n"
}

func onlyLetters(s, allowed string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune(allowed, r) {
			return false
		}
	}
	return true
}

// ---- times, IP, protocol -----------------------------------------------

// sasTimeRE accepts YYYY-MM-DD, YYYY-MM-DDThh:mmZ and YYYY-MM-DDThh:mm:ssZ
// with up to 7 fractional digits, always UTC.
var sasTimeRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,7})?)?Z)?$`)

var dateRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

func validDate(s string) bool {
	if !dateRE.MatchString(s) {
		return false
	}
	_, err := time.Parse("2006-01-02", s)
	return err == nil
}

func parseSASTime(field, v string) (time.Time, error) {
	m := sasTimeRE.FindStringSubmatch(v)
	if m != nil {
		layout := "2006-01-02"
		switch {
		case m[2] != "":
			// time.Parse accepts the fractional seconds after "05".
			layout = "2006-01-02T15:04:05Z"
		case m[1] != "":
			layout = "2006-01-02T15:04Z"
		}
		if t, err := time.Parse(layout, v); err == nil {
			return t, nil
		}
	}
	return time.Time{}, authFailed(fmt.Sprintf("Signature fields not well formed: %s '%s' is not a valid ISO 8601 UTC time (YYYY-MM-DD, YYYY-MM-DDThh:mmZ or YYYY-MM-DDThh:mm:ss[.fffffff]Z).", field, v))
}

// window is a token's validity period after applying a stored policy.
type window struct {
	start, expiry       time.Time
	hasStart, hasExpiry bool
}

// check enforces start ≤ now ≤ expiry, both ends inclusive. Without a start
// time the service takes the current time as the start, so an expired
// start-less token reports "expiry must be after start", as Azure does.
func (w window) check(now time.Time) error {
	start := now
	if w.hasStart {
		start = w.start
	}
	if w.expiry.Before(start) {
		return authFailed(fmt.Sprintf("Signed expiry time [%s] must be after signed start time [%s]", httpTime(w.expiry), httpTime(start)))
	}
	if now.Before(start) || now.After(w.expiry) {
		return authFailed(fmt.Sprintf("Signature not valid in the specified time frame: Start [%s] - Expiry [%s] - Current [%s]", httpTime(start), httpTime(w.expiry), httpTime(now)))
	}
	return nil
}

func httpTime(t time.Time) string { return t.UTC().Format(http.TimeFormat) }

// checkSourceIP enforces sip: one address or an inclusive range "a-b".
func checkSourceIP(sip string, client net.IP) error {
	if sip == "" {
		return nil
	}
	lo, hi, ok := parseIPRange(sip)
	if !ok {
		return authFailed(fmt.Sprintf("Signature fields not well formed: signed IP '%s' must be an IP address or an inclusive range a-b.", sip))
	}
	c := normIP(client)
	if c == nil || len(c) != len(lo) || bytes.Compare(c, lo) < 0 || bytes.Compare(c, hi) > 0 {
		if client == nil {
			return svcerr.New(svcerr.AuthorizationSourceIPMismatch)
		}
		// Azure names the address it refused.
		return svcerr.Newf(svcerr.AuthorizationSourceIPMismatch, "This request is not authorized to perform this operation using this source IP %s.", client)
	}
	return nil
}

func parseIPRange(s string) (lo, hi net.IP, ok bool) {
	a, b, isRange := strings.Cut(s, "-")
	lo = normIP(net.ParseIP(a))
	hi = lo
	if isRange {
		hi = normIP(net.ParseIP(b))
	}
	if lo == nil || hi == nil || len(lo) != len(hi) || bytes.Compare(lo, hi) > 0 {
		return nil, nil, false
	}
	return lo, hi, true
}

// normIP returns the 4-byte form of IPv4 (and IPv4-mapped) addresses and the
// 16-byte form of IPv6 ones; nil for invalid input.
func normIP(ip net.IP) net.IP {
	if v4 := ip.To4(); v4 != nil {
		return v4
	}
	if len(ip) == net.IPv6len {
		return ip
	}
	return nil
}

// checkProtocol enforces spr: "https" or "https,http" (the default).
func checkProtocol(spr string, https bool) error {
	switch spr {
	case "", "https,http":
		return nil
	case "https":
		if !https {
			return svcerr.New(svcerr.AuthorizationProtocolMismatch)
		}
		return nil
	default:
		return authFailed(fmt.Sprintf("Signature fields not well formed: signed protocol '%s' must be https or https,http.", spr))
	}
}

// ---- permissions ---------------------------------------------------------

// opRule is one row of the operation → SAS permission table (Create a
// service SAS: "Permissions for a blob" / "for a container"; Create an
// account SAS: the permission and resource type lists).
type opRule struct {
	// svc lists the service SAS letters any one of which allows the
	// operation; "" means a service SAS can never perform it.
	svc string
	// containerSAS: only a container SAS (sr=c) may perform it (List Blobs).
	containerSAS bool
	// srt is the account SAS resource type the operation needs; 0 means
	// any type.
	srt byte
	// acct lists the account SAS letters any one of which allows the
	// operation ("" → never by account SAS); acctAll requires all of them.
	acct    string
	acctAll bool
	// breakOp: from sv 2017-07-29, 'd' also allows it.
	breakOp bool
}

var opRules = map[Operation]opRule{
	OpListContainers:       {srt: 's', acct: "l"},
	OpCreateContainer:      {srt: 'c', acct: "cw"},
	OpGetContainer:         {srt: 'c', acct: "r"},
	OpSetContainerMetadata: {srt: 'c', acct: "w"},
	OpContainerACL:         {srt: 'c'}, // account key only
	OpDeleteContainer:      {srt: 'c', acct: "d"},
	OpLeaseContainer:       {srt: 'c', acct: "w"},
	OpBreakContainerLease:  {srt: 'c', acct: "w", breakOp: true},
	OpListBlobs:            {svc: "l", containerSAS: true, srt: 'c', acct: "l"},
	OpReadBlob:             {svc: "r", srt: 'o', acct: "r"},
	OpCreateBlob:           {svc: "cw", srt: 'o', acct: "cw"},
	OpOverwriteBlob:        {svc: "w", srt: 'o', acct: "w"},
	OpPutBlock:             {svc: "w", srt: 'o', acct: "w"},
	OpAppendBlock:          {svc: "aw", srt: 'o', acct: "aw"},
	OpWriteBlobProps:       {svc: "w", srt: 'o', acct: "w"},
	OpSnapshotBlob:         {svc: "cw", srt: 'o', acct: "cw"},
	OpLeaseBlob:            {svc: "w", srt: 'o', acct: "w"},
	OpBreakBlobLease:       {svc: "w", srt: 'o', acct: "w", breakOp: true},
	OpDeleteBlob:           {svc: "d", srt: 'o', acct: "d"},
	OpBlobTags:             {svc: "t", srt: 'o', acct: "t"},
	OpServiceProperties:    {srt: 's', acct: "rw", acctAll: true},
	OpGetServiceProperties: {srt: 's', acct: "r"},
	OpSetServiceProperties: {srt: 's', acct: "w"},
	OpFindBlobsContainer:   {svc: "f", containerSAS: true, srt: 'c', acct: "f"},
	OpFindBlobsService:     {srt: 's', acct: "f"},
	// Deleting a version needs x (delete version), not d.
	OpDeleteBlobVersion: {svc: "x", srt: 'o', acct: "x"},
	// Delete Blob deletetype=permanent needs y (permanent delete), which
	// neither d nor x implies.
	OpPermanentDeleteBlob: {svc: "y", srt: 'o', acct: "y"},
	// Blob Batch: its sub-requests are Delete Blob (d) and Set Blob Tier
	// (w), each checked against its own permission; a token that grants
	// neither can run no sub-request. At service scope only an account SAS
	// reaches it (a container SAS names no container there); at container
	// scope a container SAS does.
	OpBlobBatch: {svc: "dw", containerSAS: true, acct: "dw"},
	// Get Account Information: any SAS that reaches the account; a service
	// SAS needs r (Azurite), an account SAS any resource type and any of
	// these letters.
	OpAccountInfo: {svc: "r", acct: "rcdlpuw"},
}

func letters(base string, breakOp bool, sv string) string {
	if breakOp && sv >= svBreakDelete {
		return base + "d"
	}
	return base
}

// servicePermits checks a service SAS's permissions for op. Letter order is
// not enforced (Azure documents a fixed order, but tools send others);
// unknown letters grant nothing.
func servicePermits(op Operation, sr, perm, sv string) error {
	r, ok := opRules[op]
	if !ok || r.svc == "" || (r.containerSAS && sr != "c") {
		return svcerr.New(svcerr.AuthorizationPermissionMismatch)
	}
	if !strings.ContainsAny(perm, letters(r.svc, r.breakOp, sv)) {
		return svcerr.New(svcerr.AuthorizationPermissionMismatch)
	}
	return nil
}

// accountPermits checks an account SAS's resource types and permissions.
func accountPermits(op Operation, srt, perm, sv string) error {
	r, ok := opRules[op]
	if !ok {
		return svcerr.New(svcerr.AuthorizationPermissionMismatch)
	}
	if r.srt != 0 && !strings.ContainsRune(srt, rune(r.srt)) {
		return svcerr.New(svcerr.AuthorizationResourceTypeMismatch)
	}
	need := letters(r.acct, r.breakOp, sv)
	switch {
	case need == "":
		return svcerr.New(svcerr.AuthorizationPermissionMismatch)
	case r.acctAll:
		for _, c := range need {
			if !strings.ContainsRune(perm, c) {
				return svcerr.New(svcerr.AuthorizationPermissionMismatch)
			}
		}
	case !strings.ContainsAny(perm, need):
		return svcerr.New(svcerr.AuthorizationPermissionMismatch)
	}
	return nil
}

// ---- response overrides --------------------------------------------------

var responseOverrideHeaders = [...][2]string{
	{"rscc", "Cache-Control"},
	{"rscd", "Content-Disposition"},
	{"rsce", "Content-Encoding"},
	{"rscl", "Content-Language"},
	{"rsct", "Content-Type"},
}

// ResponseOverrides returns the rscc/rscd/rsce/rscl/rsct header overrides
// (Cache-Control, Content-Disposition, Content-Encoding, Content-Language,
// Content-Type) a verified service SAS asks for on reads. It returns nil for
// anything that is not a service SAS: an account SAS does not sign these
// parameters, so honouring them would let anyone rewrite response headers.
// Values containing control characters are dropped.
func ResponseOverrides(q url.Values) map[string]string {
	p, err := sasParams(q)
	if err != nil || !has(p, "sig") || !has(p, "sr") || has(p, "ss") || has(p, "srt") {
		return nil
	}
	var out map[string]string
	for _, h := range responseOverrideHeaders {
		v := p[h[0]]
		if v == "" || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(responseOverrideHeaders))
		}
		out[h[1]] = v
	}
	return out
}
