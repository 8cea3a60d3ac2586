package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
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
