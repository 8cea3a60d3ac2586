package gateway_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/appendblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/pageblob"
)

// entryShapes reads a listing body and renders each entry (every child of
// the element named list: Blob, BlobPrefix or Container) as the sequence
// of its child element names, a Properties child as
// "Properties{names...}", e.g. "Name Snapshot Properties{Creation-Time
// ...} Metadata". Values are left out: what is compared is the order.
func entryShapes(t *testing.T, body, list string) []string {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(body))
	var (
		out   []string
		path  []string
		entry []string
		props []string
	)
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("listing body: %v\n%s", err, body)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			path = append(path, e.Name.Local)
			n := len(path)
			switch {
			case n == 4 && path[1] == list:
				entry = append(entry, e.Name.Local)
			case n == 5 && path[1] == list && path[3] == "Properties":
				props = append(props, e.Name.Local)
			}
		case xml.EndElement:
			n := len(path)
			switch {
			case n == 4 && path[1] == list && e.Name.Local == "Properties":
				entry[len(entry)-1] = "Properties{" + strings.Join(props, " ") + "}"
				props = nil
			case n == 3 && path[1] == list:
				out = append(out, strings.Join(entry, " "))
				entry = nil
			}
			path = path[:n-1]
		}
	}
	return out
}

// wantShapes compares listed entry shapes with want, entry by entry.
func wantShapes(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d entries, want %d:\n%s", what, len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Errorf("%s entry %d:\n got  %s\n want %s", what, i, got[i], want[i])
		}
	}
}

// blobProps is the Properties shape of a committed blob's List Blobs
// entry: the content properties every entry has, then tail.
func blobProps(tail string) string {
	return "Properties{Creation-Time Last-Modified Etag Content-Length Content-Type Content-Encoding " +
		"Content-Language Content-CRC64 Content-MD5 Cache-Control Content-Disposition " + tail + "}"
}

