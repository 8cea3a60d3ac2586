package gateway_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
	"github.com/blobgw/blobgw/gateway"
)

// edgeKinds are the stores the edge checks run against: they refuse before
// any byte moves, so the disk backend is enough.
var edgeKinds = []string{"sqlite+disk", "postgres+disk"}

// accountState renders everything a request could have stored in the dev
// account: containers with metadata, blobs (snapshots and names with only
// staged blocks too) with ETag, metadata and tags, and the service
// properties. Two equal renderings mean nothing was stored in between.
func (b *bundle) accountState(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	var out []string
	props, err := b.client.ServiceClient().GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, fmt.Sprintf("service delete=%v static=%v", enabled(props.DeleteRetentionPolicy), enabled(props.StaticWebsite)))
	pager := b.client.NewListContainersPager(&azblob.ListContainersOptions{Include: azblob.ListContainersInclude{Metadata: true}})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range page.ContainerItems {
			out = append(out, fmt.Sprintf("container %s etag=%s meta=%s", *c.Name, *c.Properties.ETag, metaString(c.Metadata)))
			bp := b.client.ServiceClient().NewContainerClient(*c.Name).NewListBlobsFlatPager(&container.ListBlobsFlatOptions{
				Include: container.ListBlobsInclude{Metadata: true, Tags: true, Snapshots: true, UncommittedBlobs: true}})
			for bp.More() {
				page, err := bp.NextPage(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, it := range page.Segment.BlobItems {
					line := fmt.Sprintf("  blob %s snap=%s etag=%v meta=%s", *it.Name, deref(it.Snapshot), deref(it.Properties.ETag), metaString(it.Metadata))
					if it.BlobTags != nil {
						for _, tg := range it.BlobTags.BlobTagSet {
							line += fmt.Sprintf(" tag %s=%s", *tg.Key, *tg.Value)
						}
					}
					out = append(out, line)
				}
			}
		}
	}
	return strings.Join(out, "\n")
}

func enabled[T interface {
	*service.RetentionPolicy | *service.StaticWebsite
}](p T) bool {
	switch v := any(p).(type) {
	case *service.RetentionPolicy:
		return v != nil && deref(v.Enabled)
	case *service.StaticWebsite:
		return v != nil && deref(v.Enabled)
	}
	return false
}

func metaString(m map[string]*string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var s []string
	for _, k := range keys {
		s = append(s, k+"="+deref(m[k]))
	}
	return strings.Join(s, ",")
}

