package gateway_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
	"github.com/blobgw/blobgw/gateway"
	"github.com/blobgw/blobgw/internal/config"
	"github.com/blobgw/blobgw/internal/gwtest"
)

// testCORSRules: a credentialed rule for two origins that may write, and a
// read-only rule for any origin.
func testCORSRules() []*service.CORSRule {
	return []*service.CORSRule{
		{
			AllowedOrigins:  to.Ptr("http://a.example, http://b.example"),
			AllowedMethods:  to.Ptr("GET,PUT"),
			AllowedHeaders:  to.Ptr("x-ms-meta-*,x-ms-blob-type,content-type"),
			ExposedHeaders:  to.Ptr("x-ms-meta-*,etag"),
			MaxAgeInSeconds: to.Ptr[int32](300),
		},
		{
			AllowedOrigins:  to.Ptr("*"),
			AllowedMethods:  to.Ptr("GET,HEAD"),
			AllowedHeaders:  to.Ptr(""),
			ExposedHeaders:  to.Ptr(""),
			MaxAgeInSeconds: to.Ptr[int32](60),
		},
	}
}

// preflight sends an unauthenticated OPTIONS request.
func preflight(t *testing.T, url, origin, method, headers string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodOptions, url, nil)
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if method != "" {
		req.Header.Set("Access-Control-Request-Method", method)
	}
	if headers != "" {
		req.Header.Set("Access-Control-Request-Headers", headers)
	}
	resp, _ := send(t, req)
	return resp
}

var corsHeaderNames = []string{
	"Access-Control-Allow-Origin", "Access-Control-Allow-Methods", "Access-Control-Allow-Headers",
	"Access-Control-Max-Age", "Access-Control-Allow-Credentials", "Access-Control-Expose-Headers", "Vary",
}

// checkCORSHeaders compares every CORS response header with want (absent
// ones must be absent) and the status and error code.
func checkCORSHeaders(t *testing.T, what string, resp *http.Response, status int, code string, want map[string]string) {
	t.Helper()
	if d := statusDiff(resp, status, code); d != "" {
		t.Errorf("%s: %s", what, d)
	}
	for _, h := range corsHeaderNames {
		got := strings.Join(resp.Header.Values(h), ", ")
		if got != want[h] {
			t.Errorf("%s: %s = %q, want %q", what, h, got, want[h])
		}
	}
	if resp.Header.Get("x-ms-request-id") == "" {
		t.Errorf("%s: no x-ms-request-id", what)
	}
}

