package gateway

import (
	"fmt"
	"strings"
	"testing"

	"github.com/blobgw/blobgw/svcerr"
)

// corsDoc is a StorageServiceProperties document with the given CorsRule
// elements (origins, methods, allowed headers, exposed headers each).
func corsDoc(rules ...[4]string) []byte {
	var b strings.Builder
	b.WriteString("<StorageServiceProperties><Cors>")
	for _, r := range rules {
		fmt.Fprintf(&b, "<CorsRule><AllowedOrigins>%s</AllowedOrigins><AllowedMethods>%s</AllowedMethods>"+
			"<AllowedHeaders>%s</AllowedHeaders><ExposedHeaders>%s</ExposedHeaders><MaxAgeInSeconds>5</MaxAgeInSeconds></CorsRule>",
			r[0], r[1], r[2], r[3])
	}
	b.WriteString("</Cors></StorageServiceProperties>")
	return []byte(b.String())
}

func list(n int, f func(i int) string) string {
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, f(i))
	}
	return strings.Join(out, ",")
}

// TestParseCORSLimits: Azure's limits on CORS rules: 64 allowed origins,
// 64 literal and 2 prefixed headers per header list, 256 characters per
// entry, 2 KiB of settings in all (before: 64 entries of any kind per
// list, no length limits).
func TestParseCORSLimits(t *testing.T) {
	origin := func(i int) string { return fmt.Sprintf("http://h%d.example", i) }
	header := func(i int) string { return fmt.Sprintf("x-h%d", i) }
	for _, tt := range []struct {
		name string
		rule [4]string
		ok   bool
	}{
		{"64 origins", [4]string{list(64, origin), "GET", "", ""}, true},
		{"65 origins", [4]string{list(65, origin), "GET", "", ""}, false},
		{"origin of 256", [4]string{"http://" + strings.Repeat("o", 249), "GET", "", ""}, true},
		{"origin of 257", [4]string{"http://" + strings.Repeat("o", 250), "GET", "", ""}, false},
		{"header of 257", [4]string{"*", "GET", strings.Repeat("h", 257), ""}, false},
		{"exposed header of 257", [4]string{"*", "GET", "", strings.Repeat("h", 257)}, false},
		{"64 literal and 2 prefixed headers", [4]string{"*", "GET", list(64, header) + ",x-ms-meta-*,x-ms-a*", "x-ms-*,etag"}, true},
		{"65 literal headers", [4]string{"*", "GET", list(65, header), ""}, false},
		{"3 prefixed allowed headers", [4]string{"*", "GET", "x-a*,x-b*,x-c*", ""}, false},
		{"3 prefixed exposed headers", [4]string{"*", "GET", "", "x-a*,x-b*,x-c*"}, false},
		{"settings over 2 KiB", [4]string{"http://" + strings.Repeat("o", 249), "GET", list(64, func(i int) string { return fmt.Sprintf("x-header-%03d-padding-longer-still", i) }), ""}, false},
	} {
		_, err := parseCORS(corsDoc(tt.rule))
		if tt.ok && err != nil || !tt.ok && !svcerr.HasCode(err, svcerr.InvalidXmlDocument) {
			t.Errorf("%s: %v, want ok %v", tt.name, err, tt.ok)
		}
	}
}

// TestSelectCORSRule: the first rule whose origins hold the request's
// origin (exactly, case-sensitively; "*" any; no other wildcards) and
// whose methods hold its method is the one that decides, and a preflight
// whose headers it refuses fails even when a later rule would allow them
// (the example of Azure's "CORS rule evaluation logic"). Before, origins
// matched in any case and a preflight went on to later rules.
func TestSelectCORSRule(t *testing.T) {
	rules, err := parseCORS(corsDoc(
		[4]string{"http://www.contoso.com", "PUT,HEAD", "x-ms-blob-content-type, x-ms-blob-content-disposition", "x-ms-*"},
		[4]string{"*", "PUT,GET", "x-ms-blob-content-type, x-ms-blob-content-disposition", "x-ms-*"},
		[4]string{"http://www.contoso.com", "GET", "x-ms-client-request-id", "x-ms-*"},
		[4]string{"https://*.fabrikam.com, http://CASE.example", "DELETE", "x-ms-meta-*", ""},
	))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		origin, method, headers string
		rule                    int // 1-based; 0: none
		headersOK               bool
	}{
		{"http://www.contoso.com", "PUT", "x-ms-blob-content-type", 1, true},
		{"http://www.contoso.com", "GET", "x-ms-blob-content-type", 2, true},
		{"http://www.contoso.com", "GET", "x-ms-client-request-id", 2, false}, // rule 3 is never reached
		{"http://www.contoso.com", "HEAD", "", 1, true},
		{"http://WWW.contoso.com", "HEAD", "", 0, false}, // case-sensitive; rule 2 has no HEAD
		{"http://WWW.contoso.com", "GET", "", 2, true},
		{"https://app.fabrikam.com", "DELETE", "", 0, false}, // no wildcard subdomains
		{"https://*.fabrikam.com", "DELETE", "x-ms-meta-a,X-MS-META-b", 4, true},
		{"http://CASE.example", "DELETE", "", 4, true},
		{"http://case.example", "DELETE", "", 0, false},
		{"", "GET", "", 2, true}, // no Origin: a rule allowing every origin
		{"", "HEAD", "", 0, false},
	} {
		got := selectCORSRule(rules, tt.origin, tt.method)
		n := 0
		for i := range rules {
			if got == &rules[i] {
				n = i + 1
			}
		}
		if n != tt.rule || got != nil && got.allowsHeaders(tt.headers) != tt.headersOK {
			t.Errorf("%s %q %q: rule %d, want %d (headers allowed %v)", tt.method, tt.origin, tt.headers, n, tt.rule, tt.headersOK)
		}
	}
}
