package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
)

// TestCORSAzureTables drives the gateway through the tables of Azure's
// "CORS support for the Azure Storage services": the rule evaluation
// example (the rule that origin and method select decides the preflight
// alone, even when a later rule would allow its headers), exact
// case-sensitive origins without wildcard subdomains, and the table of
// GET/HEAD responses (Vary: Origin, Access-Control-Allow-Origin "*" and
// Access-Control-Expose-Headers by Origin present, rules set, any-origin
// or exact match), with no Vary on other methods. Before, the preflight
// went on to later rules, origins matched in any case, a GET without
// Origin that an any-origin rule selects got no CORS headers, and PUT
// responses got Vary: Origin.
func TestCORSAzureTables(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "tab")
	if _, err := b.client.UploadBuffer(ctx, "tab", "p", []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	rule := func(origins, methods, allowed string) *service.CORSRule {
		return &service.CORSRule{AllowedOrigins: to.Ptr(origins), AllowedMethods: to.Ptr(methods),
			AllowedHeaders: to.Ptr(allowed), ExposedHeaders: to.Ptr("x-ms-*"), MaxAgeInSeconds: to.Ptr[int32](5)}
	}
	set := func(rules ...*service.CORSRule) {
		t.Helper()
		if _, err := b.client.ServiceClient().SetProperties(ctx, &service.SetPropertiesOptions{CORS: rules}); err != nil {
			t.Fatal(err)
		}
	}
	// GET/HEAD (or another method) with or without Origin: Vary, the
	// allowed origin, and whether headers are exposed.
	type answer struct {
		vary, allow string
		exposed     bool
	}
	actual := func(method, origin string) answer {
		t.Helper()
		hdr := map[string]string{}
		if origin != "" {
			hdr["Origin"] = origin
		}
		path := "tab/p"
		body := ""
		if method == http.MethodPut {
			path, body, hdr["x-ms-blob-type"] = "tab/q", "y", "BlockBlob"
		}
		resp, _ := b.do(t, method, path, body, hdr)
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %q: %d", method, origin, resp.StatusCode)
		}
		return answer{strings.Join(resp.Header.Values("Vary"), ","), resp.Header.Get("Access-Control-Allow-Origin"),
			strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "x-ms-request-id")}
	}
	check := func(what string, got, want answer) {
		t.Helper()
		if got != want {
			t.Errorf("%s: %+v, want %+v", what, got, want)
		}
	}
	const contoso = "http://www.contoso.com"
	// The table's rows without rules: nothing.
	check("no Origin, no rules", actual("GET", ""), answer{})
	check("Origin, no rules", actual("GET", contoso), answer{})

	// Rules naming origins only.
	set(rule(contoso, "GET,HEAD,PUT", ""))
	check("no Origin, no any-origin rule", actual("GET", ""), answer{vary: "Origin"})
	check("Origin, exact match", actual("GET", contoso), answer{vary: "Origin", allow: contoso, exposed: true})
	check("Origin, exact match, HEAD", actual("HEAD", contoso), answer{vary: "Origin", allow: contoso, exposed: true})
	check("Origin, no match", actual("GET", "http://other.example"), answer{vary: "Origin"})
	check("Origin in another case: no match", actual("GET", "http://WWW.contoso.com"), answer{vary: "Origin"})
	check("PUT, exact match: no Vary", actual("PUT", contoso), answer{allow: contoso, exposed: true})
	check("PUT, no match: no Vary", actual("PUT", "http://other.example"), answer{})

	// Azure's rule evaluation example, whose second rule allows every
	// origin.
	set(rule(contoso, "PUT,HEAD", "x-ms-blob-content-type, x-ms-blob-content-disposition"),
		rule("*", "PUT,GET", "x-ms-blob-content-type, x-ms-blob-content-disposition"),
		rule(contoso, "GET", "x-ms-client-request-id"),
		rule("https://*.fabrikam.com", "DELETE", ""))
	check("no Origin, any-origin rule", actual("GET", ""), answer{allow: "*", exposed: true})
	check("Origin, any-origin rule", actual("GET", contoso), answer{allow: "*", exposed: true})
	check("Origin, exact match first (HEAD)", actual("HEAD", contoso), answer{vary: "Origin", allow: contoso, exposed: true})
	check("PUT, exact match first: no Vary", actual("PUT", contoso), answer{allow: contoso, exposed: true})

	url := b.serviceURL(0) + "tab/p"
	for _, tt := range []struct {
		origin, method, headers string
		status                  int
		allow                   string
	}{
		{contoso, "PUT", "x-ms-blob-content-type", 200, contoso},
		{contoso, "GET", "x-ms-blob-content-type", 200, "*"},
		// The second rule selects the request and refuses the header;
		// the third, which allows it, is never looked at.
		{contoso, "GET", "x-ms-client-request-id", 403, ""},
		// No wildcard subdomains: the entry is a literal origin.
		{"https://app.fabrikam.com", "DELETE", "", 403, ""},
		{"https://*.fabrikam.com", "DELETE", "", 200, "https://*.fabrikam.com"},
		// Exact, case-sensitive.
		{"http://WWW.CONTOSO.COM", "HEAD", "", 403, ""},
	} {
		resp := preflight(t, url, tt.origin, tt.method, tt.headers)
		if resp.StatusCode != tt.status || resp.Header.Get("Access-Control-Allow-Origin") != tt.allow || resp.Header.Get("Vary") != "" {
			t.Errorf("preflight %s %s %q: %d, Allow-Origin %q, Vary %q; want %d, %q, no Vary", tt.method, tt.origin, tt.headers,
				resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"), resp.Header.Get("Vary"), tt.status, tt.allow)
		}
	}
}
