package gateway_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/blobgw/blobgw/leasedb"
)

// setupVersioned is setup with blob versioning on and the container cont
// created (its client returned): how every versioning test begins.
func setupVersioned(t *testing.T, kind, cont string, opts ...setupOpts) (*bundle, *container.Client) {
	t.Helper()
	b := setup(t, kind, opts...)
	b.setVersioning(t, true)
	return b, b.newContainer(t, cont)
}

// setupVersionedSoft is setupVersioned with a two-day blob soft delete
// (DeleteRetentionPolicy) on as well.
func setupVersionedSoft(t *testing.T, kind, cont string, opts ...setupOpts) (*bundle, *container.Client) {
	t.Helper()
	b, cc := setupVersioned(t, kind, cont, opts...)
	b.setRetention(t, 2)
	return b, cc
}

// newContainer creates container name and returns its client.
func (b *bundle) newContainer(t *testing.T, name string) *container.Client {
	t.Helper()
	createContainers(t, b.client, name)
	return b.client.ServiceClient().NewContainerClient(name)
}

// uploadVersion uploads data to cont/name with Put Blob, versioning on,
// and returns the version id (x-ms-version-id) the upload made.
func (b *bundle) uploadVersion(t *testing.T, cont, name string, data []byte) string {
	t.Helper()
	up, err := b.client.UploadBuffer(context.Background(), cont, name, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	return vidOf(t, "upload", up.VersionID)
}

// setClockOffset moves the database clock of every store of the bundle
// by d, so that retention periods expire without waiting.
func (b *bundle) setClockOffset(d time.Duration) {
	for _, s := range b.stores {
		s.(leasedb.ClockOffsetter).SetClockOffset(d)
	}
}

// flatItems lists a container flat with opts, every page, and returns the
// blob items in the order listed.
func flatItems(t *testing.T, cc *container.Client, opts *container.ListBlobsFlatOptions) []*container.BlobItem {
	t.Helper()
	var items []*container.BlobItem
	p := cc.NewListBlobsFlatPager(opts)
	for p.More() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, page.Segment.BlobItems...)
	}
	return items
}

// renderVersionsOnly renders a listed blob: name, "@snap" for a snapshot,
// " (deleted)" for a soft-deleted row, " (versions only, N bytes)" for a
// HasVersionsOnly entry, which must name no version.
func renderVersionsOnly(t *testing.T, it *container.BlobItem) string {
	t.Helper()
	s := *it.Name
	if it.Snapshot != nil {
		s += "@snap"
	}
	if it.Deleted != nil && *it.Deleted {
		s += " (deleted)"
	}
	if it.HasVersionsOnly != nil && *it.HasVersionsOnly {
		if it.VersionID != nil || it.IsCurrentVersion != nil {
			t.Errorf("%s: HasVersionsOnly entry names version %v, current %v", s, it.VersionID, it.IsCurrentVersion)
		}
		s += fmt.Sprintf(" (versions only, %d bytes)", *it.Properties.ContentLength)
	}
	return s
}

// prefixOpt is the Prefix option of a listing: none for "".
func prefixOpt(prefix string) *string {
	if prefix == "" {
		return nil
	}
	return &prefix
}

// Lease ids of leasedCurrentVersion's lease (testLeaseID) and one that
// does not match it.
const (
	testLeaseID  = "11111111-2222-3333-4444-555555555555"
	otherLeaseID = "99999999-2222-3333-4444-555555555555"
)

// leasedCurrentVersion is setupVersioned with cont/v uploaded (with opts)
// and leased (testLeaseID, infinite): it returns the bundle, the blob's
// client, the client of its current version by ?versionid= and that
// version id.
func leasedCurrentVersion(t *testing.T, kind, cont string, opts *azblob.UploadBufferOptions) (*bundle, *blockblob.Client, *blockblob.Client, string) {
	t.Helper()
	b, _ := setupVersioned(t, kind, cont)
	ctx := context.Background()
	up, err := b.client.UploadBuffer(ctx, cont, "v", []byte("x"), opts)
	if err != nil {
		t.Fatal(err)
	}
	bc := blockClient(b.client, cont, "v")
	cur, err := bc.WithVersionID(*up.VersionID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := blobLease(t, bc, testLeaseID).AcquireLease(ctx, -1, nil); err != nil {
		t.Fatal(err)
	}
	return b, bc, cur, *up.VersionID
}
