package gateway

import (
	"testing"

	"github.com/blobgw/blobgw/svcerr"
)

// TestIsPremiumPageTier: the premium page blob tiers in any letter case;
// the standard tiers and look-alikes are not.
func TestIsPremiumPageTier(t *testing.T) {
	for v, want := range map[string]bool{
		"P4": true, "p10": true, "P80": true, " P30 ": true, "P1": true,
		"P5": false, "P100": false, "Hot": false, "Premium": false, "": false, "P": false,
	} {
		if got := isPremiumPageTier(v); got != want {
			t.Errorf("isPremiumPageTier(%q) = %v, want %v", v, got, want)
		}
	}
}

// TestParsePremiumTier: canonical spelling, and the tier's size limit
// (inclusive) on an upload's page blob length.
func TestParsePremiumTier(t *testing.T) {
	const gib = int64(1) << 30
	for _, tc := range []struct {
		v    string
		size int64
		want string
		code svcerr.Code
	}{
		{"p10", 512, "P10", ""},
		{"P4", 32 * gib, "P4", ""},
		{"P4", 32*gib + 512, "", svcerr.BlobTierInadequateForContentLength},
		{"P3", 16 * gib, "P3", ""},
		{"P80", 32767 * gib, "P80", ""},
		{"P80", 32767*gib + 512, "", svcerr.BlobTierInadequateForContentLength},
		{"Hot", 512, "", svcerr.InvalidHeaderValue},
	} {
		got, err := parsePremiumTier(tc.v, tc.size)
		var code svcerr.Code
		if e, ok := err.(*svcerr.Error); ok {
			code = e.Code
		} else if err != nil {
			t.Fatalf("%s %d: %v", tc.v, tc.size, err)
		}
		if got != tc.want || code != tc.code {
			t.Errorf("parsePremiumTier(%q, %d) = %q, %v; want %q, %s", tc.v, tc.size, got, err, tc.want, tc.code)
		}
	}
}
