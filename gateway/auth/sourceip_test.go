package auth

import (
	"net"
	"testing"

	"github.com/blobgw/blobgw/svcerr"
)

// TestSourceIPMismatchText: a SAS used from an address outside its sip is
// 403 AuthorizationSourceIPMismatch whose message names that address, as
// the service's does ("... using this source IP 10.1.2.3."); before, the
// message named none.
func TestSourceIPMismatchText(t *testing.T) {
	for _, tt := range []struct{ sip, client, msg string }{
		{"10.0.0.1", "10.1.2.3", "This request is not authorized to perform this operation using this source IP 10.1.2.3."},
		{"10.0.0.0-10.0.0.255", "2001:db8::1", "This request is not authorized to perform this operation using this source IP 2001:db8::1."},
		{"10.0.0.1", "", "This request is not authorized to perform this operation using this source IP."},
	} {
		var ip net.IP
		if tt.client != "" {
			ip = net.ParseIP(tt.client)
		}
		err := checkSourceIP(tt.sip, ip)
		e, ok := svcerr.As(err)
		if !ok || e.Code != svcerr.AuthorizationSourceIPMismatch || e.Message != tt.msg {
			t.Errorf("sip %s, client %q: %v, want %q", tt.sip, tt.client, err, tt.msg)
		}
	}
	if err := checkSourceIP("10.0.0.0-10.0.0.255", net.ParseIP("10.0.0.7")); err != nil {
		t.Errorf("inside the range: %v", err)
	}
}