// TestListBlobsElementOrder: every List Blobs entry lists its elements in
// the service's order: Name, Snapshot, VersionId, IsCurrentVersion (the
// current version's alone), Deleted, Properties, Metadata, Tags (the List Blobs reference sample;
// no recorded answer holds Deleted beside a Snapshot or VersionId), and
// inside Properties the content properties, x-ms-blob-sequence-number,
// BlobType, AccessTier, AccessTierInferred, the lease, the copy with
// CopySource before CopyStatus, IncrementalCopy and DestinationSnapshot,
// ServerEncrypted, DeletedTime, RemainingRetentionDays, TagCount, Sealed
// (recorded answers of the service). Entries: a sealed append blob with
// tags, a copy, a leased blob with metadata and tags, a soft-deleted
// blob, a page blob with a live and a soft-deleted snapshot, an
// incremental copy and its destination snapshot, a name with staged
// blocks only, the source of the copy, and (versioning on) a soft-deleted
// previous version, a previous version and the current one. Before,
// AccessTier came after ServerEncrypted, TagCount after Sealed, CopyStatus
// before CopySource and IncrementalCopy after ServerEncrypted: readers
// that take the elements in sequence (older .NET and Java libraries)
// expect the service's order.
func TestListBlobsElementOrder(t *testing.T) {
	ctx := context.Background()
	b := setup(t, "sqlite")
	b.setRetention(t, 2)
	c := b.client
	createContainers(t, c, "order")
	cc := c.ServiceClient().NewContainerClient("order")

	ab := cc.NewAppendBlobClient("a-append")
	if _, err := ab.Create(ctx, &appendblob.CreateOptions{Tags: map[string]string{"t": "1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ab.AppendBlock(ctx, rsc{bytes.NewReader([]byte("log"))}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ab.Seal(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UploadBuffer(ctx, "order", "s-source", randBytes(300, 1), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cc.NewBlobClient("b-copy").StartCopyFromURL(ctx, cc.NewBlobClient("s-source").URL(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UploadBuffer(ctx, "order", "c-leased", randBytes(200, 2), &blockblob.UploadBufferOptions{
		Metadata: map[string]*string{"k": to.Ptr("v")}, Tags: map[string]string{"t": "1"}}); err != nil {
		t.Fatal(err)
	}
	lc, err := lease.NewBlobClient(cc.NewBlobClient("c-leased"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lc.AcquireLease(ctx, -1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UploadBuffer(ctx, "order", "d-deleted", randBytes(100, 3), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cc.NewBlobClient("d-deleted").Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}
	pb := pageClient(c, "order", "e-page")
	if _, err := pb.Create(ctx, 1024, &pageblob.CreateOptions{SequenceNumber: to.Ptr(int64(3))}); err != nil {
		t.Fatal(err)
	}
	s1, err := pb.CreateSnapshot(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := pb.CreateSnapshot(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	s2c, err := pb.WithSnapshot(*s2.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2c.Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}
	sasURL := withSAS(t, pb.URL(), b.cred, "order", "e-page", "r")
	if _, err := pageClient(c, "order", "f-inc").StartCopyIncremental(ctx, sasURL, *s1.Snapshot, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cc.NewBlockBlobClient("g-staged").StageBlock(ctx, blockID(0), rsc{bytes.NewReader([]byte("x"))}, nil); err != nil {
		t.Fatal(err)
	}

	resp, body := b.do(t, "GET", "order?restype=container&comp=list&include=snapshots,metadata,tags,copy,deleted,uncommittedblobs", "", nil)
	wantStatus(t, resp, 200, "", "List Blobs")
	const (
		tier   = "AccessTier AccessTierInferred "
		lease  = "LeaseStatus LeaseState "
		copied = "CopyId CopySource CopyStatus CopyProgress CopyCompletionTime "
		incr   = copied + "IncrementalCopy DestinationSnapshot "
		soft   = "ServerEncrypted DeletedTime RemainingRetentionDays"
		page   = "x-ms-blob-sequence-number BlobType "
	)
	wantShapes(t, "List Blobs", entryShapes(t, body, "Blobs"), []string{
		"Name " + blobProps("BlobType "+lease+"ServerEncrypted TagCount Sealed") + " Metadata Tags",
		"Name " + blobProps("BlobType "+tier+lease+copied+"ServerEncrypted") + " Metadata",
		"Name " + blobProps("BlobType "+tier+lease+"LeaseDuration ServerEncrypted TagCount") + " Metadata Tags",
		"Name Deleted " + blobProps("BlobType "+tier+soft) + " Metadata",
		"Name Snapshot " + blobProps(page+"ServerEncrypted") + " Metadata",
		"Name Snapshot Deleted " + blobProps(page+soft) + " Metadata",
		"Name " + blobProps(page+lease+"ServerEncrypted") + " Metadata",
		"Name Snapshot " + blobProps(page+incr+"ServerEncrypted") + " Metadata",
		"Name " + blobProps(page+lease+incr+"ServerEncrypted") + " Metadata",
		"Name Properties{Content-Length BlobType LeaseStatus LeaseState ServerEncrypted}",
		"Name " + blobProps("BlobType "+tier+lease+"ServerEncrypted") + " Metadata",
	})

	vb, vc := setupVersionedSoft(t, "sqlite", "vorder")
	v1 := vb.uploadVersion(t, "vorder", "v", randBytes(10, 4))
	vb.uploadVersion(t, "vorder", "v", randBytes(20, 5))
	vb.uploadVersion(t, "vorder", "v", randBytes(30, 6))
	if _, err := vb.versionClient(t, "vorder", "v", v1).Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if got := len(flatItems(t, vc, &container.ListBlobsFlatOptions{Include: container.ListBlobsInclude{Versions: true, Deleted: true}})); got != 3 {
		t.Fatalf("listed %d entries of v, want 3", got)
	}
	resp, body = vb.do(t, "GET", "vorder?restype=container&comp=list&include=versions,deleted,metadata", "", nil)
	wantStatus(t, resp, 200, "", "List Blobs include=versions")
	wantShapes(t, "List Blobs include=versions", entryShapes(t, body, "Blobs"), []string{
		"Name VersionId Deleted " + blobProps("BlobType "+tier+soft) + " Metadata",
		"Name VersionId " + blobProps("BlobType "+tier+"ServerEncrypted") + " Metadata",
		"Name VersionId IsCurrentVersion " + blobProps("BlobType "+tier+lease+"ServerEncrypted") + " Metadata",
	})
}

// TestListContainersElementOrder: List Containers lists a container's
// elements in the service's order (its recorded answers): Name, Deleted,
// Version, Properties (Last-Modified, Etag, the lease, PublicAccess (not
// in a recording; where the API definition and the List Containers
// reference put it), the encryption scope, HasImmutabilityPolicy, HasLegalHold,
// ImmutableStorageWithVersioningEnabled, DeletedTime,
// RemainingRetentionDays), Metadata. Before,
// ImmutableStorageWithVersioningEnabled, which the service sends for
// every container, was missing.
func TestListContainersElementOrder(t *testing.T) {
	ctx := context.Background()
	b := setup(t, "sqlite", containerRetention(24*time.Hour))
	c := b.client
	if _, err := c.CreateContainer(ctx, "a-leased", &azblob.CreateContainerOptions{
		Access: to.Ptr(container.PublicAccessTypeContainer), Metadata: map[string]*string{"k": to.Ptr("v")}}); err != nil {
		t.Fatal(err)
	}
	lc, err := lease.NewContainerClient(c.ServiceClient().NewContainerClient("a-leased"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lc.AcquireLease(ctx, -1, nil); err != nil {
		t.Fatal(err)
	}
	createContainers(t, c, "b-deleted")
	if _, err := c.DeleteContainer(ctx, "b-deleted", nil); err != nil {
		t.Fatal(err)
	}
	resp, body := b.do(t, "GET", "?comp=list&include=metadata,deleted", "", nil)
	wantStatus(t, resp, 200, "", "List Containers")
	const tail = "DefaultEncryptionScope DenyEncryptionScopeOverride HasImmutabilityPolicy HasLegalHold ImmutableStorageWithVersioningEnabled"
	wantShapes(t, "List Containers", entryShapes(t, body, "Containers"), []string{
		"Name Properties{Last-Modified Etag LeaseStatus LeaseState LeaseDuration PublicAccess " + tail + "} Metadata",
		"Name Deleted Version Properties{Last-Modified Etag LeaseStatus LeaseState " + tail + " DeletedTime RemainingRetentionDays} Metadata",
	})
	// The entries parse into the SDK's model as before.
	items := listAll(t, c, true)
	if len(items) != 2 || items[0].Properties.IsImmutableStorageWithVersioningEnabled == nil ||
		*items[0].Properties.IsImmutableStorageWithVersioningEnabled {
		t.Fatalf("listed %d containers; ImmutableStorageWithVersioningEnabled of the first %v", len(items), items[0].Properties.IsImmutableStorageWithVersioningEnabled)
	}
}
