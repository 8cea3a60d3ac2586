package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/blobgw/blobgw/internal/config"
)

// After the cutover the applications write to the gateway; the rerun the
// README asks for must not put the older source copy back over their
// writes: a blob Put at the gateway (no import marker) is kept, and said so.
func TestImportAzureKeepsGatewayWrites(t *testing.T) {
	ctx := context.Background()
	src := newMigGateway(t, nil)
	dst := newMigGateway(t, nil)
	blobs := fillSource(t, src)
	args := []string{"import", "azure", "--source-url", src.accountSAS(t), "--dest-url", dst.url}
	runCLI(t, nil, args...).ok(t, fmt.Sprintf("copied %d, skipped 0, failed 0", len(blobs)))

	// The applications, now on the gateway.
	if _, err := dst.client.UploadBuffer(ctx, "photos", "cat.jpg", []byte("written at the gateway"), nil); err != nil {
		t.Fatal(err)
	}
	runCLI(t, nil, args...).ok(t, fmt.Sprintf("copied 0, skipped %d, failed 0", len(blobs)), "photos/cat.jpg", "kept")
	if got := string(readBlob(t, dst.client, "photos", "cat.jpg")); got != "written at the gateway" {
		t.Errorf("photos/cat.jpg = %q: the rerun replaced the gateway's write", got)
	}
}

// A blob written at the gateway between the import's look at the
// destination and its write is not replaced either: the write is
// conditional (If-None-Match: * for a blob that was not there), that copy
// fails, and the rerun keeps the gateway's blob.
func TestImportAzureConditionalWrite(t *testing.T) {
	var raced atomic.Bool
	var dstRef *migGateway
	dst := newMigGateway(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/logs/a.log") {
				if raced.CompareAndSwap(false, true) {
					if _, err := dstRef.client.UploadBuffer(context.Background(), "logs", "a.log", []byte("raced in"), nil); err != nil {
						t.Error(err)
					}
				}
			}
			h.ServeHTTP(w, r)
		})
	})
	dstRef = dst
	src := newMigGateway(t, nil)
	blobs := fillSource(t, src)
	args := []string{"import", "azure", "--source-url", src.accountSAS(t), "--dest-url", dst.url}
	runCLI(t, nil, args...).fails(t, 1, fmt.Sprintf("copied %d, skipped 0, failed 1", len(blobs)-1), "logs/a.log")
	if got := string(readBlob(t, dst.client, "logs", "a.log")); got != "raced in" {
		t.Errorf("logs/a.log = %q: the import replaced a blob written during its copy", got)
	}
	runCLI(t, nil, args...).ok(t, fmt.Sprintf("copied 0, skipped %d, failed 0", len(blobs)), "logs/a.log", "kept")
	if got := readBlob(t, dst.client, "logs", "a.log"); !bytes.Equal(got, []byte("raced in")) {
		t.Errorf("logs/a.log = %q after the rerun", got)
	}
}

// A container's public access level and stored access policies survive the
// import: anonymous reads and SAS tokens naming a policy (si) keep working
// at the gateway. A source that will not hand the policies out (Get
// Container ACL takes Shared Key, not a SAS) is named, not ignored.
func TestImportAzureContainerAccess(t *testing.T) {
	ctx := context.Background()
	src := newMigGateway(t, nil)
	start, expiry := time.Now().Add(-time.Hour).UTC().Truncate(time.Second), time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	policy := []*container.SignedIdentifier{{ID: to.Ptr("readers"), AccessPolicy: &container.AccessPolicy{
		Start: &start, Expiry: &expiry, Permission: to.Ptr("rl")}}}
	if _, err := src.client.CreateContainer(ctx, "pub", &container.CreateOptions{Access: to.Ptr(container.PublicAccessTypeBlob)}); err != nil {
		t.Fatal(err)
	}
	sc := src.client.ServiceClient().NewContainerClient("pub")
	if _, err := sc.SetAccessPolicy(ctx, &container.SetAccessPolicyOptions{Access: to.Ptr(container.PublicAccessTypeBlob), ContainerACL: policy}); err != nil {
		t.Fatal(err)
	}
	if _, err := src.client.UploadBuffer(ctx, "pub", "logo.png", []byte("png"), nil); err != nil {
		t.Fatal(err)
	}
	check := func(dst *migGateway, wantPolicies bool) {
		t.Helper()
		got, err := dst.client.ServiceClient().NewContainerClient("pub").GetAccessPolicy(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got.BlobPublicAccess == nil || *got.BlobPublicAccess != container.PublicAccessTypeBlob {
			t.Errorf("destination public access %v, want blob", got.BlobPublicAccess)
		}
		if n := len(got.SignedIdentifiers); wantPolicies && (n != 1 || deref(got.SignedIdentifiers[0].ID) != "readers" ||
			deref(got.SignedIdentifiers[0].AccessPolicy.Permission) != "rl") {
			t.Errorf("destination stored access policies %d, want the source's one", n)
		}
	}
	// An account SAS: the public access level, and a note for the policies.
	dst := newMigGateway(t, nil)
	runCLI(t, nil, "import", "azure", "--source-url", src.accountSAS(t), "--dest-url", dst.url).
		ok(t, "copied 1, skipped 0, failed 0", "pub: the source's stored access policies")
	check(dst, false)
	// Shared Key: the policies too.
	dst2 := newMigGateway(t, nil)
	runCLI(t, nil, "import", "azure", "--source-url", src.url, "--source-account", config.DevAccountName, "--source-key", config.DevAccountKey, "--dest-url", dst2.url).
		ok(t, "copied 1, skipped 0, failed 0")
	check(dst2, true)
}

// Blob index tags leave with the blob as S3 object tags.
func TestExportS3Tags(t *testing.T) {
	ctx := context.Background()
	bucket := startExportBucket(t)
	src := newMigGateway(t, nil)
	if _, err := src.client.CreateContainer(ctx, "tagged", nil); err != nil {
		t.Fatal(err)
	}
	tags := map[string]string{"project": "x y", "n": "1"}
	if _, err := src.client.UploadBuffer(ctx, "tagged", "a.txt", []byte("a"), &blockblob.UploadBufferOptions{Tags: tags}); err != nil {
		t.Fatal(err)
	}
	runCLI(t, nil, bucket.exportArgs(src)...).ok(t, "copied 1, skipped 0, failed 0")
	got, err := bucket.srv.Client().GetObjectTagging(ctx, &awss3.GetObjectTaggingInput{Bucket: &bucket.cfg.Bucket, Key: to.Ptr("gw/tagged/a.txt")})
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]string{}
	for _, tg := range got.TagSet {
		have[deref(tg.Key)] = deref(tg.Value)
	}
	if !maps.Equal(have, tags) {
		t.Errorf("object tags %v, want the blob's %v", have, tags)
	}
}
