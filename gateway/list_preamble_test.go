package gateway_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
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
