package gateway

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
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

// TestResponseHeaderAllocs: the headers of a Get Blob answer take one
// backing array of values, not one slice each (15 allocations → 5 for a
// block blob's property headers, the map's own growth and the two times
// included; 5 → 1 for the headers of every answer); every name is
// canonical, so each is what h.Set gives.
func TestResponseHeaderAllocs(t *testing.T) {
	lm := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	b := &leasedb.Blob{Type: "BlockBlob", ETag: `"0x8DC0000000000001"`, LastModified: lm, Created: lm, Size: 4096,
		Props: leasedb.Props{ContentType: "application/octet-stream"}}
	full := &leasedb.Blob{Type: "AppendBlob", ETag: `"0x1"`, LastModified: lm, Created: lm, VersionID: "v",
		Props:    leasedb.Props{ContentEncoding: "gzip", ContentLanguage: "en", ContentDisposition: "inline", CacheControl: "no-cache"},
		Lease:    leasedb.Lease{State: "leased", Duration: -1, ID: "x"},
		Copy:     &leasedb.CopyInfo{ID: "c", Source: "s", Status: "success", Progress: "1/1", Completed: lm, Incremental: true},
		Metadata: map[string]string{"k": "v"}}
	for _, bb := range []*leasedb.Blob{b, full} {
		h := http.Header{}
		writeBlobHeaders(h, bb, lm)
		for k := range h {
			if c := http.CanonicalHeaderKey(k); c != k && !strings.HasPrefix(k, metaPrefix) {
				t.Errorf("writeBlobHeaders: header %q, want the canonical %q", k, c)
			}
		}
	}
	size := func(h http.Header) {
		// A map already as large as an answer's, so its growth is not
		// counted.
		for k := range h {
			delete(h, k)
		}
	}
	h := make(http.Header, 32)
	if n := testing.AllocsPerRun(100, func() { size(h); writeBlobHeaders(h, b, lm) }); n > 5 {
		t.Errorf("writeBlobHeaders: %.0f allocations, want at most 5", n)
	}
	if n := testing.AllocsPerRun(100, func() {
		size(h)
		hv := newHeaderVals(h, 5)
		for _, k := range []string{"X-Ms-Request-Id", "Server", "Date", "X-Ms-Version", "X-Ms-Client-Request-Id"} {
			hv.set(k, "v")
		}
	}); n > 1 {
		t.Errorf("headerVals: %.0f allocations for 5 headers, want 1", n)
	}
	// A header appended to later must not write into its neighbour's value.
	hv := newHeaderVals(http.Header{}, 2)
	hv.set("A", "1")
	hv.set("B", "2")
	hv.h.Add("A", "3")
	if got := hv.h["B"]; len(got) != 1 || got[0] != "2" {
		t.Errorf("after Add to A, B = %q, want [2]", got)
	}
}

// TestHTTPTime: httpTime is the formatted time, from the Date cache or
// not, zero time and other zones included; a time in the Date header's
// second costs no allocation (a Put Blob's Last-Modified).
func TestHTTPTime(t *testing.T) {
	now := time.Now()
	dateHeader(now)
	for _, tm := range []time.Time{now, now.Add(-time.Second), now.Add(time.Hour).In(time.FixedZone("X", 7200)), {},
		time.Date(2026, 12, 1, 15, 4, 5, 999999999, time.UTC)} {
		if got, want := httpTime(tm), tm.UTC().Format(http.TimeFormat); got != want {
			t.Errorf("httpTime(%v) = %q, want %q", tm, got, want)
		}
	}
	same := time.Unix(now.Unix(), 0)
	if lastDate.Load().sec == same.Unix() {
		if n := testing.AllocsPerRun(100, func() { httpTime(same) }); n != 0 {
			t.Errorf("httpTime in the Date header's second: %.0f allocations, want 0", n)
		}
	}
}
