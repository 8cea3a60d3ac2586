package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestAppendBlockZeroLength: an Append Block whose Content-Length is 0 is
// 400 InvalidHeaderValue naming Content-Length with the value 0, unlike a
// zero-length Put Block (411 MissingContentLengthHeader,
// TestPutBlockZeroLength): Azurite, Microsoft's emulator of the service,
// refuses a zero-length Append Block so (before it looks at the blob),
// and the service answers an empty Data Lake append (Path Update
// action=append, the same front end) InvalidHeaderValue as well. The blob
// is left as it was: no block counted, the ETag kept.
func TestAppendBlockZeroLength(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "zapp")
	ac := b.client.ServiceClient().NewContainerClient("zapp").NewAppendBlobClient("log")
	cr, err := ac.Create(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, body := b.do(t, "PUT", "zapp/log?comp=appendblock", "", nil)
	wantStatus(t, resp, http.StatusBadRequest, "InvalidHeaderValue", "Append Block of 0 bytes")
	if !strings.Contains(body, "<HeaderName>Content-Length</HeaderName>") || !strings.Contains(body, "<HeaderValue>0</HeaderValue>") {
		t.Errorf("the refusal does not name Content-Length: 0: %s", body)
	}
	p, err := ac.GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if *p.ETag != *cr.ETag || p.BlobCommittedBlockCount == nil || *p.BlobCommittedBlockCount != 0 || *p.ContentLength != 0 {
		t.Fatalf("a refused Append Block changed the blob: etag %s (was %s), blocks %v, length %d", *p.ETag, *cr.ETag, p.BlobCommittedBlockCount, *p.ContentLength)
	}
	resp, _ = b.do(t, "PUT", "zapp/log?comp=appendblock", "x", nil)
	wantStatus(t, resp, http.StatusCreated, "", "Append Block of 1 byte")
}
