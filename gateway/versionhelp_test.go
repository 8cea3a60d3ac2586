package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/blobgw/blobgw/leasedb"
)

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
