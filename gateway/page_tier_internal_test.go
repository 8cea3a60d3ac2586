package gateway

import "testing"

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