func TestCORSPreflight(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "web")
	blobURL := b.serviceURL(0) + "web/page.txt"

	// No rules yet: refused (and this process caches "no rules").
	checkCORSHeaders(t, "before rules", preflight(t, blobURL, "http://a.example", "PUT", ""), 403, "CorsPreflightFailure", nil)

	if _, err := b.client.ServiceClient().SetProperties(ctx, &service.SetPropertiesOptions{CORS: testCORSRules()}); err != nil {
		t.Fatal(err)
	}
	// A preflight is an OPTIONS request: no Vary (Azure sets it on GET
	// and HEAD responses only).
	cred := map[string]string{"Access-Control-Allow-Credentials": "true"}
	with := func(m map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	tests := []struct {
		name, url, origin, method, headers string
		status                             int
		code                               string
		want                               map[string]string
	}{
		{"write from a listed origin", blobURL, "http://a.example", "PUT", "x-ms-blob-type, x-ms-meta-Color,Content-Type", 200, "",
			with(cred, "Access-Control-Allow-Origin", "http://a.example", "Access-Control-Allow-Methods", "PUT",
				"Access-Control-Allow-Headers", "x-ms-blob-type,x-ms-meta-Color,Content-Type", "Access-Control-Max-Age", "300")},
		{"second origin", b.serviceURL(0) + "web?restype=container&comp=list", "http://b.example", "GET", "", 200, "",
			with(cred, "Access-Control-Allow-Origin", "http://b.example", "Access-Control-Allow-Methods", "GET", "Access-Control-Max-Age", "300")},
		// Origins match case-sensitively: the any-origin rule answers.
		{"origin in another case", b.serviceURL(0) + "web?restype=container&comp=list", "HTTP://B.example", "GET", "", 200, "",
			map[string]string{"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Methods": "GET", "Access-Control-Max-Age": "60"}},
		{"origin in another case, write", blobURL, "http://A.example", "PUT", "", 403, "CorsPreflightFailure", nil},
		{"read from anywhere", blobURL, "http://c.example", "GET", "", 200, "",
			map[string]string{"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Methods": "GET", "Access-Control-Max-Age": "60"}},
		{"service URL", b.serviceURL(0) + "?comp=list", "http://c.example", "HEAD", "", 200, "",
			map[string]string{"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Methods": "HEAD", "Access-Control-Max-Age": "60"}},
		{"write from an unlisted origin", blobURL, "http://c.example", "PUT", "", 403, "CorsPreflightFailure", nil},
		{"method no rule allows", blobURL, "http://a.example", "DELETE", "", 403, "CorsPreflightFailure", nil},
		{"header no rule allows", blobURL, "http://a.example", "PUT", "x-ms-blob-type,x-custom", 403, "CorsPreflightFailure", nil},
		{"any-origin rule allows no headers", blobURL, "http://c.example", "GET", "x-ms-version", 403, "CorsPreflightFailure", nil},
		// Azure: 400 InvalidHeaderValue "A required CORS header is not present."
		{"no Origin", blobURL, "", "PUT", "", 400, "InvalidHeaderValue", nil},
		{"no request method", blobURL, "http://a.example", "", "", 400, "InvalidHeaderValue", nil},
		{"unknown account", strings.Replace(blobURL, config.DevAccountName, "nobody", 1), "http://a.example", "PUT", "", 403, "CorsPreflightFailure", nil},
	}
	for _, tt := range tests {
		checkCORSHeaders(t, tt.name, preflight(t, tt.url, tt.origin, tt.method, tt.headers), tt.status, tt.code, tt.want)
	}

	// Service properties keep the other elements when only CORS is set,
	// and the reverse.
	if _, err := b.client.ServiceClient().SetProperties(ctx, &service.SetPropertiesOptions{
		DeleteRetentionPolicy: &service.RetentionPolicy{Enabled: to.Ptr(false)},
	}); err != nil {
		t.Fatal(err)
	}
	props, err := b.client.ServiceClient().GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(props.CORS) != 2 || *props.CORS[0].AllowedMethods != "GET,PUT" || *props.CORS[1].MaxAgeInSeconds != 60 ||
		props.DeleteRetentionPolicy == nil || props.Logging == nil {
		t.Fatalf("service properties after a partial set: %+v", props.StorageServiceProperties)
	}

	// Invalid rules are refused and change nothing.
	six := append(append(testCORSRules(), testCORSRules()...), testCORSRules()...)
	_, err = b.client.ServiceClient().SetProperties(ctx, &service.SetPropertiesOptions{CORS: six})
	wantErr(t, err, 400, "InvalidXmlDocument")
	bad := testCORSRules()[:1]
	bad[0].AllowedMethods = to.Ptr("GET,FETCH")
	_, err = b.client.ServiceClient().SetProperties(ctx, &service.SetPropertiesOptions{CORS: bad})
	wantErr(t, err, 400, "InvalidXmlDocument")
	bad = testCORSRules()[:1]
	bad[0].MaxAgeInSeconds = to.Ptr[int32](-1)
	_, err = b.client.ServiceClient().SetProperties(ctx, &service.SetPropertiesOptions{CORS: bad})
	wantErr(t, err, 400, "InvalidXmlDocument")
	checkCORSHeaders(t, "after refused sets", preflight(t, blobURL, "http://c.example", "GET", ""), 200, "",
		map[string]string{"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Methods": "GET", "Access-Control-Max-Age": "60"})

	// An empty Cors element removes every rule, at once in this process.
	resp, _ := b.do(t, http.MethodPut, "?restype=service&comp=properties",
		`<?xml version="1.0" encoding="utf-8"?><StorageServiceProperties><Cors /></StorageServiceProperties>`, nil)
	if resp.StatusCode != 202 {
		t.Fatalf("clearing CORS: %d", resp.StatusCode)
	}
	checkCORSHeaders(t, "after clearing", preflight(t, blobURL, "http://c.example", "GET", ""), 403, "CorsPreflightFailure", nil)
}

// corsDo sends a Shared Key request with an Origin header.
func corsDo(t *testing.T, b *bundle, method, path, origin string, body string) *http.Response {
	t.Helper()
	hdr := map[string]string{}
	if method == http.MethodPut && !strings.Contains(path, "?") {
		hdr["x-ms-blob-type"] = "BlockBlob"
	}
	if origin != "" {
		hdr["Origin"] = origin
	}
	resp, _ := b.do(t, method, path, body, hdr)
	return resp
}

