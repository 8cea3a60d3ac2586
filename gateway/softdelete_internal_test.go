package gateway

import (
	"testing"

	"github.com/blobgw/blobgw/svcerr"
)

// TestParseDeleteRetention: Set Blob Service Properties
// DeleteRetentionPolicy: enabled needs Days 1 to 365 (400
// InvalidXmlDocument otherwise, as Azure answers); disabled is 0 whatever
// Days says; no element leaves the stored policy as it is.
func TestParseDeleteRetention(t *testing.T) {
	tests := []struct {
		policy  string
		days    int
		present bool
		bad     bool
	}{
		{``, 0, false, false},
		{`<DeleteRetentionPolicy><Enabled>false</Enabled></DeleteRetentionPolicy>`, 0, true, false},
		{`<DeleteRetentionPolicy><Enabled>false</Enabled><Days>400</Days></DeleteRetentionPolicy>`, 0, true, false},
		{`<DeleteRetentionPolicy><Enabled>true</Enabled><Days>1</Days></DeleteRetentionPolicy>`, 1, true, false},
		{`<DeleteRetentionPolicy><Enabled> TRUE </Enabled><Days> 365 </Days><AllowPermanentDelete>false</AllowPermanentDelete></DeleteRetentionPolicy>`, 365, true, false},
		{`<DeleteRetentionPolicy><Enabled>true</Enabled><Days>7</Days><AllowPermanentDelete>true</AllowPermanentDelete></DeleteRetentionPolicy>`, 7, true, false},
		{`<DeleteRetentionPolicy><Enabled>true</Enabled><Days>0</Days></DeleteRetentionPolicy>`, 0, false, true},
		{`<DeleteRetentionPolicy><Enabled>true</Enabled><Days>366</Days></DeleteRetentionPolicy>`, 0, false, true},
		{`<DeleteRetentionPolicy><Enabled>true</Enabled><Days>-1</Days></DeleteRetentionPolicy>`, 0, false, true},
		{`<DeleteRetentionPolicy><Enabled>true</Enabled></DeleteRetentionPolicy>`, 0, false, true},
		{`<DeleteRetentionPolicy><Enabled>true</Enabled><Days>seven</Days></DeleteRetentionPolicy>`, 0, false, true},
		{`<DeleteRetentionPolicy><Enabled>maybe</Enabled><Days>7</Days></DeleteRetentionPolicy>`, 0, false, true},
		{`<DeleteRetentionPolicy><Days>7</Days></DeleteRetentionPolicy>`, 0, false, true},
		{`<DeleteRetentionPolicy><Enabled>true</Enabled><Days>7</Days><AllowPermanentDelete>yes</AllowPermanentDelete></DeleteRetentionPolicy>`, 0, false, true},
		// Days is an Int32 even while the policy is off: stored, it is
		// answered, and the SDKs read it as one.
		{`<DeleteRetentionPolicy><Enabled>false</Enabled><Days>seven</Days></DeleteRetentionPolicy>`, 0, false, true},
		{`<DeleteRetentionPolicy><Enabled>false</Enabled><Days>2147483648</Days></DeleteRetentionPolicy>`, 0, false, true},
	}
	for _, tc := range tests {
		days, present, err := parseDeleteRetention([]byte(`<StorageServiceProperties>` + tc.policy + `</StorageServiceProperties>`))
		switch {
		case tc.bad:
			if !svcerr.HasCode(err, svcerr.InvalidXmlDocument) {
				t.Errorf("%s: %v, want 400 InvalidXmlDocument", tc.policy, err)
			}
		case err != nil || days != tc.days || present != tc.present:
			t.Errorf("%s: %d, %v, %v; want %d, %v", tc.policy, days, present, err, tc.days, tc.present)
		}
	}
}
