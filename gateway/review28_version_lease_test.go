package gateway_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
)

// TestVersionReadLeaseCurrent: Get Blob, Get Blob Properties and Get Blob
// Metadata addressed to the current version by its ?versionid= take the
// lease rule they take without it, as Set Blob Tier does: an
// x-ms-lease-id that does not match the active lease is 412
// LeaseIdMismatchWithBlobOperation; the matching one, or none, reads. A
// Copy Blob whose source names the current version by versionid keeps
// x-ms-source-lease-id's check.
func TestVersionReadLeaseCurrent(t *testing.T) {
	forKinds(t, versionKinds, func(t *testing.T, kind string) {
		b, _, cur, vid := leasedCurrentVersion(t, kind, "vread", nil)
		ctx := context.Background()
		leaseID, other := testLeaseID, otherLeaseID
		_, err := cur.DownloadStream(ctx, &blob.DownloadStreamOptions{AccessConditions: withLease(other)})
		wantErr(t, err, 412, "LeaseIdMismatchWithBlobOperation")
		_, err = cur.GetProperties(ctx, &blob.GetPropertiesOptions{AccessConditions: withLease(other)})
		wantErr(t, err, 412, "")
		path := "vread/v?comp=metadata&versionid=" + vid
		resp, _ := b.do(t, "GET", path, "", map[string]string{"x-ms-lease-id": other})
		wantStatus(t, resp, 412, "LeaseIdMismatchWithBlobOperation", "Get Blob Metadata with another lease id")
		resp, _ = b.do(t, "GET", path, "", map[string]string{"x-ms-lease-id": leaseID})
		wantStatus(t, resp, 200, "", "Get Blob Metadata with the lease id")
		resp, _ = b.do(t, "GET", path, "", nil)
		wantStatus(t, resp, 200, "", "Get Blob Metadata without a lease id")

		if _, err := cur.DownloadStream(ctx, &blob.DownloadStreamOptions{AccessConditions: withLease(leaseID)}); err != nil {
			t.Fatalf("Get Blob with the lease id: %v", err)
		}
		if _, err := cur.GetProperties(ctx, nil); err != nil {
			t.Fatalf("Get Blob Properties without a lease id: %v", err)
		}

		tier := "vread/v?comp=tier&versionid=" + vid
		resp, _ = b.do(t, "PUT", tier, "", map[string]string{"x-ms-access-tier": "Cool", "x-ms-lease-id": other})
		wantStatus(t, resp, 412, "LeaseIdMismatchWithBlobOperation", "Set Blob Tier of the current version with another lease id")

		src := b.serviceURL(0) + "vread/v?versionid=" + vid
		resp, _ = b.do(t, "PUT", "vread/copy", "", map[string]string{"x-ms-copy-source": src, "x-ms-source-lease-id": other})
		wantStatus(t, resp, 412, "LeaseIdMismatchWithBlobOperation", "Copy Blob from the current version with another source lease id")
		resp, _ = b.do(t, "PUT", "vread/copy", "", map[string]string{"x-ms-copy-source": src, "x-ms-source-lease-id": leaseID})
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("Copy Blob from the current version with the source lease id: %d", resp.StatusCode)
		}
	})
}
