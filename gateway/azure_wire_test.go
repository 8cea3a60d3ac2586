package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
)

// Answers checked against what Azure Blob Storage itself answers (the
// azblob SDK's recorded tests and clients' reports of the service's
// replies), for inputs the gateway once answered otherwise.

// TestPutBlockZeroLength: Azure answers a Put Block whose Content-Length
// is 0 as it answers one without Content-Length, 411
// MissingContentLengthHeader naming Content-Length (a block is never
// empty), and stages nothing; the gateway used to stage an empty block.
func TestPutBlockZeroLength(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "zero")
	resp, body := b.do(t, "PUT", "zero/b?comp=block&blockid="+blockID(1), "", nil)
	wantStatus(t, resp, http.StatusLengthRequired, "MissingContentLengthHeader", "Put Block of 0 bytes")
	if !strings.Contains(body, "<HeaderName>Content-Length</HeaderName>") {
		t.Errorf("the refusal does not name Content-Length: %s", body)
	}
	bl, err := blockClient(b.client, "zero", "b").GetBlockList(ctx, blockblob.BlockListTypeAll, nil)
	if statusOf(err) != http.StatusNotFound && (err != nil || len(bl.UncommittedBlocks) != 0) {
		t.Fatalf("a refused Put Block staged a block: %v, %+v", err, bl)
	}
	resp, _ = b.do(t, "PUT", "zero/b?comp=block&blockid="+blockID(1), "x", nil)
	wantStatus(t, resp, http.StatusCreated, "", "Put Block of 1 byte")
}
