package gateway_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/blobgw/blobgw/gateway"
	"github.com/blobgw/blobgw/internal/config"
)

// TestServeAllocsTags holds the allocations and heap bytes through
// ServeHTTP of Set Blob Tags, Get Blob Tags and Set Blob Tier on a 4 KiB
// inline blob on the Postgres store as ceilings, the driver included.
// With the row read whole (its extents decoded, the inline bytes among
// them), Set Blob Tier writing it whole again and Get Blob Tags a
// transaction of its own they took 200, 89 and 155 allocations and 25.9,
// 20.5 and 43.6 KB per request; reading and writing the row's head alone,
// 110, 42 and 44 and 7.3, 3.9 and 3.7 KB.
func TestServeAllocsTags(t *testing.T) {
	if raceDetector {
		t.Skip("allocation counts differ under the race detector")
	}
	gw := hotServerOpt(t, "postgres", gateway.Options{InlineMaxBytes: config.DefaultInlineMaxBytes})
	body := bytes.Repeat([]byte("x"), 4096)
	if rec := hotDo(t, gw, http.MethodPut, "/cnt/t", body, map[string]string{"X-Ms-Blob-Type": "BlockBlob"}); rec.Code != http.StatusCreated {
		t.Fatalf("put: %d %s", rec.Code, rec.Body)
	}
	tags := []byte(`<?xml version="1.0" encoding="utf-8"?><Tags><TagSet><Tag><Key>project</Key><Value>blobgw</Value></Tag></TagSet></Tags>`)
	tiers := []string{"Cool", "Hot"}
	const n = 200
	for _, tt := range []struct {
		name               string
		maxAllocs, maxHeap float64
		method, query      string
		body               []byte
		hdr                func(i int) map[string]string
		want               int
	}{
		{"Set Blob Tags", 116, 8 << 10, http.MethodPut, "?comp=tags", tags, func(int) map[string]string {
			return map[string]string{"Content-Type": "application/xml"}
		}, http.StatusNoContent},
		{"Get Blob Tags", 45, 4608, http.MethodGet, "?comp=tags", nil, func(int) map[string]string { return nil }, http.StatusOK},
		{"Set Blob Tier", 47, 4608, http.MethodPut, "?comp=tier", nil, func(i int) map[string]string {
			return map[string]string{"X-Ms-Access-Tier": tiers[i%2]}
		}, http.StatusOK},
	} {
		allocs, heap := perServe(t, gw, n, func(i int) *http.Request {
			r, _ := hotRequest(tt.method, "/cnt/t"+tt.query, tt.body, tt.hdr(i))
			return r
		}, func(i int, rec *httptest.ResponseRecorder) {
			if rec.Code != tt.want {
				t.Fatalf("%s %d: %d %s", tt.name, i, rec.Code, rec.Body)
			}
		})
		t.Logf("%s: %.1f allocations, %.0f bytes per request", tt.name, allocs, heap)
		if allocs > tt.maxAllocs {
			t.Errorf("%s: %.1f allocations per request, want at most %.0f", tt.name, allocs, tt.maxAllocs)
		}
		if heap > tt.maxHeap {
			t.Errorf("%s: %.0f heap bytes per request, want at most %.0f", tt.name, heap, tt.maxHeap)
		}
	}
}
