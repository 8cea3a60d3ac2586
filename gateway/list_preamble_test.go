package gateway_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// TestListingPreamble pins what a listing answers before its entries: the
// EnumerationResults tag with ServiceEndpoint (List Blobs adds
// ContainerName), then the paging parameters as the request gave them
// (Prefix when present, even empty; Marker when not empty; MaxResults when
// set; List Blobs' Delimiter; Find Blobs by Tags' Where).
func TestListingPreamble(t *testing.T) {
	b := setup(t, "sqlite")
	createContainers(t, b.client, "lpre", "lpre2")
	for _, n := range []string{"a1", "a2"} {
		if _, err := b.client.UploadBuffer(t.Context(), "lpre", n, []byte(n), &azblob.UploadBufferOptions{
			Tags: map[string]string{"k": "v"}}); err != nil {
			t.Fatal(err)
		}
	}
	decl := `<?xml version="1.0" encoding="utf-8"?><EnumerationResults ServiceEndpoint="` + b.serviceURL(0) + `"`
	get := func(path string) string {
		t.Helper()
		resp, body := b.do(t, "GET", path, "", nil)
		wantStatus(t, resp, 200, "", "GET "+path)
		return body
	}
	nextMarker := func(body string) string {
		t.Helper()
		m := regexp.MustCompile(`<NextMarker>([^<]+)</NextMarker>`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no NextMarker in %s", body)
		}
		return m[1]
	}
	containerMarker := nextMarker(get("?comp=list&maxresults=1"))
	blobMarker := nextMarker(get("lpre?restype=container&comp=list&maxresults=1"))
	tests := []struct {
		path, want string
	}{
		{"?comp=list", decl + `><Containers>`},
		{"?comp=list&prefix=&maxresults=5", decl + `><Prefix /><MaxResults>5</MaxResults><Containers>`},
		{"?comp=list&prefix=lpre&marker=" + containerMarker,
			decl + `><Prefix>lpre</Prefix><Marker>` + containerMarker + `</Marker><Containers>`},
		{"lpre?restype=container&comp=list", decl + ` ContainerName="lpre"><Blobs>`},
		{"lpre?restype=container&comp=list&prefix=a&maxresults=3&delimiter=/",
			decl + ` ContainerName="lpre"><Prefix>a</Prefix><MaxResults>3</MaxResults><Delimiter>/</Delimiter><Blobs>`},
		{"lpre?restype=container&comp=list&marker=" + blobMarker,
			decl + ` ContainerName="lpre"><Marker>` + blobMarker + `</Marker><Blobs>`},
		{"?comp=blobs&where=k%3D%27v%27", decl + `><Where>k=&#39;v&#39;</Where><Blobs>`},
		{"lpre?restype=container&comp=blobs&where=k%3D%27v%27", decl + `><Where>k=&#39;v&#39;</Where><Blobs>`},
	}
	for _, tt := range tests {
		body := get(tt.path)
		if !strings.HasPrefix(body, tt.want) {
			n := min(len(body), len(tt.want)+40)
			t.Errorf("GET %s begins\n %s\nwant\n %s", tt.path, body[:n], tt.want)
		}
	}
}

// TestContainerPropsHeadersAndList: a container's lease, access and
// encryption properties read the same through Get Container Properties
// (headers) and List Containers (the Properties element, in its order).
func TestContainerPropsHeadersAndList(t *testing.T) {
	b := setup(t, "sqlite")
	createContainers(t, b.client, "plain")
	if _, err := b.client.CreateContainer(t.Context(), "leasedpub", &azblob.CreateContainerOptions{
		Access: to.Ptr(container.PublicAccessTypeBlob)}); err != nil {
		t.Fatal(err)
	}
	resp, _ := b.do(t, "PUT", "leasedpub?restype=container&comp=lease", "", map[string]string{
		"x-ms-lease-action": "acquire", "x-ms-lease-duration": "30"})
	wantStatus(t, resp, 201, "", "Lease Container")
	common := map[string]string{
		"X-Ms-Default-Encryption-Scope":                  "$account-encryption-key",
		"X-Ms-Deny-Encryption-Scope-Override":            "false",
		"X-Ms-Has-Immutability-Policy":                   "false",
		"X-Ms-Has-Legal-Hold":                            "false",
		"X-Ms-Immutable-Storage-With-Versioning-Enabled": "false",
	}
	tests := []struct {
		name    string
		headers map[string]string
		xml     string
	}{
		{"plain", map[string]string{"X-Ms-Lease-Status": "unlocked", "X-Ms-Lease-State": "available",
			"X-Ms-Lease-Duration": "", "X-Ms-Blob-Public-Access": ""},
			`<LeaseStatus>unlocked</LeaseStatus><LeaseState>available</LeaseState>`},
		{"leasedpub", map[string]string{"X-Ms-Lease-Status": "locked", "X-Ms-Lease-State": "leased",
			"X-Ms-Lease-Duration": "fixed", "X-Ms-Blob-Public-Access": "blob"},
			`<LeaseStatus>locked</LeaseStatus><LeaseState>leased</LeaseState><LeaseDuration>fixed</LeaseDuration><PublicAccess>blob</PublicAccess>`},
	}
	_, list := b.do(t, "GET", "?comp=list", "", nil)
	for _, tt := range tests {
		resp, _ := b.do(t, "HEAD", tt.name+"?restype=container", "", nil)
		wantStatus(t, resp, 200, "", "Get Container Properties "+tt.name)
		for k, v := range common {
			tt.headers[k] = v
		}
		for k, v := range tt.headers {
			if got := resp.Header.Get(k); got != v {
				t.Errorf("%s: %s = %q, want %q", tt.name, k, got, v)
			}
		}
		want := `<Name>` + tt.name + `</Name><Properties>`
		i := strings.Index(list, want)
		if i < 0 {
			t.Fatalf("List Containers has no %s: %s", tt.name, list)
		}
		props := list[i+len(want):]
		props = props[:strings.Index(props, "</Properties>")]
		props = regexp.MustCompile(`^<Last-Modified>[^<]*</Last-Modified><Etag>[^<]*</Etag>`).ReplaceAllString(props, "")
		wantXML := tt.xml + `<DefaultEncryptionScope>$account-encryption-key</DefaultEncryptionScope>` +
			`<DenyEncryptionScopeOverride>false</DenyEncryptionScopeOverride><HasImmutabilityPolicy>false</HasImmutabilityPolicy>` +
			`<HasLegalHold>false</HasLegalHold><ImmutableStorageWithVersioningEnabled>false</ImmutableStorageWithVersioningEnabled>`
		if props != wantXML {
			t.Errorf("%s: List Containers Properties\n %s\nwant\n %s", tt.name, props, wantXML)
		}
	}
}
