package gateway_test

import (
	"context"
	"net/http"
	"reflect"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
)

// TestVersionTagsLeaseCurrent: Set Blob Tags and Get Blob Tags addressed
// to the current version by its ?versionid= take the same lease rules as
// without it: a leased blob's tags are not replaced without x-ms-lease-id
// (412 LeaseIdMissing), and a lease id that does not match the active
// lease is refused (412 LeaseIdMismatchWithBlobOperation), on Set and Get
// alike.
func TestVersionTagsLeaseCurrent(t *testing.T) {
	forKinds(t, versionKinds, func(t *testing.T, kind string) {
		_, bc, cur, _ := leasedCurrentVersion(t, kind, "vtags", &azblob.UploadBufferOptions{Tags: map[string]string{"t": "1"}})
		ctx := context.Background()
		leaseID, other := testLeaseID, otherLeaseID
		_, err := cur.SetTags(ctx, map[string]string{"t": "2"}, nil)
		wantErr(t, err, 412, "LeaseIdMissing")
		_, err = cur.SetTags(ctx, map[string]string{"t": "2"}, &blob.SetTagsOptions{AccessConditions: withLease(other)})
		wantErr(t, err, 412, "LeaseIdMismatchWithBlobOperation")
		_, err = cur.GetTags(ctx, &blob.GetTagsOptions{BlobAccessConditions: withLease(other)})
		wantErr(t, err, 412, "LeaseIdMismatchWithBlobOperation")
		if got := getTags(t, bc); !reflect.DeepEqual(got, map[string]string{"t": "1"}) {
			t.Fatalf("refused Set Blob Tags changed the tags: %v", got)
		}
		if _, err := cur.SetTags(ctx, map[string]string{"t": "3"}, &blob.SetTagsOptions{AccessConditions: withLease(leaseID)}); err != nil {
			t.Fatal(err)
		}
		resp, err := cur.GetTags(ctx, &blob.GetTagsOptions{BlobAccessConditions: withLease(leaseID)})
		if err != nil {
			t.Fatal(err)
		}
		if got := tagMap(resp.BlobTagSet); !reflect.DeepEqual(got, map[string]string{"t": "3"}) {
			t.Fatalf("tags = %v, want t=3", got)
		}
		// The lease stays on the blob.
		p := getProps(t, bc)
		if p.LeaseState == nil || *p.LeaseState != "leased" {
			t.Fatalf("lease state after Set Blob Tags = %v", p.LeaseState)
		}
	})
}

// TestCopyTagsFromRemoteSource: x-ms-copy-source-tag-option: COPY takes
// the source's tags. A source outside this gateway whose Get Blob reports
// tags (x-ms-tag-count) cannot have them copied here (its Get Blob does
// not carry them), so Put Blob From URL and Copy Blob From URL refuse it
// (501 NotImplemented) and write nothing, rather than make an untagged
// copy; a remote source without tags copies as before, with none.
func TestCopyTagsFromRemoteSource(t *testing.T) {
	forKinds(t, []string{"sqlite+disk"}, func(t *testing.T, kind string) {
		b := setup(t, kind)
		remote := setup(t, kind)
		ctx := context.Background()
		createContainers(t, remote.client, "export")
		createContainers(t, b.client, "import")
		if _, err := remote.client.UploadBuffer(ctx, "export", "tagged", []byte("tagged bytes"), &azblob.UploadBufferOptions{Tags: map[string]string{"t": "1"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := remote.client.UploadBuffer(ctx, "export", "plain", []byte("plain bytes"), nil); err != nil {
			t.Fatal(err)
		}
		tagged := withSAS(t, blockClient(remote.client, "export", "tagged").URL(), remote.cred, "export", "tagged", "r")
		plain := withSAS(t, blockClient(remote.client, "export", "plain").URL(), remote.cred, "export", "plain", "r")
		for _, form := range []struct {
			name string
			hdr  map[string]string
		}{
			{"Put Blob From URL", map[string]string{"x-ms-blob-type": "BlockBlob"}},
			{"Copy Blob From URL", map[string]string{"x-ms-requires-sync": "true"}},
		} {
			put := func(name, src string) *http.Response {
				hdr := map[string]string{"x-ms-copy-source": src, "x-ms-copy-source-tag-option": "COPY"}
				for k, v := range form.hdr {
					hdr[k] = v
				}
				resp, _ := b.do(t, "PUT", "import/"+name, "", hdr)
				return resp
			}
			wantStatus(t, put("from-tagged", tagged), 501, "NotImplemented", form.name+" COPY of a tagged remote source")
			_, err := blockClient(b.client, "import", "from-tagged").GetProperties(ctx, nil)
			wantErr(t, err, 404, "BlobNotFound")
			if resp := put("from-plain", plain); resp.StatusCode/100 != 2 {
				t.Fatalf("%s COPY of an untagged remote source: %d", form.name, resp.StatusCode)
			}
			if got := getTags(t, blockClient(b.client, "import", "from-plain")); len(got) != 0 {
				t.Fatalf("%s: tags %v", form.name, got)
			}
		}
	})
}
