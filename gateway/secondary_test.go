package gateway_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
	"github.com/blobgw/blobgw/internal/config"
)

// secondaryClient is an SDK client for the account's secondary endpoint
// (path form <host>/<account>-secondary/), signed with cred.
func secondaryClient(t *testing.T, b *bundle, cred *azblob.SharedKeyCredential) *azblob.Client {
	t.Helper()
	c, err := azblob.NewClientWithSharedKeyCredential(b.servers[0].URL+"/"+config.DevAccountName+"-secondary/", cred, &azblob.ClientOptions{
		ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestServiceStatsSecondary: Get Blob Service Stats at <account>-secondary
// answers GeoReplication live with a LastSyncTime from the database clock
// (before: 501 NotImplemented); at the primary 400
// InvalidQueryParameterValue, as Azure answers.
func TestServiceStatsSecondary(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		sec := secondaryClient(t, b, b.cred)
		before := time.Now().Add(-time.Second).Truncate(time.Second)
		st, err := sec.ServiceClient().GetStatistics(ctx, nil)
		after := time.Now().Add(time.Second)
		if err != nil {
			t.Fatal(err)
		}
		g := st.GeoReplication
		if g == nil || g.Status == nil || *g.Status != service.BlobGeoReplicationStatusLive {
			t.Fatalf("GeoReplication %+v, want status live", g)
		}
		if g.LastSyncTime == nil || g.LastSyncTime.Before(before) || g.LastSyncTime.After(after) {
			t.Errorf("LastSyncTime %v, want the clock of the call (%v .. %v)", g.LastSyncTime, before, after)
		}
		_, err = b.client.ServiceClient().GetStatistics(ctx, nil)
		wantErr(t, err, 400, "InvalidQueryParameterValue")
	})
}

// TestSecondaryEndpoint: <account>-secondary reads the primary's data
// (read-access geo-redundant storage) and refuses writes with 403
// InsufficientAccountPermissions, storing nothing (before: 404
// ResourceNotFound for every request). Shared Key names the primary
// account; naming the secondary is 403 AuthenticationFailed. The host
// form <account>-secondary.blob... works too.
func TestSecondaryEndpoint(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "geo")
	if _, err := b.client.UploadBuffer(ctx, "geo", "a.txt", []byte("replicated"), nil); err != nil {
		t.Fatal(err)
	}
	sec := secondaryClient(t, b, b.cred)

	// Reads.
	resp, err := sec.DownloadStream(ctx, "geo", "a.txt", nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(got) != "replicated" {
		t.Errorf("Get Blob at the secondary: %q, %v", got, err)
	}
	pager := sec.NewListBlobsFlatPager("geo", nil)
	page, err := pager.NextPage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Segment.BlobItems) != 1 || *page.Segment.BlobItems[0].Name != "a.txt" {
		t.Errorf("List Blobs at the secondary: %d items", len(page.Segment.BlobItems))
	}
	if _, err := sec.ServiceClient().NewContainerClient("geo").NewBlobClient("a.txt").GetProperties(ctx, nil); err != nil {
		t.Errorf("Get Blob Properties at the secondary: %v", err)
	}

	// Writes are refused and store nothing.
	_, err = sec.UploadBuffer(ctx, "geo", "b.txt", []byte("x"), nil)
	wantErr(t, err, 403, "InsufficientAccountPermissions")
	_, err = b.client.ServiceClient().NewContainerClient("geo").NewBlobClient("b.txt").GetProperties(ctx, nil)
	wantErr(t, err, 404, "BlobNotFound")
	_, err = sec.CreateContainer(ctx, "geo2", nil)
	wantErr(t, err, 403, "InsufficientAccountPermissions")
	_, err = b.client.ServiceClient().NewContainerClient("geo2").GetProperties(ctx, nil)
	wantErr(t, err, 404, "ContainerNotFound")
	_, err = sec.DeleteBlob(ctx, "geo", "a.txt", nil)
	wantErr(t, err, 403, "InsufficientAccountPermissions")
	_, err = sec.ServiceClient().NewContainerClient("geo").NewBlobClient("a.txt").SetMetadata(ctx, map[string]*string{"k": to.Ptr("v")}, nil)
	wantErr(t, err, 403, "InsufficientAccountPermissions")
	if _, err := b.client.ServiceClient().NewContainerClient("geo").NewBlobClient("a.txt").GetProperties(ctx, nil); err != nil {
		t.Errorf("the blob after refused writes at the secondary: %v", err)
	}

	// Shared Key names the primary account, never the secondary.
	secCred, err := azblob.NewSharedKeyCredential(config.DevAccountName+"-secondary", config.DevAccountKey)
	if err != nil {
		t.Fatal(err)
	}
	_, err = secondaryClient(t, b, secCred).ServiceClient().GetStatistics(ctx, nil)
	wantErr(t, err, 403, "AuthenticationFailed")

	// A SAS is signed for the primary's resources and serves reads at
	// the secondary; a write SAS writes nothing there.
	blobSAS, err := b.client.ServiceClient().NewContainerClient("geo").NewBlobClient("a.txt").GetSASURL(
		sas.BlobPermissions{Read: true, Write: true, Create: true}, time.Now().Add(time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	secSAS := strings.Replace(blobSAS, "/"+config.DevAccountName+"/", "/"+config.DevAccountName+"-secondary/", 1)
	sresp, err := http.Get(secSAS)
	if err != nil {
		t.Fatal(err)
	}
	sbody, _ := io.ReadAll(sresp.Body)
	sresp.Body.Close()
	if sresp.StatusCode != 200 || string(sbody) != "replicated" {
		t.Errorf("SAS read at the secondary: %d %q", sresp.StatusCode, sbody)
	}
	preq, _ := http.NewRequest(http.MethodPut, secSAS, strings.NewReader("overwritten"))
	preq.Header.Set("x-ms-blob-type", "BlockBlob")
	presp, _ := send(t, preq)
	wantStatus(t, presp, 403, "InsufficientAccountPermissions", "SAS write at the secondary")
	dl, err := b.client.DownloadStream(ctx, "geo", "a.txt", nil)
	if err != nil {
		t.Fatal(err)
	}
	kept, _ := io.ReadAll(dl.Body)
	dl.Body.Close()
	if string(kept) != "replicated" {
		t.Errorf("after a refused SAS write at the secondary the blob holds %q", kept)
	}

	// Host form: <account>-secondary.blob.<domain>, signed for /<account>/.
	req, _ := http.NewRequest(http.MethodGet, b.servers[0].URL+"/?restype=service&comp=stats", nil)
	req.Host = config.DevAccountName + "-secondary.blob.core.windows.net"
	b.sign(t, req)
	hresp, body := send(t, req)
	wantStatus(t, hresp, 200, "", "Get Blob Service Stats, host form")
	if !strings.Contains(string(body), "<Status>live</Status>") {
		t.Errorf("host form body %q", body)
	}
}

// TestUserDelegationKeySharedKey: Get User Delegation Key with Shared Key is
// 403 AuthenticationFailed "Only authentication scheme Bearer is
// supported", as Azure answers a caller without an Entra ID token
// (before: 501 NotImplemented), whatever the KeyInfo; a SAS obtains no
// key either, and a Bearer header is not a credential the gateway
// verifies.
func TestUserDelegationKeySharedKey(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	start, expiry := time.Now().UTC().Format(time.RFC3339), time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	_, err := b.client.ServiceClient().GetUserDelegationCredential(ctx, service.KeyInfo{Start: &start, Expiry: &expiry}, nil)
	wantErr(t, err, 403, "AuthenticationFailed")
	if !strings.Contains(err.Error(), "Only authentication scheme Bearer is supported") {
		t.Errorf("no Bearer detail: %v", err)
	}
	for _, body := range []string{"<KeyInfo><Start>", "", "<KeyInfo><Expiry>not a time</Expiry></KeyInfo>"} {
		resp, got := b.do(t, "POST", "?restype=service&comp=userdelegationkey", body, map[string]string{"Content-Type": "application/xml"})
		wantStatus(t, resp, 403, "AuthenticationFailed", "KeyInfo "+body)
		if !strings.Contains(got, "<AuthenticationErrorDetail>Only authentication scheme Bearer is supported</AuthenticationErrorDetail>") {
			t.Errorf("KeyInfo %q: body %q", body, got)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, b.serviceURL(0)+"?restype=service&comp=userdelegationkey",
		strings.NewReader("<KeyInfo><Start>"+start+"</Start><Expiry>"+expiry+"</Expiry></KeyInfo>"))
	req.Header.Set("Authorization", "Bearer eyJ0eXAiOiJKV1QifQ.e30.c2ln")
	req.Header.Set("x-ms-version", "2025-11-05")
	resp, _ := send(t, req)
	wantStatus(t, resp, 400, "InvalidAuthenticationInfo", "Bearer")
}
