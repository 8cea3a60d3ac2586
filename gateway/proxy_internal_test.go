package gateway

import (
	"crypto/tls"
	"net/http"
	"net/netip"
	"testing"
)

func TestEffectivePeer(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	tests := []struct {
		name      string
		remote    string
		tls       bool
		hdr       map[string][]string
		wantHTTPS bool
		wantAddr  string
	}{
		{"direct plain", "192.0.2.1:5000", false, nil, false, "192.0.2.1"},
		{"direct tls", "192.0.2.1:5000", true, nil, true, "192.0.2.1"},
		{"untrusted peer claims https", "192.0.2.1:5000", false,
			map[string][]string{"X-Forwarded-Proto": {"https"}, "X-Forwarded-For": {"203.0.113.9"}}, false, "192.0.2.1"},
		{"untrusted peer sends Forwarded", "192.0.2.1:5000", false,
			map[string][]string{"Forwarded": {"for=203.0.113.9;proto=https"}}, false, "192.0.2.1"},
		{"trusted proxy, x-forwarded", "127.0.0.1:5000", false,
			map[string][]string{"X-Forwarded-Proto": {"https"}, "X-Forwarded-For": {"203.0.113.9"}}, true, "203.0.113.9"},
		{"trusted proxy says http over tls", "127.0.0.1:5000", true,
			map[string][]string{"X-Forwarded-Proto": {"http"}}, false, "127.0.0.1"},
		{"trusted proxy, no headers", "127.0.0.1:5000", false, nil, false, "127.0.0.1"},
		{"spoofed hop before the client is ignored", "10.1.1.1:5000", false,
			map[string][]string{"X-Forwarded-For": {"198.51.100.1, 203.0.113.9, 10.2.2.2"}, "X-Forwarded-Proto": {"https"}}, true, "203.0.113.9"},
		{"proto per hop", "10.1.1.1:5000", false,
			map[string][]string{"X-Forwarded-For": {"203.0.113.9, 10.2.2.2"}, "X-Forwarded-Proto": {"https, http"}}, true, "203.0.113.9"},
		{"garbage hop stops the walk", "10.1.1.1:5000", false,
			map[string][]string{"X-Forwarded-For": {"203.0.113.9, nonsense, 10.2.2.2"}}, false, "10.2.2.2"},
		{"garbage nearest hop", "10.1.1.1:5000", false,
			map[string][]string{"X-Forwarded-For": {"nonsense"}}, false, "10.1.1.1"},
		{"forwarded rfc 7239", "127.0.0.1:5000", false,
			map[string][]string{"Forwarded": {`for="[2001:db8::7]:4711";proto=https, for=10.0.0.5`}}, true, "2001:db8::7"},
		{"forwarded wins over x-forwarded", "127.0.0.1:5000", false,
			map[string][]string{"Forwarded": {"for=203.0.113.9;proto=http"}, "X-Forwarded-Proto": {"https"}}, false, "203.0.113.9"},
		{"ipv6 trusted peer", "[::1]:5000", false,
			map[string][]string{"X-Forwarded-Proto": {"HTTPS"}, "X-Forwarded-For": {"203.0.113.9:1234"}}, true, "203.0.113.9"},
		{"v4-mapped peer", "[::ffff:127.0.0.1]:5000", false,
			map[string][]string{"X-Forwarded-Proto": {"https"}}, true, "127.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &http.Request{RemoteAddr: tt.remote, Header: http.Header(tt.hdr)}
			if tt.tls {
				r.TLS = &tls.ConnectionState{}
			}
			p := effectivePeer(r, trusted)
			if p.https != tt.wantHTTPS || p.addr != tt.wantAddr {
				t.Fatalf("https=%v addr=%s, want https=%v addr=%s", p.https, p.addr, tt.wantHTTPS, tt.wantAddr)
			}
			if ip := p.clientIP(); ip == nil || ip.String() != tt.wantAddr {
				t.Fatalf("ip %v, want %s", p.ip, tt.wantAddr)
			}
		})
	}
}

func TestRedact(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/acct/c/b?sv=2020-02-10&sig=abc%2Bdef%3D&se=x", "/acct/c/b?sv=2020-02-10&sig=REDACTED&se=x"},
		{"?SIG=abc", "?SIG=REDACTED"},
		{`Get "https://h/c/b?sp=r&sig=secret": dial tcp`, `Get "https://h/c/b?sp=r&sig=REDACTED": dial tcp`},
		{"copy=https%3A%2F%2Fh%2Fb%3Fsp%3Dr%26sig%3Dsecret%26se%3D1", "copy=https%3A%2F%2Fh%2Fb%3Fsp%3Dr%26sig%3DREDACTED"},
		{"Authorization: SharedKey devstoreaccount1:c2lnbmF0dXJl+/=", "Authorization: SharedKey devstoreaccount1:REDACTED"},
		{"AccountName=a;AccountKey=Zm9v+/==;BlobEndpoint=x", "AccountName=a;AccountKey=REDACTED;BlobEndpoint=x"},
		{"config=sig; design=1", "config=sig; design=1"},
	}
	for _, tt := range tests {
		if got := Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
