package gateway_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
)

// TestVersionsOnlyEntryShape: the List Blobs include=deletedwithversions
// entry of a name whose current version was deleted has the shape the
// service answers (as recorded from Azure): HasVersionsOnly right after
// Name, then the Properties of the newest version (its Etag, length and
// content type) with LeaseStatus unlocked and LeaseState available, and no
// VersionId, IsCurrentVersion or Deleted. Before, HasVersionsOnly came
// last and the lease elements were left out.
func TestVersionsOnlyEntryShape(t *testing.T) {
	b, cc := setupVersioned(t, "sqlite", "shape")
	ctx := context.Background()
	bb := cc.NewBlockBlobClient("v")
	if _, err := bb.UploadBuffer(ctx, randBytes(100, 1), &blockblob.UploadBufferOptions{HTTPHeaders: &blob.HTTPHeaders{BlobContentType: to.Ptr("text/old")}}); err != nil {
		t.Fatal(err)
	}
	newest, err := bb.UploadBuffer(ctx, randBytes(200, 2), &blockblob.UploadBufferOptions{HTTPHeaders: &blob.HTTPHeaders{BlobContentType: to.Ptr("text/new")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bb.Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}
	resp, body := b.do(t, "GET", "shape?restype=container&comp=list&include=deletedwithversions", "", nil)
	wantStatus(t, resp, 200, "", "list")
	m := regexp.MustCompile(`<Blob><Name>v</Name><HasVersionsOnly>true</HasVersionsOnly><Properties>(.*?)</Properties>(.*?)</Blob>`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no <Blob><Name>v</Name><HasVersionsOnly>true</HasVersionsOnly><Properties> entry in\n%s", body)
	}
	props, rest := m[1], m[2]
	for _, want := range []string{
		"<Etag>" + strings.Trim(string(*newest.ETag), `"`) + "</Etag>",
		"<Content-Length>200</Content-Length>",
		"<Content-Type>text/new</Content-Type>",
		"<LeaseStatus>unlocked</LeaseStatus><LeaseState>available</LeaseState>",
	} {
		if !strings.Contains(props, want) {
			t.Errorf("Properties lack %s:\n%s", want, props)
		}
	}
	for _, not := range []string{"<VersionId>", "<IsCurrentVersion>", "<Deleted>", "<HasVersionsOnly>"} {
		if strings.Contains(props+rest, not) {
			t.Errorf("entry holds %s:\n%s", not, m[0])
		}
	}
}
