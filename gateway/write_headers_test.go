package gateway_test

import (
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// TestMetadataBeforeConditions: Put Block List, Copy Blob and Put Blob From
// URL read x-ms-meta-* before the conditional headers and the lease id, so
// a request bad in both answers the metadata's error; bad in the lease id
// alone, the lease id's.
func TestMetadataBeforeConditions(t *testing.T) {
	b := setup(t, "sqlite")
	createContainers(t, b.client, "order")
	b.putBlobs(t, "order/src")
	src := b.serviceURL(0) + "order/src"
	ops := []headerOrderOp{
		{"Put Block List", "order/pbl", "?comp=blocklist", "<BlockList></BlockList>", nil},
		{"Copy Blob", "order/copy", "", "", map[string]string{"x-ms-copy-source": src}},
		{"Put Blob From URL", "order/pbfu", "", "", map[string]string{"x-ms-copy-source": src, "x-ms-blob-type": "BlockBlob"}},
	}
	b.wantHeaderOrder(t, ops, "InvalidMetadata")
	for _, op := range ops {
		if b.exists(t, op.blob) {
			t.Errorf("%s: a refused request stored %s", op.name, op.blob)
		}
	}
}

// TestConditionsBeforeMetadata: Set Blob Metadata and Snapshot Blob read
// the conditional headers and the lease id before x-ms-meta-*, so a request
// bad in both answers the lease id's error; a refused one changes nothing
// and makes no snapshot.
func TestConditionsBeforeMetadata(t *testing.T) {
	b := setup(t, "sqlite")
	createContainers(t, b.client, "order")
	b.putBlobs(t, "order/src")
	bc := b.client.ServiceClient().NewContainerClient("order").NewBlobClient("src")
	before, err := bc.GetProperties(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	b.wantHeaderOrder(t, []headerOrderOp{
		{"Set Blob Metadata", "order/src", "?comp=metadata", "", nil},
		{"Snapshot Blob", "order/src", "?comp=snapshot", "", nil},
	}, "InvalidHeaderValue")
	after, err := bc.GetProperties(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if *after.ETag != *before.ETag || len(after.Metadata) != 0 {
		t.Errorf("refused requests changed the blob: ETag %s (was %s), metadata %v", *after.ETag, *before.ETag, after.Metadata)
	}
	if l := listFlat(t, b.client.ServiceClient().NewContainerClient("order"), container.ListBlobsInclude{Snapshots: true}, 10); len(l) != 1 {
		t.Errorf("refused requests left %s, want src alone", render(l))
	}
}

// headerOrderOp is a raw PUT the header-order tests send: path container/blob,
// query and body as the operation takes them, hdr its own headers.
type headerOrderOp struct {
	name, blob, query, body string
	hdr                     map[string]string
}

// wantHeaderOrder sends each op bad in x-ms-meta-* and x-ms-lease-id
// (bothCode, the error of the one read first), bad in the lease id alone
// and bad in the metadata alone; each is a 400.
func (b *bundle) wantHeaderOrder(t *testing.T, ops []headerOrderOp, bothCode string) {
	t.Helper()
	badMeta := map[string]string{"x-ms-meta-1bad": "v"}
	badLease := map[string]string{"x-ms-lease-id": "not-a-guid"}
	for _, op := range ops {
		for _, tc := range []struct {
			what string
			bad  []map[string]string
			code string
		}{
			{"metadata and lease id", []map[string]string{badMeta, badLease}, bothCode},
			{"lease id", []map[string]string{badLease}, "InvalidHeaderValue"},
			{"metadata", []map[string]string{badMeta}, "InvalidMetadata"},
		} {
			hdr := map[string]string{}
			for _, m := range append([]map[string]string{op.hdr}, tc.bad...) {
				for k, v := range m {
					hdr[k] = v
				}
			}
			resp, _ := b.do(t, "PUT", op.blob+op.query, op.body, hdr)
			wantStatus(t, resp, 400, tc.code, op.name+", bad "+tc.what)
		}
	}
}

// TestBlockSourceChecks: Put Block From URL and Append Block From URL
// refuse a body of their own and a source range longer than the block they
// may write, before they read the source.
func TestBlockSourceChecks(t *testing.T) {
	b := setup(t, "sqlite")
	createContainers(t, b.client, "bsrc")
	b.putBlobs(t, "bsrc/src")
	if _, err := appendClient(b.client, "bsrc", "app").Create(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	src := b.serviceURL(0) + "bsrc/src"
	id := "YmxrMQ=="
	for _, tc := range []struct {
		name, path, body, srcRange string
		status                     int
		code                       string
	}{
		{"Put Block From URL, body", "bsrc/blk?comp=block&blockid=" + id, "xx", "", 400, "InvalidHeaderValue"},
		{"Put Block From URL, 4000 MiB + 1", "bsrc/blk?comp=block&blockid=" + id, "", "bytes=0-4194304000", 413, "RequestBodyTooLarge"},
		{"Append Block From URL, body", "bsrc/app?comp=appendblock", "xx", "", 400, "InvalidHeaderValue"},
		{"Append Block From URL, 100 MiB + 1", "bsrc/app?comp=appendblock", "", "bytes=0-104857600", 413, "RequestBodyTooLarge"},
	} {
		hdr := map[string]string{"x-ms-copy-source": src}
		if tc.srcRange != "" {
			hdr["x-ms-source-range"] = tc.srcRange
		}
		resp, _ := b.do(t, "PUT", tc.path, tc.body, hdr)
		wantStatus(t, resp, tc.status, tc.code, tc.name)
	}
}
