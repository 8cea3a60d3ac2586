package gateway_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
)

// sasURL signs values with the dev key and returns the resource URL with
// the token.
func (b *bundle) sasURL(t *testing.T, path string, v sas.BlobSignatureValues) string {
	t.Helper()
	cred, err := azblob.NewSharedKeyCredential("devstoreaccount1", "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==")
	if err != nil {
		t.Fatal(err)
	}
	qp, err := v.SignWithSharedKey(cred)
	if err != nil {
		t.Fatal(err)
	}
	return b.serviceURL(0) + path + "?" + qp.Encode()
}

func noCredBlob(t *testing.T, u string) *blockblob.Client {
	t.Helper()
	c, err := blockblob.NewClientWithNoCredential(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSAS drives the gateway with tokens built by the SDK's own SAS
// builders: a read-only token reads but cannot write, a container token
// lists, a create-only token creates but never overwrites, an expired token
// is refused, and response header overrides apply.
func TestSAS(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "shared")
	if _, err := b.client.UploadBuffer(ctx, "shared", "doc.txt", []byte("hello"), nil); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	window := func(perm string, blobName string) sas.BlobSignatureValues {
		return sas.BlobSignatureValues{Protocol: sas.ProtocolHTTPSandHTTP, StartTime: now.Add(-time.Minute), ExpiryTime: now.Add(time.Hour),
			Permissions: perm, ContainerName: "shared", BlobName: blobName}
	}

	// Read-only blob token.
	ro := noCredBlob(t, b.sasURL(t, "shared/doc.txt", window((&sas.BlobPermissions{Read: true}).String(), "doc.txt")))
	resp, err := ro.DownloadStream(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(data) != "hello" {
		t.Fatalf("read through SAS: %q", data)
	}
	_, err = ro.Upload(ctx, nopSeeker("evil"), nil)
	wantErr(t, err, 403, "AuthorizationPermissionMismatch")
	_, err = ro.Delete(ctx, nil)
	wantErr(t, err, 403, "AuthorizationPermissionMismatch")

	// A blob token does not reach a sibling blob (the signature covers the name).
	sib := noCredBlob(t, b.serviceURL(0)+"shared/other.txt?"+splitQuery(b.sasURL(t, "shared/doc.txt", window("r", "doc.txt"))))
	_, err = sib.GetProperties(ctx, nil)
	wantErr(t, err, 403, "AuthenticationFailed")

	// Expired.
	exp := window("r", "doc.txt")
	exp.StartTime, exp.ExpiryTime = now.Add(-2*time.Hour), now.Add(-time.Second)
	_, err = noCredBlob(t, b.sasURL(t, "shared/doc.txt", exp)).GetProperties(ctx, nil)
	wantErr(t, err, 403, "AuthenticationFailed")

	// Container token with read+list: lists and reads, cannot write.
	cu := b.sasURL(t, "shared", window((&sas.ContainerPermissions{Read: true, List: true}).String(), ""))
	cc, err := container.NewClientWithNoCredential(cu, nil)
	if err != nil {
		t.Fatal(err)
	}
	page, err := cc.NewListBlobsFlatPager(nil).NextPage(ctx)
	if err != nil || len(page.Segment.BlobItems) != 1 {
		t.Fatalf("list through container SAS: %v", err)
	}
	if _, err := cc.NewBlobClient("doc.txt").GetProperties(ctx, nil); err != nil {
		t.Fatal(err)
	}
	_, err = cc.NewBlockBlobClient("new.txt").Upload(ctx, nopSeeker("x"), nil)
	wantErr(t, err, 403, "AuthorizationPermissionMismatch")
	_, err = cc.SetMetadata(ctx, nil)
	wantErr(t, err, 403, "AuthorizationPermissionMismatch")

	// Create-only token: a new blob is written, an existing one is not.
	co := b.sasURL(t, "shared", window((&sas.ContainerPermissions{Create: true}).String(), ""))
	ccc, _ := container.NewClientWithNoCredential(co, nil)
	if _, err := ccc.NewBlockBlobClient("fresh.txt").Upload(ctx, nopSeeker("fresh"), nil); err != nil {
		t.Fatal(err)
	}
	_, err = ccc.NewBlockBlobClient("fresh.txt").Upload(ctx, nopSeeker("again"), nil)
	wantErr(t, err, 403, "UnauthorizedBlobOverwrite")
	if got := string(download(t, b.client, "shared", "fresh.txt")); got != "fresh" {
		t.Fatalf("create-only overwrite changed the blob: %q", got)
	}

	// Response header overrides on reads.
	ov := window("r", "doc.txt")
	ov.ContentType, ov.ContentDisposition = "text/x-override", "attachment; filename=x.txt"
	p, err := noCredBlob(t, b.sasURL(t, "shared/doc.txt", ov)).GetProperties(ctx, nil)
	if err != nil || *p.ContentType != "text/x-override" || *p.ContentDisposition != "attachment; filename=x.txt" {
		t.Fatalf("overrides: %v %v", err, p.ContentType)
	}

	// Account SAS.
	acct, err := b.client.ServiceClient().GetSASURL(sas.AccountResourceTypes{Service: true, Container: true, Object: true},
		sas.AccountPermissions{Read: true, List: true}, now.Add(time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	ac, err := azblob.NewClientWithNoCredential(acct, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ac.NewListContainersPager(nil).NextPage(ctx); err != nil {
		t.Fatalf("account SAS list containers: %v", err)
	}
	_, err = ac.CreateContainer(ctx, "nope", nil)
	wantErr(t, err, 403, "AuthorizationPermissionMismatch")
}

func splitQuery(u string) string {
	for i := range u {
		if u[i] == '?' {
			return u[i+1:]
		}
	}
	return ""
}

// TestPublicAccess: anonymous reads exactly as the container's level allows.
func TestPublicAccess(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	for name, level := range map[string]*container.PublicAccessType{"priv": nil, "blobs": to.Ptr(container.PublicAccessTypeBlob), "whole": to.Ptr(container.PublicAccessTypeContainer)} {
		if _, err := b.client.CreateContainer(ctx, name, &azblob.CreateContainerOptions{Access: level}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.client.UploadBuffer(ctx, name, "f.txt", []byte("public?"), nil); err != nil {
			t.Fatal(err)
		}
	}
	anon := func(method, path string) int {
		req, _ := http.NewRequest(method, b.serviceURL(0)+path, nil)
		resp, _ := send(t, req)
		return resp.StatusCode
	}
	tests := []struct {
		method, path string
		want         int
	}{
		{"GET", "priv/f.txt", 401},
		{"GET", "blobs/f.txt", 200},
		{"HEAD", "blobs/f.txt", 200},
		{"GET", "blobs?restype=container&comp=list", 401},
		{"GET", "whole/f.txt", 200},
		{"GET", "whole?restype=container&comp=list", 200},
		{"GET", "whole?restype=container", 200},
		{"PUT", "whole/new.txt", 401},
		{"DELETE", "whole/f.txt", 401},
		{"PUT", "whole?restype=container&comp=metadata", 401},
		{"GET", "?comp=list", 401},
	}
	for _, tt := range tests {
		if got := anon(tt.method, tt.path); got != tt.want {
			t.Errorf("anonymous %s %s: %d, want %d", tt.method, tt.path, got, tt.want)
		}
	}
	// The SDK with no credential reads a public blob.
	c, _ := azblob.NewClientWithNoCredential(b.serviceURL(0), nil)
	if got := string(download(t, c, "blobs", "f.txt")); got != "public?" {
		t.Fatalf("anonymous SDK read: %q", got)
	}
}
