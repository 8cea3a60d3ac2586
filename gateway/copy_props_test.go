package gateway_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
)

// TestCopyProperties: a copy destination reports the copy (x-ms-copy-id,
// -source without the SAS signature, -status, -progress, -completion-time)
// on Get Blob Properties, Get Blob and List Blobs with include=copy; a
// snapshot keeps it; Set Blob Metadata keeps it; Set Blob Properties and an
// overwrite end it.
func TestCopyProperties(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "copies")
		data := randBytes(70_000, 41)
		if _, err := b.client.UploadBuffer(ctx, "copies", "src", data, nil); err != nil {
			t.Fatal(err)
		}
		srcURL := b.sasURL(t, "copies/src", sas.BlobSignatureValues{
			Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(time.Hour),
			Permissions: to.Ptr(sas.BlobPermissions{Read: true}).String(), ContainerName: "copies", BlobName: "src"})
		dst := blockClient(b.client, "copies", "dst")
		before := time.Now().Add(-2 * time.Second)
		resp, err := dst.StartCopyFromURL(ctx, srcURL, nil)
		if err != nil {
			t.Fatal(err)
		}
		check := func(where string, id, status, source, progress *string, done *time.Time) {
			t.Helper()
			switch {
			case id == nil || *id != *resp.CopyID:
				t.Fatalf("%s: copy id %v, the copy answered %s", where, id, *resp.CopyID)
			case status == nil || *status != "success":
				t.Fatalf("%s: copy status %v", where, status)
			case source == nil || !strings.HasPrefix(*source, b.serviceURL(0)+"copies/src?") || strings.Contains(*source, "sig="):
				t.Fatalf("%s: copy source %v (want the source URL without its signature)", where, source)
			case progress == nil || *progress != "70000/70000":
				t.Fatalf("%s: copy progress %v", where, progress)
			case done == nil || done.Before(before) || done.After(time.Now().Add(2*time.Second)):
				t.Fatalf("%s: copy completion time %v", where, done)
			}
		}
		p := getProps(t, dst)
		check("properties", p.CopyID, (*string)(p.CopyStatus), p.CopySource, p.CopyProgress, p.CopyCompletionTime)
		g, err := dst.DownloadStream(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		g.Body.Close()
		check("get blob", g.CopyID, (*string)(g.CopyStatus), g.CopySource, g.CopyProgress, g.CopyCompletionTime)
		list := func(include container.ListBlobsInclude) map[string]*container.BlobItem {
			t.Helper()
			out := map[string]*container.BlobItem{}
			pager := b.client.NewListBlobsFlatPager("copies", &container.ListBlobsFlatOptions{Include: include})
			for pager.More() {
				page, err := pager.NextPage(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, it := range page.Segment.BlobItems {
					key := *it.Name
					if it.Snapshot != nil && *it.Snapshot != "" {
						key += "@snapshot"
					}
					out[key] = it
				}
			}
			return out
		}
		items := list(container.ListBlobsInclude{Copy: true, Snapshots: true})
		ip := items["dst"].Properties
		check("list", ip.CopyID, (*string)(ip.CopyStatus), ip.CopySource, ip.CopyProgress, ip.CopyCompletionTime)
		if items["src"].Properties.CopyID != nil {
			t.Fatal("the source lists copy properties")
		}
		if list(container.ListBlobsInclude{})["dst"].Properties.CopyID != nil {
			t.Fatal("copy properties listed without include=copy")
		}

		// A snapshot keeps the copy; Set Blob Metadata keeps it.
		if _, err := dst.CreateSnapshot(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := dst.SetMetadata(ctx, map[string]*string{"k": to.Ptr("v")}, nil); err != nil {
			t.Fatal(err)
		}
		p = getProps(t, dst)
		check("after set metadata", p.CopyID, (*string)(p.CopyStatus), p.CopySource, p.CopyProgress, p.CopyCompletionTime)
		sp := list(container.ListBlobsInclude{Copy: true, Snapshots: true})["dst@snapshot"].Properties
		check("snapshot", sp.CopyID, (*string)(sp.CopyStatus), sp.CopySource, sp.CopyProgress, sp.CopyCompletionTime)

		// Set Blob Properties ends it.
		if _, err := dst.SetHTTPHeaders(ctx, blob.HTTPHeaders{BlobContentType: to.Ptr("text/plain")}, nil); err != nil {
			t.Fatal(err)
		}
		if p := getProps(t, dst); p.CopyID != nil || p.CopyStatus != nil {
			t.Fatalf("after Set Blob Properties: copy id %v status %v", p.CopyID, p.CopyStatus)
		}
		// So does an overwrite of another copy's destination.
		other := blockClient(b.client, "copies", "other")
		if _, err := other.StartCopyFromURL(ctx, srcURL, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := b.client.UploadBuffer(ctx, "copies", "other", []byte("new"), nil); err != nil {
			t.Fatal(err)
		}
		if p := getProps(t, other); p.CopyID != nil {
			t.Fatalf("after Put Blob: copy id %v", p.CopyID)
		}
	})
}
