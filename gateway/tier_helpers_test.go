package gateway

import (
	"testing"

	"github.com/blobgw/blobgw/leasedb"
)

// TestReportedTier pins which blobs a read reports a tier for (Get Blob
// Properties headers and List Blobs <Properties> share the rule).
func TestReportedTier(t *testing.T) {
	cases := []struct {
		typ, tier    string
		want         string
		inferred, ok bool
	}{
		{"BlockBlob", "", leasedb.TierHot, true, true},
		{"BlockBlob", "Cool", "Cool", false, true},
		{"BlockBlob", leasedb.TierHot, leasedb.TierHot, false, true},
		{"PageBlob", "", "", false, false},
		{"PageBlob", "P10", "P10", false, true},
		{"AppendBlob", "", "", false, false},
		{"AppendBlob", "Cool", "", false, false},
	}
	for _, c := range cases {
		tier, inferred, ok := reportedTier(&leasedb.Blob{Type: c.typ, AccessTier: c.tier})
		if tier != c.want || inferred != c.inferred || ok != c.ok {
			t.Errorf("%s with tier %q: got (%q, %v, %v), want (%q, %v, %v)", c.typ, c.tier, tier, inferred, ok, c.want, c.inferred, c.ok)
		}
	}
}
