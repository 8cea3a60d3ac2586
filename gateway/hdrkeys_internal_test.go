package gateway

import (
	"net/http"
	"testing"
)

// sdkPutHeader is the header of an azblob Put Blob (canonicalized, as Go's
// server hands it over), with If-Match and a lease id.
func sdkPutHeader() http.Header {
	h := http.Header{}
	for k, v := range map[string]string{
		"User-Agent": "azsdk-go-azblob/v1.6.0 (go1.24; linux)", "Accept": "application/xml",
		"X-Ms-Client-Request-Id": "0b4c6a0e-5d5e-4b8a-9e61-0d2c3f1f2a7b", "X-Ms-Version": "2025-11-05",
		"X-Ms-Date": "Tue, 01 Dec 2026 20:00:00 GMT", "Authorization": "SharedKey devstoreaccount1:c2ln",
		"Content-Length": "4096", "Content-Type": "application/octet-stream", "X-Ms-Blob-Type": "BlockBlob",
		"If-Match": `"0x8DC0000000000001"`, "X-Ms-Lease-Id": "5e3d3d3a-1c1b-4f4e-9a9a-0a0b0c0d0e0f",
	} {
		h.Set(k, v)
	}
	return h
}

// TestHotHeaderParsingAllocs: reading a Put Blob's headers allocates only
// what it returns. Before, every lower-case name looked up was
// canonicalized again (a copy per lookup, 7 for these), parseMetadata
// lowercased every header of the request to find the x-ms-meta-* ones (11
// copies here), the ETag list was split into a slice of parts first, and
// a lease id already in its normal form was copied.
func TestHotHeaderParsingAllocs(t *testing.T) {
	h := sdkPutHeader()
	for _, tt := range []struct {
		name string
		want float64
		fn   func()
	}{
		{"parseMetadata", 1, func() { // the map it returns
			if m, err := parseMetadata(h, nil); err != nil || len(m) != 0 {
				t.Fatalf("parseMetadata: %v %v", m, err)
			}
		}},
		{"parseBlobProps", 0, func() {
			if p, err := parseBlobProps(h, true); err != nil || p.ContentType != "application/octet-stream" {
				t.Fatalf("parseBlobProps: %+v %v", p, err)
			}
		}},
		{"parseConditions", 1, func() { // the If-Match list
			if c, err := parseConditions(h); err != nil || len(c.IfMatch) != 1 {
				t.Fatalf("parseConditions: %+v %v", c, err)
			}
		}},
		{"leaseIDHeader", 0, func() {
			if id, err := leaseIDHeader(h); err != nil || id == "" {
				t.Fatalf("leaseIDHeader: %q %v", id, err)
			}
		}},
		{"parseTierHeader", 0, func() { parseTierHeader(h, "BlockBlob", 0) }},
		{"parseTagsHeader", 0, func() { parseTagsHeader(h) }},
		{"blob type", 0, func() { hdrGet(h, "x-ms-blob-type") }},
	} {
		if n := testing.AllocsPerRun(100, tt.fn); n > tt.want {
			t.Errorf("%s: %.0f allocations, want at most %.0f", tt.name, n, tt.want)
		}
	}
}

// TestHdrKey: hdrKey is http.CanonicalHeaderKey for the names it knows
// and for any other.
func TestHdrKey(t *testing.T) {
	for _, n := range append(hotHeaderNames, "x-ms-meta-abc", "If-Match", "content-md5", "") {
		if got, want := hdrKey(n), http.CanonicalHeaderKey(n); got != want {
			t.Errorf("hdrKey(%q) = %q, want %q", n, got, want)
		}
	}
	for _, n := range hotHeaderNames {
		if a := testing.AllocsPerRun(10, func() { hdrKey(n) }); a != 0 {
			t.Errorf("hdrKey(%q): %.0f allocations", n, a)
		}
	}
}
