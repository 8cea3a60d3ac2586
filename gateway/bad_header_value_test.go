package gateway_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestBadHeaderValuesRefused: headers the sweep (TestBadInputSweep) found
// read loosely or not at all: a value outside their form is 400
// InvalidHeaderValue, and the blob is left as it was.
func TestBadHeaderValuesRefused(t *testing.T) {
	b := setup(t, "sqlite+disk")
	createContainers(t, b.client, "hvc")
	resp, _ := b.do(t, "PUT", "hvc/src", "source bytes", map[string]string{"x-ms-blob-type": "BlockBlob"})
	wantStatus(t, resp, http.StatusCreated, "", "source")
	resp, _ = b.do(t, "PUT", "hvc/dst", "destination bytes", map[string]string{"x-ms-blob-type": "BlockBlob"})
	wantStatus(t, resp, http.StatusCreated, "", "destination")
	before, beforeBody := b.do(t, "GET", "hvc/dst", "", nil)
	src := b.serviceURL(0) + "hvc/src"
	for _, c := range []struct {
		what, method, path string
		hdr                map[string]string
	}{
		{"Copy Blob x-ms-requires-sync", "PUT", "hvc/dst", map[string]string{"x-ms-copy-source": src, "x-ms-requires-sync": "yes"}},
		{"Copy Blob x-ms-seal-blob", "PUT", "hvc/dst", map[string]string{"x-ms-copy-source": src, "x-ms-seal-blob": "abc"}},
		{"Copy Blob x-ms-rehydrate-priority", "PUT", "hvc/dst", map[string]string{"x-ms-copy-source": src, "x-ms-rehydrate-priority": "Urgent"}},
		{"Get Blob x-ms-range-get-content-md5", "GET", "hvc/dst", map[string]string{"x-ms-range": "bytes=0-3", "x-ms-range-get-content-md5": "abc"}},
		{"Get Blob x-ms-range-get-content-crc64", "GET", "hvc/dst", map[string]string{"x-ms-range": "bytes=0-3", "x-ms-range-get-content-crc64": "-1"}},
	} {
		resp, _ := b.do(t, c.method, c.path, "", c.hdr)
		wantStatus(t, resp, http.StatusBadRequest, "InvalidHeaderValue", c.what)
		after, afterBody := b.do(t, "GET", "hvc/dst", "", nil)
		if after.Header.Get("ETag") != before.Header.Get("ETag") || afterBody != beforeBody {
			t.Fatalf("%s refused, yet the blob changed", c.what)
		}
	}
	// The good spellings still work, in any case.
	for _, v := range []string{"TRUE", "false"} {
		resp, _ := b.do(t, "PUT", "hvc/dst2", "", map[string]string{"x-ms-copy-source": src, "x-ms-requires-sync": v, "x-ms-rehydrate-priority": "high"})
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("Copy Blob x-ms-requires-sync %s: %d %s", v, resp.StatusCode, resp.Header.Get("x-ms-error-code"))
		}
		resp, body := b.do(t, "GET", "hvc/dst", "", map[string]string{"x-ms-range": "bytes=0-3", "x-ms-range-get-content-md5": strings.ToLower(v)})
		if resp.StatusCode != http.StatusPartialContent || body != "dest" {
			t.Fatalf("Get Blob x-ms-range-get-content-md5 %s: %d %q", v, resp.StatusCode, body)
		}
	}
}
