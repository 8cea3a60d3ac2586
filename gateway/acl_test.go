package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
)

// policySASClient returns a container client authorized only by a SAS
// that names the stored access policy id (no sp, st or se of its own).
func policySASClient(t *testing.T, b *bundle, cont, id string) *container.Client {
	t.Helper()
	u := b.sasURL(t, cont, sas.BlobSignatureValues{Protocol: sas.ProtocolHTTPSandHTTP, ContainerName: cont, Identifier: id})
	if strings.Contains(u, "sp=") || strings.Contains(u, "se=") {
		t.Fatalf("policy SAS carries its own permissions or expiry: %s", u)
	}
	c, err := container.NewClientWithNoCredential(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func storedPolicy(id string, start, expiry time.Time, perm string) *container.SignedIdentifier {
	ap := &container.AccessPolicy{Permission: to.Ptr(perm)}
	if !start.IsZero() {
		ap.Start = to.Ptr(start)
	}
	if !expiry.IsZero() {
		ap.Expiry = to.Ptr(expiry)
	}
	return &container.SignedIdentifier{ID: to.Ptr(id), AccessPolicy: ap}
}

// TestStoredAccessPolicies: a SAS naming a stored access policy (si only)
// takes the policy's permissions and window; changing the policy changes
// what the token may do, removing it revokes the token; at most 5
// identifiers; Get Container ACL returns what was set.
func TestStoredAccessPolicies(t *testing.T) {
	// Stored policies live in the metadata store: each store, one backend.
	forKinds(t, []string{"sqlite", "postgres"}, testStoredAccessPolicies)
}

func testStoredAccessPolicies(t *testing.T, kind string) {
	b := setup(t, kind)
	ctx := context.Background()
	createContainers(t, b.client, "pol")
	if _, err := b.client.UploadBuffer(ctx, "pol", "doc.txt", []byte("policy"), nil); err != nil {
		t.Fatal(err)
	}
	cc := b.client.ServiceClient().NewContainerClient("pol")
	now := time.Now().UTC().Truncate(time.Second)

	// Read + list for now±1h.
	if _, err := cc.SetAccessPolicy(ctx, &container.SetAccessPolicyOptions{
		ContainerACL: []*container.SignedIdentifier{storedPolicy("readers", now.Add(-time.Hour), now.Add(time.Hour), "rl")},
	}); err != nil {
		t.Fatal(err)
	}
	got, err := cc.GetAccessPolicy(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.SignedIdentifiers) != 1 {
		t.Fatalf("GetAccessPolicy: %d identifiers, want 1", len(got.SignedIdentifiers))
	}
	si := got.SignedIdentifiers[0]
	if *si.ID != "readers" || *si.AccessPolicy.Permission != "rl" ||
		!si.AccessPolicy.Start.Equal(now.Add(-time.Hour)) || !si.AccessPolicy.Expiry.Equal(now.Add(time.Hour)) {
		t.Fatalf("GetAccessPolicy round trip: id %s perm %s start %v expiry %v", *si.ID, *si.AccessPolicy.Permission, si.AccessPolicy.Start, si.AccessPolicy.Expiry)
	}

	pc := policySASClient(t, b, "pol", "readers")
	page, err := pc.NewListBlobsFlatPager(nil).NextPage(ctx)
	if err != nil || len(page.Segment.BlobItems) != 1 {
		t.Fatalf("list through policy SAS: %v", err)
	}
	resp, err := pc.NewBlobClient("doc.txt").DownloadStream(ctx, nil)
	if err != nil {
		t.Fatalf("read through policy SAS: %v", err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(data) != "policy" {
		t.Fatalf("read through policy SAS: %q", data)
	}
	_, err = pc.NewBlockBlobClient("new.txt").Upload(ctx, nopSeeker("x"), nil)
	wantErr(t, err, 403, "AuthorizationPermissionMismatch")
	_, err = pc.NewBlobClient("doc.txt").Delete(ctx, nil)
	wantErr(t, err, 403, "AuthorizationPermissionMismatch")

	// The token may not repeat a field the policy sets.
	dup := b.sasURL(t, "pol", sas.BlobSignatureValues{Protocol: sas.ProtocolHTTPSandHTTP, ContainerName: "pol", Identifier: "readers", Permissions: "r"})
	dc, _ := container.NewClientWithNoCredential(dup, nil)
	_, err = dc.NewBlobClient("doc.txt").GetProperties(ctx, nil)
	wantErr(t, err, 403, "AuthenticationFailed")

	// Write-only now: the same token writes and no longer reads.
	if _, err := cc.SetAccessPolicy(ctx, &container.SetAccessPolicyOptions{
		ContainerACL: []*container.SignedIdentifier{storedPolicy("readers", now.Add(-time.Hour), now.Add(time.Hour), "w")},
	}); err != nil {
		t.Fatal(err)
	}
	_, err = pc.NewBlobClient("doc.txt").GetProperties(ctx, nil)
	wantErr(t, err, 403, "AuthorizationPermissionMismatch")
	_, err = pc.NewListBlobsFlatPager(nil).NextPage(ctx)
	wantErr(t, err, 403, "AuthorizationPermissionMismatch")
	if _, err := pc.NewBlockBlobClient("written.txt").Upload(ctx, nopSeeker("by policy"), nil); err != nil {
		t.Fatalf("write through write-only policy: %v", err)
	}

	// An expired policy window refuses the token.
	if _, err := cc.SetAccessPolicy(ctx, &container.SetAccessPolicyOptions{
		ContainerACL: []*container.SignedIdentifier{storedPolicy("readers", now.Add(-2*time.Hour), now.Add(-time.Hour), "rl")},
	}); err != nil {
		t.Fatal(err)
	}
	_, err = pc.NewBlobClient("doc.txt").GetProperties(ctx, nil)
	wantErr(t, err, 403, "AuthenticationFailed")

	// Removing every policy revokes the token.
	if _, err := cc.SetAccessPolicy(ctx, nil); err != nil {
		t.Fatal(err)
	}
	_, err = pc.NewBlobClient("doc.txt").GetProperties(ctx, nil)
	wantErr(t, err, 403, "AuthenticationFailed")
	got, err = cc.GetAccessPolicy(ctx, nil)
	if err != nil || len(got.SignedIdentifiers) != 0 {
		t.Fatalf("after removing policies: %d identifiers, %v", len(got.SignedIdentifiers), err)
	}

	// Five identifiers are fine, six are 400 InvalidXmlDocument.
	var five []*container.SignedIdentifier
	for i := 0; i < 6; i++ {
		five = append(five, storedPolicy(fmt.Sprintf("p%d", i), time.Time{}, now.Add(time.Hour), "r"))
	}
	_, err = cc.SetAccessPolicy(ctx, &container.SetAccessPolicyOptions{ContainerACL: five})
	wantErr(t, err, 400, "InvalidXmlDocument")
	if _, err := cc.SetAccessPolicy(ctx, &container.SetAccessPolicyOptions{
		ContainerACL: five[:5], Access: to.Ptr(container.PublicAccessTypeBlob),
	}); err != nil {
		t.Fatal(err)
	}
	got, err = cc.GetAccessPolicy(ctx, nil)
	if err != nil || len(got.SignedIdentifiers) != 5 || got.BlobPublicAccess == nil || *got.BlobPublicAccess != container.PublicAccessTypeBlob {
		t.Fatalf("five identifiers with public access: %+v %v", got, err)
	}
	for i, si := range got.SignedIdentifiers {
		if *si.ID != fmt.Sprintf("p%d", i) || si.AccessPolicy.Start != nil || !si.AccessPolicy.Expiry.Equal(now.Add(time.Hour)) {
			t.Fatalf("identifier %d: %s start %v expiry %v", i, *si.ID, si.AccessPolicy.Start, si.AccessPolicy.Expiry)
		}
	}
	// Policies survive other container writes (metadata, leases).
	if _, err := cc.SetMetadata(ctx, &container.SetMetadataOptions{Metadata: map[string]*string{"k": to.Ptr("v")}}); err != nil {
		t.Fatal(err)
	}
	if got, err = cc.GetAccessPolicy(ctx, nil); err != nil || len(got.SignedIdentifiers) != 5 {
		t.Fatalf("after Set Container Metadata: %d identifiers, %v", len(got.SignedIdentifiers), err)
	}
	// A token naming p0 (expiry from the policy, permission r) reads.
	if _, err := policySASClient(t, b, "pol", "p0").NewBlobClient("doc.txt").GetProperties(ctx, nil); err != nil {
		t.Fatalf("read through p0: %v", err)
	}
	// An unknown identifier is refused.
	_, err = policySASClient(t, b, "pol", "nope").NewBlobClient("doc.txt").GetProperties(ctx, nil)
	wantErr(t, err, 403, "AuthenticationFailed")
}

// TestSetContainerACLValidation: hand-built bodies the SDK will not send.
func TestSetContainerACLValidation(t *testing.T) {
	b := setup(t, "sqlite")
	createContainers(t, b.client, "val")
	put := func(body string, hdr map[string]string) *http.Response {
		t.Helper()
		resp, _ := b.do(t, http.MethodPut, "val?restype=container&comp=acl", body, hdr)
		return resp
	}
	ident := func(id, start, expiry, perm string) string {
		return "<SignedIdentifier><Id>" + id + "</Id><AccessPolicy><Start>" + start + "</Start><Expiry>" + expiry +
			"</Expiry><Permission>" + perm + "</Permission></AccessPolicy></SignedIdentifier>"
	}
	doc := func(ids ...string) string {
		return `<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers>` + strings.Join(ids, "") + `</SignedIdentifiers>`
	}
	tests := []struct {
		name, body string
		status     int
		code       string
	}{
		{"seven-digit fraction", doc(ident("a", "2024-01-01T00:00:00.0000000Z", "2099-01-01T00:00:00.1234567Z", "rl")), 200, ""},
		{"date only, minutes", doc(ident("a", "2024-01-01", "2099-01-01T10:00Z", "racwdl")), 200, ""},
		{"no access policy", doc("<SignedIdentifier><Id>bare</Id></SignedIdentifier>"), 200, ""},
		{"empty body clears", "", 200, ""},
		{"64 chars", doc(ident(strings.Repeat("x", 64), "", "", "r")), 200, ""},
		{"65 chars", doc(ident(strings.Repeat("x", 65), "", "", "r")), 400, "InvalidXmlDocument"},
		{"empty id", doc(ident("", "", "", "r")), 400, "InvalidXmlDocument"},
		{"duplicate id", doc(ident("a", "", "", "r"), ident("a", "", "", "w")), 400, "InvalidXmlDocument"},
		{"bad time", doc(ident("a", "yesterday", "", "r")), 400, "InvalidXmlDocument"},
		{"offset time", doc(ident("a", "", "2099-01-01T00:00:00+01:00", "r")), 400, "InvalidXmlDocument"},
		{"bad permission", doc(ident("a", "", "", "rz")), 400, "InvalidXmlDocument"},
		{"six", doc(ident("1", "", "", "r"), ident("2", "", "", "r"), ident("3", "", "", "r"), ident("4", "", "", "r"), ident("5", "", "", "r"), ident("6", "", "", "r")), 400, "InvalidXmlDocument"},
		{"not xml", "<SignedIdentifiers>", 400, "InvalidXmlDocument"},
	}
	for _, tt := range tests {
		resp := put(tt.body, nil)
		if d := statusDiff(resp, tt.status, tt.code); d != "" {
			t.Errorf("%s: %s", tt.name, d)
		}
	}

	// Times come back in Azure's seven-digit form, and the lease id must
	// match an active lease when given.
	if resp := put(doc(ident("t", "2024-01-01T00:00Z", "2099-01-01T00:00:00.1234567Z", "rl")), nil); resp.StatusCode != 200 {
		t.Fatalf("set: %d", resp.StatusCode)
	}
	resp, body := b.do(t, http.MethodGet, "val?restype=container&comp=acl", "", nil)
	want := `<SignedIdentifiers><SignedIdentifier><Id>t</Id><AccessPolicy><Start>2024-01-01T00:00:00.0000000Z</Start>` +
		`<Expiry>2099-01-01T00:00:00.1234567Z</Expiry><Permission>rl</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>`
	if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
		t.Fatalf("Get Container ACL: %d %s", resp.StatusCode, body)
	}
	wantStatus(t, put("", map[string]string{"x-ms-lease-id": "0f8fad5b-d9cb-469f-a165-70867728950e"}), 412, "LeaseNotPresentWithContainerOperation", "lease id on an unleased container")
	// ETag conditions are not supported on containers; date conditions are.
	if resp := put("", map[string]string{"If-Match": "*"}); resp.StatusCode != 400 {
		t.Fatalf("If-Match on Set Container ACL: %d", resp.StatusCode)
	}
	if resp := put("", map[string]string{"If-Unmodified-Since": "Mon, 01 Jan 2001 00:00:00 GMT"}); resp.StatusCode != 412 {
		t.Fatalf("If-Unmodified-Since in the past: %d", resp.StatusCode)
	}
}
