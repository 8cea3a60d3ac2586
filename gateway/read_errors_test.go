package gateway_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/blobgw/blobgw/internal/config"
	"github.com/blobgw/blobgw/leasedb"
)

// TestReadErrorCarriesNoBlobHeaders: a Get Blob refused after the row was
// read (416 InvalidRange, x-ms-range-get-content-md5 without a Range or
// with x-ms-range-get-content-crc64: 400, the first object gone: 500) answers an XML error
// without the blob's headers. A blob's Content-Encoding: gzip on the
// error's XML made the body unreadable (Go's client, asking for gzip
// itself, failed with "gzip: invalid header"), and its
// Content-Disposition, Cache-Control, ETag and metadata described bytes
// the answer does not carry.
func TestReadErrorCarriesNoBlobHeaders(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "errs")
	for _, name := range []string{"gz", "gone"} {
		_, err := blockClient(b.client, "errs", name).UploadBuffer(ctx, []byte("hello, world"), &blockblob.UploadBufferOptions{
			HTTPHeaders: &blob.HTTPHeaders{BlobContentEncoding: to.Ptr("gzip"), BlobContentDisposition: to.Ptr("attachment"),
				BlobCacheControl: to.Ptr("max-age=60"), BlobContentLanguage: to.Ptr("en")},
			Metadata: map[string]*string{"Kind": to.Ptr("text")}})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := b.stores[0].View(ctx, func(tx leasedb.Tx) error {
		row, err := tx.Blob(ctx, config.DevAccountName, "errs", "gone", leasedb.LockNone)
		if err != nil {
			return err
		}
		return b.backend.Delete(ctx, row.Extents[0].Key)
	}); err != nil {
		t.Fatal(err)
	}
	blobHeaders := []string{"Content-Encoding", "Content-Disposition", "Cache-Control", "Content-Language",
		"Content-Md5", "X-Ms-Blob-Content-Md5", "Etag", "Last-Modified", "X-Ms-Blob-Type", "X-Ms-Meta-Kind", "Accept-Ranges"}
	for _, c := range []struct {
		name, path   string
		hdr          map[string]string
		status       int
		code, crange string
	}{
		{"range past the end", "errs/gz", map[string]string{"x-ms-range": "bytes=100-"}, 416, "InvalidRange", "bytes */12"},
		{"range digest without a range", "errs/gz", map[string]string{"x-ms-range-get-content-md5": "true"}, 400, "InvalidHeaderValue", ""},
		{"both range digests", "errs/gz", map[string]string{"Range": "bytes=0-3", "x-ms-range-get-content-crc64": "true", "x-ms-range-get-content-md5": "true"}, 400, "BothCrc64AndMd5RangeHeaderPresent", ""},
		{"object gone", "errs/gone", nil, 500, "InternalError", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest("GET", b.serviceURL(0)+c.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range c.hdr {
				req.Header.Set(k, v)
			}
			b.sign(t, req)
			// Go's client asks for gzip and decodes a Content-Encoding:
			// gzip answer itself, as a browser would; send fails the
			// test when the body cannot be read.
			resp, body := send(t, req)
			wantStatus(t, resp, c.status, c.code, c.name)
			if !strings.Contains(body, "<Code>"+c.code+"</Code>") {
				t.Errorf("body %q, want the %s error", body, c.code)
			}
			for _, h := range blobHeaders {
				if v, ok := resp.Header[h]; ok {
					t.Errorf("%s: %v on the error answer", h, v)
				}
			}
			if got := resp.Header.Get("Content-Range"); got != c.crange {
				t.Errorf("Content-Range %q, want %q", got, c.crange)
			}
			if got := resp.Header.Get("Content-Type"); got != "application/xml" {
				t.Errorf("Content-Type %q, want application/xml", got)
			}
		})
	}
}

// TestGetBlobStructuredBodyRefused: a Get Blob asking for its answer as a
// structured message (x-ms-structured-body: the SDKs' segmented CRC64
// framing, TransferValidationTypeComputeStructuredMessageCRC64) is 400
// UnsupportedHeader. The gateway answered the plain bytes without the
// header, and the SDK, finding no framing to decode, handed them over
// without the CRC64 checks the caller asked for.
func TestGetBlobStructuredBodyRefused(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "framing")
	bc := blockClient(b.client, "framing", "x")
	if _, err := bc.UploadBuffer(ctx, []byte("framed or not"), nil); err != nil {
		t.Fatal(err)
	}
	for _, rng := range []blob.HTTPRange{{}, {Offset: 2, Count: 5}} {
		resp, err := bc.DownloadStream(ctx, &blob.DownloadStreamOptions{Range: rng,
			TransactionalValidation: blob.TransferValidationTypeComputeStructuredMessageCRC64(4 << 10)})
		if err == nil {
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			t.Fatalf("range %+v: read %q unchecked, want 400 UnsupportedHeader", rng, data)
		}
		wantErr(t, err, 400, "UnsupportedHeader")
	}
	// Without it the blob reads as before.
	if got := string(download(t, b.client, "framing", "x")); got != "framed or not" {
		t.Fatalf("read %q", got)
	}
}

// TestGetBlobIfRange: a Range sent with If-Range (a browser or download
// manager resuming a download) is served only while the validator still
// names the blob: its ETag, compared strongly (a weak W/ one never
// matches), or its Last-Modified date exactly. Otherwise the Range is
// ignored and the whole blob answers 200, so the client does not join the
// new blob's tail to the old one's head; that holds for a Range past the
// end too (200, not 416).
func TestGetBlobIfRange(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "resume")
	bc := blockClient(b.client, "resume", "x")
	first, err := bc.UploadBuffer(ctx, []byte("first content"), nil)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := bc.UploadBuffer(ctx, []byte("second content, longer"), nil)
	if err != nil {
		t.Fatal(err)
	}
	etag, old := string(*cur.ETag), string(*first.ETag)
	lm := cur.LastModified.UTC().Format(http.TimeFormat)
	for _, c := range []struct {
		name, rng, ifRange string
		status             int
		body, crange       string
	}{
		{"current etag", "bytes=7-", etag, 206, "content, longer", "bytes 7-21/22"},
		{"stale etag", "bytes=7-", old, 200, "second content, longer", ""},
		{"weak etag", "bytes=7-", "W/" + etag, 200, "second content, longer", ""},
		{"last modified", "bytes=0-5", lm, 206, "second", "bytes 0-5/22"},
		{"older date", "bytes=0-5", cur.LastModified.Add(-time.Hour).UTC().Format(http.TimeFormat), 200, "second content, longer", ""},
		{"stale etag, range past the end", "bytes=100-", old, 200, "second content, longer", ""},
		{"current etag, range past the end", "bytes=100-", etag, 416, "", "bytes */22"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, body := b.do(t, "GET", "resume/x", "", map[string]string{"x-ms-range": c.rng, "If-Range": c.ifRange})
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d (%s)", resp.StatusCode, c.status, resp.Header.Get("x-ms-error-code"))
			}
			if got := resp.Header.Get("Content-Range"); got != c.crange {
				t.Errorf("Content-Range %q, want %q", got, c.crange)
			}
			if c.status != 416 && body != c.body {
				t.Errorf("body %q, want %q", body, c.body)
			}
		})
	}
}
