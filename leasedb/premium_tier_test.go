package leasedb

import (
	"testing"

	"github.com/blobgw/blobgw/svcerr"
)

// TestPremiumTier: one lookup reads a premium page blob tier in any letter
// case (canonical spelling) and applies its size limit, inclusive, to the
// blob's length; standard tiers and look-alikes are no premium tier (ok
// false, no error) and have no size rule.
func TestPremiumTier(t *testing.T) {
	for _, tc := range []struct {
		v    string
		size int64
		want string
		ok   bool
		code svcerr.Code
	}{
		{"p10", 512, "P10", true, ""},
		{" P30 ", 512, "P30", true, ""},
		{"P1", 4 * gib, "P1", true, ""},
		{"P4", 32 * gib, "P4", true, ""},
		{"P4", 32*gib + 512, "P4", true, svcerr.BlobTierInadequateForContentLength},
		{"P3", 16 * gib, "P3", true, ""},
		{"P80", 32767 * gib, "P80", true, ""},
		{"P80", 32767*gib + 512, "P80", true, svcerr.BlobTierInadequateForContentLength},
		{"Hot", 64 * gib, "", false, ""},
		{"P5", 512, "", false, ""},
		{"P100", 512, "", false, ""},
		{"Premium", 512, "", false, ""},
		{"P", 512, "", false, ""},
		{"", 512, "", false, ""},
	} {
		got, ok, err := PremiumTier(tc.v, tc.size)
		var code svcerr.Code
		if e, isSvc := err.(*svcerr.Error); isSvc {
			code = e.Code
		} else if err != nil {
			t.Fatalf("%q %d: %v", tc.v, tc.size, err)
		}
		if got != tc.want || ok != tc.ok || code != tc.code {
			t.Errorf("PremiumTier(%q, %d) = %q, %v, %v; want %q, %v, %s", tc.v, tc.size, got, ok, err, tc.want, tc.ok, tc.code)
		}
		if err := CheckPremiumTierSize(tc.v, tc.size); (err != nil) != (tc.code != "") {
			t.Errorf("CheckPremiumTierSize(%q, %d) = %v, want %s", tc.v, tc.size, err, tc.code)
		}
	}
}