// fillEdge makes the state the edge tests compare against: container edge
// with metadata, blob keep with metadata and tags, a snapshot of it. It
// returns the container's client.
func (b *bundle) fillEdge(t *testing.T) *container.Client {
	t.Helper()
	ctx := context.Background()
	if _, err := b.client.CreateContainer(ctx, "edge", &azblob.CreateContainerOptions{Metadata: map[string]*string{"m": to.Ptr("v")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.client.UploadBuffer(ctx, "edge", "keep", []byte("kept"), &azblob.UploadBufferOptions{
		Metadata: map[string]*string{"m": to.Ptr("v")}, Tags: map[string]string{"t": "1"}}); err != nil {
		t.Fatal(err)
	}
	cc := b.client.ServiceClient().NewContainerClient("edge")
	if _, err := cc.NewBlobClient("keep").CreateSnapshot(ctx, nil); err != nil {
		t.Fatal(err)
	}
	return cc
}

// TestInvalidUTF8Refused: every place a client string reaches the store
// refuses text that is not UTF-8 with 400 and the service's code, on both
// stores, and nothing is stored. Before, these answered 500 InternalError
// (SDKs retry those) or, for metadata values, stored U+FFFD instead.
func TestInvalidUTF8Refused(t *testing.T) {
	const bad = "\xff\xfe"
	tagsXML := "<?xml version=\"1.0\" encoding=\"utf-8\"?><Tags><TagSet><Tag><Key>k</Key><Value>" + bad + "</Value></Tag></TagSet></Tags>"
	blockList := "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList></BlockList>"
	forKinds(t, edgeKinds, func(t *testing.T, kind string) {
		b := setup(t, kind)
		b.fillEdge(t)
		src := b.serviceURL(0) + "edge/keep"
		cases := []struct {
			name, method, path, body string
			hdr                      map[string]string
			status                   int
			code                     string
		}{
			{"Put Blob name", "PUT", "edge/%ff%fe", "x", map[string]string{"x-ms-blob-type": "BlockBlob"}, 400, "InvalidResourceName"},
			{"Put Blob name inside", "PUT", "edge/dir/a%ffb", "x", map[string]string{"x-ms-blob-type": "BlockBlob"}, 400, "InvalidResourceName"},
			{"Get Blob name", "GET", "edge/%ff", "", nil, 400, "InvalidResourceName"},
			{"Delete Blob name", "DELETE", "edge/%ff", "", nil, 400, "InvalidResourceName"},
			{"Put Block name", "PUT", "edge/%ff?comp=block&blockid=" + blockID(1), "x", nil, 400, "InvalidResourceName"},
			{"Put Block List name", "PUT", "edge/%ff?comp=blocklist", blockList, nil, 400, "InvalidResourceName"},
			{"Copy Blob destination name", "PUT", "edge/%ff", "", map[string]string{"x-ms-copy-source": src}, 400, "InvalidResourceName"},
			{"Create Container name", "PUT", "edge%ff?restype=container", "", nil, 400, "InvalidResourceName"},
			{"List Containers prefix", "GET", "?comp=list&prefix=%ff", "", nil, 400, "InvalidQueryParameterValue"},
			{"List Containers marker", "GET", "?comp=list&marker=%ff", "", nil, 400, "InvalidQueryParameterValue"},
			{"List Blobs prefix", "GET", "edge?restype=container&comp=list&prefix=%ff", "", nil, 400, "InvalidQueryParameterValue"},
			{"List Blobs marker", "GET", "edge?restype=container&comp=list&marker=%ff", "", nil, 400, "InvalidQueryParameterValue"},
			{"List Blobs prefix with NUL", "GET", "edge?restype=container&comp=list&prefix=a%00b", "", nil, 400, "InvalidQueryParameterValue"},
			{"List Blobs delimiter NUL", "GET", "edge?restype=container&comp=list&delimiter=%00", "", nil, 400, "InvalidQueryParameterValue"},
			{"List Blobs delimiter", "GET", "edge?restype=container&comp=list&delimiter=%ff", "", nil, 400, "InvalidQueryParameterValue"},
			{"List Blobs startFrom", "GET", "edge?restype=container&comp=list&startFrom=%ff", "", nil, 400, "InvalidQueryParameterValue"},
			{"Find Blobs where", "GET", "?comp=blobs&where=%22t%22%3D%27%ff%27", "", nil, 400, "InvalidQueryParameterValue"},
			{"Find Blobs in container where", "GET", "edge?restype=container&comp=blobs&where=%22t%22%3D%27%ff%27", "", nil, 400, "InvalidQueryParameterValue"},
			{"Find Blobs marker", "GET", "?comp=blobs&where=%22t%22%3D%271%27&marker=%ff", "", nil, 400, "InvalidQueryParameterValue"},
			{"snapshot id", "GET", "edge/keep?snapshot=%ff", "", nil, 400, "InvalidQueryParameterValue"},
			{"query parameter name", "GET", "edge/keep?%ff=1", "", nil, 400, "InvalidQueryParameterValue"},
			{"Put Blob metadata value", "PUT", "edge/new", "x", map[string]string{"x-ms-blob-type": "BlockBlob", "x-ms-meta-m": bad}, 400, "InvalidMetadata"},
			{"Set Blob Metadata value", "PUT", "edge/keep?comp=metadata", "", map[string]string{"x-ms-meta-m": "a" + bad}, 400, "InvalidMetadata"},
			{"Create Container metadata value", "PUT", "new?restype=container", "", map[string]string{"x-ms-meta-m": bad}, 400, "InvalidMetadata"},
			{"Set Container Metadata value", "PUT", "edge?restype=container&comp=metadata", "", map[string]string{"x-ms-meta-m": bad}, 400, "InvalidMetadata"},
			{"Put Block List metadata value", "PUT", "edge/keep?comp=blocklist", blockList, map[string]string{"x-ms-meta-m": bad}, 400, "InvalidMetadata"},
			{"Copy Blob metadata value", "PUT", "edge/copy", "", map[string]string{"x-ms-copy-source": src, "x-ms-meta-m": bad}, 400, "InvalidMetadata"},
			{"Snapshot Blob metadata value", "PUT", "edge/keep?comp=snapshot", "", map[string]string{"x-ms-meta-m": bad}, 400, "InvalidMetadata"},
			{"x-ms-tags key", "PUT", "edge/new", "x", map[string]string{"x-ms-blob-type": "BlockBlob", "x-ms-tags": "%ff=1"}, 400, "InvalidTag"},
			{"x-ms-tags value", "PUT", "edge/new", "x", map[string]string{"x-ms-blob-type": "BlockBlob", "x-ms-tags": "k=%ff"}, 400, "InvalidTag"},
			{"x-ms-tags raw bytes", "PUT", "edge/new", "x", map[string]string{"x-ms-blob-type": "BlockBlob", "x-ms-tags": "k=" + bad}, 400, "InvalidHeaderValue"},
			{"Set Blob Tags body", "PUT", "edge/keep?comp=tags", tagsXML, nil, 400, "InvalidXmlDocument"},
			{"x-ms-if-tags", "PUT", "edge/keep?comp=metadata", "", map[string]string{"x-ms-if-tags": "\"t\"='" + bad + "'"}, 400, "InvalidHeaderValue"},
			{"Content-Type", "PUT", "edge/new", "x", map[string]string{"x-ms-blob-type": "BlockBlob", "Content-Type": "text/" + bad}, 400, "InvalidHeaderValue"},
			{"x-ms-blob-content-disposition", "PUT", "edge/keep?comp=properties", "", map[string]string{"x-ms-blob-content-disposition": bad}, 400, "InvalidHeaderValue"},
			{"copy source name", "PUT", "edge/copy", "", map[string]string{"x-ms-copy-source": b.serviceURL(0) + "edge/%ff"}, 400, "InvalidHeaderValue"},
			{"Put Blob From URL source name", "PUT", "edge/copy", "", map[string]string{"x-ms-copy-source": b.serviceURL(0) + "edge/%ff", "x-ms-blob-type": "BlockBlob"}, 400, "InvalidHeaderValue"},
			{"Put Block From URL source name", "PUT", "edge/copy?comp=block&blockid=" + blockID(1), "", map[string]string{"x-ms-copy-source": b.serviceURL(0) + "edge/%ff"}, 400, "InvalidHeaderValue"},
			{"copy source snapshot", "PUT", "edge/copy", "", map[string]string{"x-ms-copy-source": src + "?snapshot=%ff"}, 400, "InvalidHeaderValue"},
			{"copy source raw bytes", "PUT", "edge/copy", "", map[string]string{"x-ms-copy-source": src + bad}, 400, "InvalidHeaderValue"},
		}
		before := b.accountState(t)
		for _, c := range cases {
			resp, body := b.do(t, c.method, c.path, c.body, c.hdr)
			if d := statusDiff(resp, c.status, c.code); d != "" {
				t.Errorf("%s: %s\n%s", c.name, d, body)
			}
			if after := b.accountState(t); after != before {
				t.Fatalf("%s stored something:\nbefore:\n%s\nafter:\n%s", c.name, before, after)
			}
		}
		// Valid UTF-8 beyond ASCII stays accepted in a name; a metadata
		// value must be ASCII (TestMetadataValueASCII).
		resp, body := b.do(t, "PUT", "edge/caf%C3%A9", "x", map[string]string{"x-ms-blob-type": "BlockBlob", "x-ms-meta-m": "cafe"})
		if resp.StatusCode != 201 {
			t.Fatalf("UTF-8 name: %d %s", resp.StatusCode, body)
		}
	})
}

// TestParseQuery: query parameter names are matched without regard to
// case; one name given twice with different values, a query that does
// not parse and text that is not UTF-8 are refused; identical repeats are
// one parameter. The outcome never depends on map order.
func TestParseQuery(t *testing.T) {
	tests := []struct {
		raw  string
		want map[string]string // nil: refused
	}{
		{"", map[string]string{}},
		{"comp=list", map[string]string{"comp": "list"}},
		{"Comp=List&RESTYPE=container", map[string]string{"comp": "List", "restype": "container"}},
		{"comp=list&Comp=list", map[string]string{"comp": "list"}},
		{"comp=list&comp=list", map[string]string{"comp": "list"}},
		{"comp=list&Comp=acl", nil},
		{"Comp=acl&comp=list", nil},
		{"comp=list&comp=acl", nil},
		{"comp=&comp=list", nil},
		{"prefix=a&PREFIX=b", nil},
		{"prefix=", map[string]string{"prefix": ""}},
		{"prefix=a%2Bb+c", map[string]string{"prefix": "a+b c"}},
		{"prefix=%zz", nil},
		{"comp=list;prefix=a", nil},
		{"prefix=%ff", nil},
		{"%ff=1", nil},
		{"prefix=caf%C3%A9", map[string]string{"prefix": "café"}},
		{"prefix=a%00b", nil},
		{"%00=1", nil},
	}
	for _, tc := range tests {
		// Many runs: map order must not matter.
		for i := 0; i < 20; i++ {
			got, err := gateway.ParseQuery(tc.raw)
			if tc.want == nil {
				if err == nil {
					t.Fatalf("%q: accepted as %v, want refused", tc.raw, got)
				}
				if !strings.Contains(err.Error(), "InvalidQueryParameterValue") {
					t.Fatalf("%q: %v, want InvalidQueryParameterValue", tc.raw, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%q: %v", tc.raw, err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("%q: %v, want %v", tc.raw, got, tc.want)
			}
		}
	}
}

// TestQueryCaseDuplicates: "comp=list&Comp=acl" used to route by map order
// (List Blobs most of the time, Get Container ACL some of the time). It is
// 400 InvalidQueryParameterValue every time; the same parameter repeated
// with the same value routes as once; a name in another case routes as the
// lowercase one, with Shared Key signed over what was sent.
func TestQueryCaseDuplicates(t *testing.T) {
	b := setup(t, "sqlite+disk")
	b.fillEdge(t)
	for i := 0; i < 30; i++ {
		resp, body := b.do(t, "GET", "edge?restype=container&comp=list&Comp=acl", "", nil)
		if d := statusDiff(resp, 400, "InvalidQueryParameterValue"); d != "" {
			t.Fatalf("try %d: %s\n%s", i, d, body)
		}
	}
	resp, body := b.do(t, "GET", "edge?restype=container&comp=list&Comp=list", "", nil)
	if resp.StatusCode != 200 || !strings.Contains(body, "<Name>keep</Name>") {
		t.Fatalf("identical repeat: %d %s", resp.StatusCode, body)
	}
	resp, body = b.do(t, "GET", "edge?RESTYPE=container&COMP=acl", "", nil)
	if resp.StatusCode != 200 || !strings.Contains(body, "SignedIdentifiers") {
		t.Fatalf("upper-case names: %d %s", resp.StatusCode, body)
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
