package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/google/uuid"
)

// TestContainerIfTagsRefused: the container operations that take
// conditions (Lease Container, Set Container Metadata, Set Container ACL,
// Delete Container) take If-Modified-Since / If-Unmodified-Since only; a
// tag condition (x-ms-if-tags) names blob tags a container has none of,
// and is 400 ConditionHeadersNotSupported, as If-Match is, with nothing
// changed: it was ignored, so the operation ran unguarded.
func TestContainerIfTagsRefused(t *testing.T) {
	forKinds(t, []string{"sqlite", "postgres"}, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "guarded")
		cc := b.client.ServiceClient().NewContainerClient("guarded")
		before, err := cc.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		tagCond := map[string]string{"x-ms-if-tags": `"project" = 'none'`}
		with := func(extra map[string]string) map[string]string {
			h := map[string]string{"x-ms-if-tags": tagCond["x-ms-if-tags"]}
			for k, v := range extra {
				h[k] = v
			}
			return h
		}
		for _, tc := range []struct {
			what, method, path, body string
			hdr                      map[string]string
		}{
			{"Lease Container", "PUT", "guarded?restype=container&comp=lease", "",
				with(map[string]string{"x-ms-lease-action": "acquire", "x-ms-lease-duration": "-1", "x-ms-proposed-lease-id": uuid.NewString()})},
			{"Set Container Metadata", "PUT", "guarded?restype=container&comp=metadata", "", with(map[string]string{"x-ms-meta-k": "v"})},
			{"Set Container ACL", "PUT", "guarded?restype=container&comp=acl", "", with(map[string]string{"x-ms-blob-public-access": "container"})},
			{"Delete Container", "DELETE", "guarded?restype=container", "", tagCond},
		} {
			resp, body := b.do(t, tc.method, tc.path, tc.body, tc.hdr)
			wantStatus(t, resp, http.StatusBadRequest, "ConditionHeadersNotSupported", tc.what+" with x-ms-if-tags")
			if !strings.Contains(body, "<HeaderName>x-ms-if-tags</HeaderName>") {
				t.Errorf("%s: the refusal does not name x-ms-if-tags: %s", tc.what, body)
			}
		}
		after, err := cc.GetProperties(ctx, nil)
		if err != nil {
			t.Fatalf("the container must still exist: %v", err)
		}
		if *after.ETag != *before.ETag || *after.LeaseState != lease.StateTypeAvailable || after.BlobPublicAccess != nil || len(after.Metadata) != 0 {
			t.Fatalf("a refused request changed the container: etag %s -> %s, lease %s, access %v, metadata %v",
				*before.ETag, *after.ETag, *after.LeaseState, after.BlobPublicAccess, after.Metadata)
		}
		// The date conditions the operations take are still evaluated.
		if _, err := cc.SetMetadata(ctx, &container.SetMetadataOptions{Metadata: map[string]*string{"k": to.Ptr("v")},
			ModifiedAccessConditions: &container.ModifiedAccessConditions{IfModifiedSince: to.Ptr(after.LastModified.AddDate(-1, 0, 0))}}); err != nil {
			t.Fatal(err)
		}
	})
}

// failingPlainConditions are If-Match, If-None-Match, If-Modified-Since
// and If-Unmodified-Since, each failing on any blob: what an operation
// that takes none of them must refuse rather than ignore.
var failingPlainConditions = map[string]string{
	"If-Match":            `"0x8D000000DEADBEE"`,
	"If-None-Match":       "*",
	"If-Modified-Since":   "Fri, 01 Jan 2100 00:00:00 GMT",
	"If-Unmodified-Since": "Mon, 01 Jan 1990 00:00:00 GMT",
}

// TestBlobConditionsOutsideOperationRefused: Set Blob Tier takes
// x-ms-if-tags alone, Put Block, Put Block From URL and Undelete Blob no
// condition at all; If-Match, If-None-Match, If-Modified-Since or
// If-Unmodified-Since sent to these writes is 400
// ConditionHeadersNotSupported naming the header, never ignored (the tier
// changed, the block was staged, although the condition failed). Get
// Block List, a read, still answers them: a browser revalidating a cached
// GET adds them.
func TestBlobConditionsOutsideOperationRefused(t *testing.T) {
	forKinds(t, []string{"sqlite", "postgres"}, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "only")
		b.setRetention(t, 2)
		if _, err := b.client.UploadBuffer(ctx, "only", "b", []byte("bytes"), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := b.client.UploadBuffer(ctx, "only", "gone", []byte("gone"), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := b.client.DeleteBlob(ctx, "only", "gone", nil); err != nil {
			t.Fatal(err)
		}
		bc := blockClient(b.client, "only", "b")
		failing := failingPlainConditions
		src := b.serviceURL(0) + "only/b"
		for name, value := range failing {
			for _, tc := range []struct {
				what, method, path, body string
				hdr                      map[string]string
			}{
				{"Set Blob Tier", "PUT", "only/b?comp=tier", "", map[string]string{"x-ms-access-tier": "Cool"}},
				{"Put Block", "PUT", "only/b?comp=block&blockid=YmxvY2sx", "xyz", nil},
				{"Put Block From URL", "PUT", "only/b?comp=block&blockid=YmxvY2sx", "", map[string]string{"x-ms-copy-source": src}},
				{"Undelete Blob", "PUT", "only/gone?comp=undelete", "", nil},
			} {
				hdr := map[string]string{name: value}
				for k, v := range tc.hdr {
					hdr[k] = v
				}
				resp, body := b.do(t, tc.method, tc.path, tc.body, hdr)
				wantStatus(t, resp, http.StatusBadRequest, "ConditionHeadersNotSupported", tc.what+" with "+name)
				if !strings.Contains(body, "<HeaderName>"+name+"</HeaderName>") {
					t.Errorf("%s: the refusal does not name %s: %s", tc.what, name, body)
				}
			}
		}
		p, err := bc.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if p.AccessTier != nil && *p.AccessTier != string(blob.AccessTierHot) {
			t.Fatalf("a refused Set Blob Tier changed the tier to %s", *p.AccessTier)
		}
		bl, err := bc.GetBlockList(ctx, blockblob.BlockListTypeUncommitted, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(bl.UncommittedBlocks) != 0 {
			t.Fatalf("a refused Put Block staged %d blocks", len(bl.UncommittedBlocks))
		}
		if _, err := blockClient(b.client, "only", "gone").GetProperties(ctx, nil); statusOf(err) != http.StatusNotFound {
			t.Fatalf("a refused Undelete Blob restored the blob: %v", err)
		}
		// What the operations do take still works: x-ms-if-tags on Set
		// Blob Tier is evaluated (no tags: 412).
		resp, _ := b.do(t, "PUT", "only/b?comp=tier", "", map[string]string{"x-ms-access-tier": "Cool", "x-ms-if-tags": `"k" = 'v'`})
		wantStatus(t, resp, http.StatusPreconditionFailed, "ConditionNotMet", "Set Blob Tier with a failing x-ms-if-tags")
		resp, _ = b.do(t, "PUT", "only/b?comp=block&blockid=YmxvY2sx", "xyz", nil)
		wantStatus(t, resp, http.StatusCreated, "", "Put Block without conditions")
		resp, _ = b.do(t, "GET", "only/b?comp=blocklist", "", map[string]string{"If-None-Match": "*", "If-Modified-Since": failing["If-Modified-Since"]})
		wantStatus(t, resp, http.StatusOK, "", "Get Block List with a browser's revalidation headers")
	})
}