func TestCORSActualRequests(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "web")
	if _, err := b.client.UploadBuffer(ctx, "web", "page.txt", []byte("hi"), &azblob.UploadBufferOptions{
		Metadata: map[string]*string{"Color": to.Ptr("blue")},
	}); err != nil {
		t.Fatal(err)
	}
	// Without rules nothing CORS is added.
	checkCORSHeaders(t, "no rules", corsDo(t, b, "GET", "web/page.txt", "http://a.example", ""), 200, "", nil)

	if _, err := b.client.ServiceClient().SetProperties(ctx, &service.SetPropertiesOptions{CORS: testCORSRules()}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, method, path, origin string
		status                     int
		code                       string
		want                       map[string]string
	}{
		{"listed origin, prefix and literal exposed headers", "GET", "web/page.txt", "http://a.example", 200, "", map[string]string{
			"Access-Control-Allow-Origin": "http://a.example", "Access-Control-Allow-Credentials": "true", "Vary": "Origin",
			"Access-Control-Expose-Headers": "x-ms-meta-color,etag"}},
		// Vary only on GET and HEAD responses (Azure's CORS tables).
		{"listed origin, write", "PUT", "web/new.txt", "http://b.example", 201, "", map[string]string{
			"Access-Control-Allow-Origin": "http://b.example", "Access-Control-Allow-Credentials": "true",
			"Access-Control-Expose-Headers": "etag"}},
		{"error response", "GET", "web/missing.txt", "http://a.example", 404, "BlobNotFound", map[string]string{
			"Access-Control-Allow-Origin": "http://a.example", "Access-Control-Allow-Credentials": "true", "Vary": "Origin",
			"Access-Control-Expose-Headers": "etag"}},
		// A rule allowing every origin answers all alike: no Vary (Azure's
		// CORS tables).
		{"any origin", "GET", "web/page.txt", "http://c.example", 200, "", map[string]string{
			"Access-Control-Allow-Origin": "*"}},
		{"any origin, HEAD", "HEAD", "web/page.txt", "http://c.example", 200, "", map[string]string{
			"Access-Control-Allow-Origin": "*"}},
		{"method no rule allows for the origin", "PUT", "web/other.txt", "http://c.example", 201, "", nil},
		{"no Origin, GET: the any-origin rule allows GET", "GET", "web/page.txt", "", 200, "", map[string]string{
			"Access-Control-Allow-Origin": "*"}},
		{"no Origin, PUT", "PUT", "web/third.txt", "", 201, "", nil},
	}
	for _, tt := range tests {
		checkCORSHeaders(t, tt.name, corsDo(t, b, tt.method, tt.path, tt.origin, "x"), tt.status, tt.code, tt.want)
	}

	// "x-ms-*" exposes every x-ms- header of the response, as Azure does.
	rules := testCORSRules()
	rules[0].ExposedHeaders = to.Ptr("x-ms-*")
	if _, err := b.client.ServiceClient().SetProperties(ctx, &service.SetPropertiesOptions{CORS: rules}); err != nil {
		t.Fatal(err)
	}
	resp := corsDo(t, b, "GET", "web/page.txt", "http://a.example", "")
	exp := "," + resp.Header.Get("Access-Control-Expose-Headers") + ","
	for _, h := range []string{"x-ms-request-id", "x-ms-version", "x-ms-blob-type", "x-ms-meta-color", "x-ms-lease-state"} {
		if !strings.Contains(exp, ","+h+",") {
			t.Errorf("x-ms-* rule: Access-Control-Expose-Headers %q lacks %s", exp, h)
		}
	}
	if strings.Contains(exp, "etag") || strings.Contains(exp, "access-control") {
		t.Errorf("x-ms-* rule exposes more than x-ms- headers: %q", exp)
	}
}

// restartGateway starts another gateway process (new store connection, new
// caches) on b's database and byte backend, as a restart or another
// replica would be.
func restartGateway(t *testing.T, b *bundle) *httptest.Server {
	t.Helper()
	gw := gwtest.Gateway(t, gwtest.OpenStore(t, b.dsn), b.backend, gateway.Options{})
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	return srv
}

// TestCORSSharedAndPersisted: rules set through one replica are obeyed by
// the other (they live in the database, not in a process), and a gateway
// started later on the same database reads them back.
func TestCORSSharedAndPersisted(t *testing.T) {
	forKinds(t, []string{"sqlite", "postgres"}, func(t *testing.T, kind string) {
		b := setup(t, kind, setupOpts{replicas: 2})
		ctx := context.Background()
		if _, err := b.client.ServiceClient().SetProperties(ctx, &service.SetPropertiesOptions{CORS: testCORSRules()}); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"Access-Control-Allow-Origin": "http://a.example", "Access-Control-Allow-Methods": "PUT",
			"Access-Control-Max-Age": "300", "Access-Control-Allow-Credentials": "true"}
		for i := range b.servers {
			checkCORSHeaders(t, "replica "+string(rune('0'+i)), preflight(t, b.serviceURL(i)+"c/b", "http://a.example", "PUT", ""), 200, "", want)
			props, err := b.clientFor(t, i).ServiceClient().GetProperties(ctx, nil)
			if err != nil || len(props.CORS) != 2 || *props.CORS[0].AllowedOrigins != "http://a.example, http://b.example" {
				t.Fatalf("replica %d service properties: %+v %v", i, props.CORS, err)
			}
		}
		srv := restartGateway(t, b)
		checkCORSHeaders(t, "restarted", preflight(t, srv.URL+"/"+config.DevAccountName+"/c/b", "http://a.example", "PUT", ""), 200, "", want)
		c, err := azblob.NewClientWithSharedKeyCredential(srv.URL+"/"+config.DevAccountName+"/", b.cred, nil)
		if err != nil {
			t.Fatal(err)
		}
		props, err := c.ServiceClient().GetProperties(ctx, nil)
		if err != nil || len(props.CORS) != 2 || *props.CORS[1].AllowedOrigins != "*" {
			t.Fatalf("restarted gateway's service properties: %+v %v", props.CORS, err)
		}
	})
}
