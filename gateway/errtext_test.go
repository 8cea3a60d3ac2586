package gateway_test

import (
	"context"
	"encoding/xml"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/blobgw/blobgw/internal/config"
)

// TestErrorMessageTexts: error bodies carry Azure's message for the code,
// followed by the "\nRequestId:<x-ms-request-id>\nTime:<UTC, 7 fractional
// digits>" lines the service appends, for the codes clients show to
// people: a bad Shared Key signature (AuthenticationFailed), a preflight
// no rule allows (CorsPreflightFailure) or without Origin (400
// InvalidHeaderValue "A required CORS header is not present.", before 400
// MissingRequiredHeader), a bad container name (Azure's "specifed"), a
// write at the secondary endpoint, an append to a sealed blob
// (BlobIsSealed) and a query that does not parse (InvalidQueryParameterValue,
// the cause in Reason). Before, AuthenticationFailed and BlobIsSealed read
// otherwise than Azure's, the query error replaced Azure's message, and
// the newlines before RequestId and Time were sent as &#xA;.
func TestErrorMessageTexts(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "texts")
	ab := b.client.ServiceClient().NewContainerClient("texts").NewAppendBlobClient("sealed")
	if _, err := ab.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ab.Seal(ctx, nil); err != nil {
		t.Fatal(err)
	}
	timeRE := regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{7}Z$`)
	check := func(what string, resp *http.Response, body string, status int, code, msg string) {
		t.Helper()
		if d := statusDiff(resp, status, code); d != "" {
			t.Errorf("%s: %s", what, d)
			return
		}
		var e struct {
			Code    string
			Message string
		}
		if err := xml.Unmarshal([]byte(body), &e); err != nil {
			t.Fatalf("%s: body %q: %v", what, body, err)
		}
		text, rest, ok := strings.Cut(e.Message, "\nRequestId:")
		if !ok || text != msg {
			t.Errorf("%s: message %q, want %q then the RequestId line", what, e.Message, msg)
			return
		}
		id, tm, ok := strings.Cut(rest, "\nTime:")
		if !ok || id != resp.Header.Get("x-ms-request-id") || !timeRE.MatchString(tm) {
			t.Errorf("%s: message tail %q (request id %q)", what, rest, resp.Header.Get("x-ms-request-id"))
		}
		// The lines are separated by newlines as sent, not &#xA;.
		if !strings.Contains(body, "\nRequestId:"+id+"\nTime:") {
			t.Errorf("%s: the RequestId and Time lines are not raw lines in %q", what, body)
		}
	}

	req, _ := http.NewRequest(http.MethodGet, b.serviceURL(0)+"?comp=list", nil)
	b.sign(t, req)
	req.Header.Set("x-ms-client-request-id", "changed after signing")
	resp, body := send(t, req)
	check("bad signature", resp, body, 403, "AuthenticationFailed",
		"Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature.")

	req, _ = http.NewRequest(http.MethodOptions, b.serviceURL(0)+"texts/sealed", nil)
	req.Header.Set("Origin", "http://a.example")
	req.Header.Set("Access-Control-Request-Method", "PUT")
	resp, body = send(t, req)
	check("preflight", resp, body, 403, "CorsPreflightFailure", "CORS not enabled or no matching rule found for this request.")

	resp, body = b.do(t, "PUT", "texts/sealed?comp=appendblock", "more", nil)
	check("append to a sealed blob", resp, body, 409, "BlobIsSealed", "The blob is sealed and its contents cannot be modified.")

	req, _ = http.NewRequest(http.MethodOptions, b.serviceURL(0)+"texts/sealed", nil)
	req.Header.Set("Access-Control-Request-Method", "PUT")
	resp, body = send(t, req)
	check("preflight without Origin", resp, body, 400, "InvalidHeaderValue", "A required CORS header is not present.")

	resp, body = b.do(t, "PUT", "Bad_Name?restype=container", "", nil)
	check("container name", resp, body, 400, "InvalidResourceName", "The specifed resource name contains invalid characters.")

	req, _ = http.NewRequest(http.MethodPut, b.servers[0].URL+"/"+config.DevAccountName+"-secondary/texts/new", strings.NewReader("x"))
	req.Header.Set("x-ms-blob-type", "BlockBlob")
	b.sign(t, req)
	resp, body = send(t, req)
	check("write at the secondary", resp, body, 403, "InsufficientAccountPermissions", "Write operations are not allowed.")

	resp, body = b.do(t, "GET", "?comp=list&prefix=%zz", "", nil)
	check("unparsable query", resp, body, 400, "InvalidQueryParameterValue", "Value for one of the query parameters specified in the request URI is invalid.")
	if !strings.Contains(body, "<Reason>") {
		t.Errorf("unparsable query: no Reason in %q", body)
	}
}

// TestLeaseIdMissingTexts: LeaseIdMissing reads as Azure words it for
// what holds the lease: "There is currently a lease on the blob ..." for
// a blob write, "... on the container ..." for Delete Container (before:
// "on the resource" for both), and Lease Container's refusals name the
// container (before: "the blob").
func TestLeaseIdMissingTexts(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "leased")
	if _, err := b.client.UploadBuffer(ctx, "leased", "b", []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	lease := func(query, path string) {
		t.Helper()
		resp, body := b.do(t, "PUT", path+query, "", map[string]string{"x-ms-lease-action": "acquire", "x-ms-lease-duration": "-1"})
		wantStatus(t, resp, 201, "", "acquire "+path+": "+body)
	}
	createContainers(t, b.client, "free")
	lease("?comp=lease", "leased/b")
	lease("?restype=container&comp=lease", "leased")
	other := "11111111-2222-3333-4444-555555555555"
	for _, tt := range []struct {
		method, path string
		hdr          map[string]string
		status       int
		code, msg    string
	}{
		{"PUT", "leased/b?comp=metadata", nil, 412, "LeaseIdMissing", "There is currently a lease on the blob and no lease ID was specified in the request."},
		{"DELETE", "leased?restype=container", nil, 412, "LeaseIdMissing", "There is currently a lease on the container and no lease ID was specified in the request."},
		// Lease Container words its refusals for the container.
		{"PUT", "leased?restype=container&comp=lease", map[string]string{"x-ms-lease-action": "release", "x-ms-lease-id": other},
			409, "LeaseIdMismatchWithLeaseOperation", "The lease ID specified did not match the lease ID for the container."},
		{"PUT", "leased/b?comp=lease", map[string]string{"x-ms-lease-action": "release", "x-ms-lease-id": other},
			409, "LeaseIdMismatchWithLeaseOperation", "The lease ID specified did not match the lease ID for the blob."},
		{"PUT", "free?restype=container&comp=lease", map[string]string{"x-ms-lease-action": "break"},
			409, "LeaseNotPresentWithLeaseOperation", "There is currently no lease on the container."},
	} {
		resp, body := b.do(t, tt.method, tt.path, "", tt.hdr)
		wantStatus(t, resp, tt.status, tt.code, tt.method+" "+tt.path)
		if !strings.Contains(body, "<Message>"+tt.msg+"\nRequestId:") {
			t.Errorf("%s %s: body %q, want message %q", tt.method, tt.path, body, tt.msg)
		}
	}
}
