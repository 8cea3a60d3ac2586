package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
)

// TestUnknownCompAnyCredential: the operation is resolved before the
// credential is looked at, so an unknown comp is 400
// InvalidQueryParameterValue under Shared Key, a SAS and anonymously alike
// (a SAS got 403 and an anonymous caller 401 before), and stores nothing;
// an unknown account is still 404 ResourceNotFound.
func TestUnknownCompAnyCredential(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	if _, err := b.client.CreateContainer(ctx, "pub", &azblob.CreateContainerOptions{Access: to.Ptr(container.PublicAccessTypeContainer)}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.client.UploadBuffer(ctx, "pub", "f.txt", []byte("kept"), nil); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	token := b.sasURL(t, "pub", sas.BlobSignatureValues{Protocol: sas.ProtocolHTTPSandHTTP, StartTime: now.Add(-time.Minute),
		ExpiryTime: now.Add(time.Hour), Permissions: (&sas.ContainerPermissions{Read: true, Add: true, Create: true, Write: true, Delete: true, List: true}).String(),
		ContainerName: "pub"})
	_, sasQuery, _ := strings.Cut(token, "?")
	do := func(method, u string, signed bool) (int, string) {
		t.Helper()
		if signed {
			path := strings.TrimPrefix(u, b.serviceURL(0))
			resp, _ := b.do(t, method, path, "bytes", nil)
			return resp.StatusCode, resp.Header.Get("x-ms-error-code")
		}
		req, err := http.NewRequest(method, u, strings.NewReader("bytes"))
		if err != nil {
			t.Fatal(err)
		}
		resp, _ := send(t, req)
		return resp.StatusCode, resp.Header.Get("x-ms-error-code")
	}
	for _, target := range []struct{ method, path string }{
		{"GET", "pub?restype=container&comp=bogus"},
		{"PUT", "pub/f.txt?comp=bogus"},
		{"PUT", "pub/new.txt?comp=bogus"},
	} {
		u := b.serviceURL(0) + target.path
		for _, c := range []struct {
			cred   string
			u      string
			signed bool
		}{
			{"Shared Key", u, true},
			{"SAS", u + "&" + sasQuery, false},
			{"anonymous", u, false},
		} {
			if status, code := do(target.method, c.u, c.signed); status != 400 || code != "InvalidQueryParameterValue" {
				t.Errorf("%s %s with %s: %d %s, want 400 InvalidQueryParameterValue", target.method, target.path, c.cred, status, code)
			}
		}
	}
	if got := string(download(t, b.client, "pub", "f.txt")); got != "kept" {
		t.Fatalf("f.txt is %q", got)
	}
	_, err := b.client.ServiceClient().NewContainerClient("pub").NewBlobClient("new.txt").GetProperties(ctx, nil)
	wantErr(t, err, 404, "BlobNotFound")

	unknown := strings.Replace(b.serviceURL(0), "/devstoreaccount1/", "/nosuchaccount/", 1) + "pub?restype=container&comp=bogus"
	for _, u := range []string{unknown, unknown + "&" + sasQuery} {
		if status, code := do("GET", u, false); status != 404 || code != "ResourceNotFound" {
			t.Errorf("unknown account %s: %d %s, want 404 ResourceNotFound", u, status, code)
		}
	}
}
