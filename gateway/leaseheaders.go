package gateway

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

// The lease headers are parsed here, at the edge; leasedb takes the typed
// leasedb.LeaseRequest and normalized lease ids.

// Header names of the lease request (Lease Blob, Lease Container).
const (
	hdrLeaseAction      = "x-ms-lease-action"
	hdrLeaseID          = "x-ms-lease-id"
	hdrProposedLeaseID  = "x-ms-proposed-lease-id"
	hdrLeaseDuration    = "x-ms-lease-duration"
	hdrLeaseBreakPeriod = "x-ms-lease-break-period"
)

// leaseIDHeader reads and normalizes x-ms-lease-id, "" when absent: the
// lease a read or write names.
func leaseIDHeader(h http.Header) (string, error) {
	return parseLeaseID(hdrLeaseID, leaseHeader(h, hdrLeaseID), false)
}

// leaseHeader is the value of lease header name: a header sent on several
// lines is their values joined by "," (how the request is signed and how
// Azure reads it), so two lease ids are no GUID and are refused, never
// the first taken for the lease the request names.
func leaseHeader(h http.Header, name string) string {
	v := h[hdrKey(name)]
	if len(v) > 1 {
		return strings.Join(v, ",")
	}
	return hdrGet(h, name)
}

// parseLeaseRequest validates the raw header values of a Lease Blob /
// Lease Container request; "" means the header was absent. Failures are 400
// MissingRequiredHeader or InvalidHeaderValue naming the header.
//
// Decisions [INF]:
//   - An empty header value counts as absent.
//   - The action is matched case-insensitively.
//   - Each header is parsed only for the actions that use it (x-ms-lease-id:
//     renew, change, release; x-ms-proposed-lease-id: acquire, change;
//     x-ms-lease-duration: acquire; x-ms-lease-break-period: break) and is
//     ignored, whatever its value, on the other actions.
//   - Checks run in the order action, x-ms-lease-id, x-ms-proposed-lease-id,
//     x-ms-lease-duration, x-ms-lease-break-period; the first failure wins.
//   - x-ms-lease-break-period must be 0..60; an explicit "-1" is rejected (the
//     SDKs omit the header to break naturally).
//   - Integers are parsed with strconv.Atoi (optional sign, no spaces).
func parseLeaseRequest(action, leaseID, proposedID, duration, breakPeriod string) (leasedb.LeaseRequest, error) {
	if action == "" {
		return leasedb.LeaseRequest{}, svcerr.Header(svcerr.MissingRequiredHeader, hdrLeaseAction, "")
	}
	req := leasedb.LeaseRequest{Action: leasedb.LeaseAction(strings.ToLower(action)), BreakPeriod: -1}
	switch req.Action {
	case leasedb.LeaseAcquire, leasedb.LeaseRenew, leasedb.LeaseChange, leasedb.LeaseRelease, leasedb.LeaseBreak:
	default:
		return leasedb.LeaseRequest{}, svcerr.Header(svcerr.InvalidHeaderValue, hdrLeaseAction, action)
	}

	var err error
	switch req.Action {
	case leasedb.LeaseRenew, leasedb.LeaseChange, leasedb.LeaseRelease:
		if req.ID, err = parseLeaseID(hdrLeaseID, leaseID, true); err != nil {
			return leasedb.LeaseRequest{}, err
		}
	}
	switch req.Action {
	case leasedb.LeaseAcquire, leasedb.LeaseChange:
		required := req.Action == leasedb.LeaseChange
		if req.ProposedID, err = parseLeaseID(hdrProposedLeaseID, proposedID, required); err != nil {
			return leasedb.LeaseRequest{}, err
		}
	}
	switch req.Action {
	case leasedb.LeaseAcquire:
		if duration == "" {
			return leasedb.LeaseRequest{}, svcerr.Header(svcerr.MissingRequiredHeader, hdrLeaseDuration, "")
		}
		d, err := strconv.Atoi(duration)
		if err != nil || !leasedb.ValidLeaseDuration(d) {
			return leasedb.LeaseRequest{}, svcerr.Header(svcerr.InvalidHeaderValue, hdrLeaseDuration, duration)
		}
		req.Duration = d
	case leasedb.LeaseBreak:
		if breakPeriod != "" {
			p, err := strconv.Atoi(breakPeriod)
			if err != nil || p < 0 || p > 60 {
				return leasedb.LeaseRequest{}, svcerr.Header(svcerr.InvalidHeaderValue, hdrLeaseBreakPeriod, breakPeriod)
			}
			req.BreakPeriod = p
		}
	}
	return req, nil
}

// parseLeaseID normalizes the lease id value of header name: 400
// InvalidHeaderValue when it is not a GUID, MissingRequiredHeader when it
// is required and absent. The one lease-id parser of the gateway.
func parseLeaseID(name, value string, required bool) (string, error) {
	if value == "" {
		if required {
			return "", svcerr.Header(svcerr.MissingRequiredHeader, name, "")
		}
		return "", nil
	}
	id, ok := normalizeLeaseID(value)
	if !ok {
		return "", svcerr.Header(svcerr.InvalidHeaderValue, name, value)
	}
	return id, nil
}

// normalizeLeaseID parses a lease id in any of the .NET Guid text forms the
// service accepts and returns it lowercase and hyphenated
// (ca761232-ed42-11ce-bacd-00aa0057b223):
//
//	N  ca761232ed4211cebacd00aa0057b223
//	D  ca761232-ed42-11ce-bacd-00aa0057b223
//	B  {ca761232-ed42-11ce-bacd-00aa0057b223}
//	P  (ca761232-ed42-11ce-bacd-00aa0057b223)
//
// Hex digits are case-insensitive and surrounding spaces are ignored, as
// .NET's Guid.Parse does. Decision [INF]: the rarely used X form
// ({0x...,0x...,{0x..,...}}) and "urn:uuid:" are not accepted; no SDK sends
// them.
func normalizeLeaseID(s string) (string, bool) {
	s = strings.TrimSpace(s)
	switch {
	case len(s) == 32:
		return hexGUID(s)
	case len(s) == 36:
		return hyphenatedGUID(s)
	case len(s) == 38 && (s[0] == '{' && s[37] == '}' || s[0] == '(' && s[37] == ')'):
		return hyphenatedGUID(s[1:37])
	}
	return "", false
}

// hyphenatedGUID parses the 8-4-4-4-12 form.
func hyphenatedGUID(s string) (string, bool) {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return "", false
	}
	if lowerHexGUID(s) {
		// Already the normal form (what the SDKs send): no copy.
		return s, true
	}
	return hexGUID(s[:8] + s[9:13] + s[14:18] + s[19:23] + s[24:])
}

// lowerHexGUID reports whether the 8-4-4-4-12 form s has only lowercase
// hex digits between its hyphens.
func lowerHexGUID(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case i == 8 || i == 13 || i == 18 || i == 23:
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f':
		default:
			return false
		}
	}
	return true
}

// hexGUID formats 32 hex digits as a lowercase hyphenated GUID.
func hexGUID(s string) (string, bool) {
	if len(s) != 32 {
		return "", false
	}
	var b [36]byte
	j := 0
	for i := 0; i < 32; i++ {
		if i == 8 || i == 12 || i == 16 || i == 20 {
			b[j] = '-'
			j++
		}
		c := s[i]
		switch {
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f':
		case 'A' <= c && c <= 'F':
			c += 'a' - 'A'
		default:
			return "", false
		}
		b[j] = c
		j++
	}
	return string(b[:]), true
}
