package gateway

import "net/http"

// The gateway names request headers in Azure's lower-case wire spelling
// (x-ms-lease-id, x-ms-if-tags), which is also how its errors quote them;
// Go's server stores them canonicalized (X-Ms-Lease-Id). h.Get with the
// lower-case name canonicalizes it again on every call, and that allocates:
// about ten times per Put Blob. hdrKey answers the names read on the
// small-request paths from a table built once.

// hotHeaderNames are the lower-case header names hdrKey knows.
var hotHeaderNames = []string{
	"x-ms-blob-type", "x-ms-access-tier", "x-ms-tags", "x-ms-if-tags",
	hdrLeaseAction, hdrLeaseID, hdrProposedLeaseID, hdrLeaseDuration, hdrLeaseBreakPeriod,
	"x-ms-blob-content-type", "x-ms-blob-content-encoding", "x-ms-blob-content-language",
	"x-ms-blob-content-disposition", "x-ms-blob-cache-control",
	"x-ms-blob-if-match", "x-ms-blob-if-none-match", "x-ms-blob-if-modified-since", "x-ms-blob-if-unmodified-since",
	"x-ms-source-if-match", "x-ms-source-if-none-match", "x-ms-source-if-modified-since",
	"x-ms-source-if-unmodified-since", "x-ms-source-if-tags",
}

// canonicalNames maps each of hotHeaderNames to its canonical form; it is
// only read after init, so lookups need no lock.
var canonicalNames = func() map[string]string {
	m := make(map[string]string, len(hotHeaderNames))
	for _, n := range hotHeaderNames {
		m[n] = http.CanonicalHeaderKey(n)
	}
	return m
}()

// hdrKey is http.CanonicalHeaderKey(name), without allocating for a name
// of hotHeaderNames or one already canonical.
func hdrKey(name string) string {
	if c, ok := canonicalNames[name]; ok {
		return c
	}
	return http.CanonicalHeaderKey(name)
}

// hdrGet is h.Get(name) through hdrKey.
func hdrGet(h http.Header, name string) string {
	if v := h[hdrKey(name)]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// headerVals sets response headers whose names are canonical from one
// backing array of values: h.Set allocates a one-element slice per header,
// and a Get Blob answer carries a dozen or more. Each header gets a
// full slice expression of the array, so appending to one (h.Add) copies it
// and never writes into the next.
type headerVals struct {
	h    http.Header
	vals []string
}

// newHeaderVals prepares n values; more still work (a new array).
func newHeaderVals(h http.Header, n int) headerVals {
	return headerVals{h: h, vals: make([]string, 0, n)}
}

// set is h.Set(name, v) for a canonical name.
func (hv *headerVals) set(name, v string) {
	hv.vals = append(hv.vals, v)
	n := len(hv.vals)
	hv.h[name] = hv.vals[n-1 : n : n]
}
