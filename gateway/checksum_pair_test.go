package gateway_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/appendblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/pageblob"
)

// TestChecksumPairs: a request carries one transactional digest. Content-MD5
// with x-ms-content-crc64 on Put Blob, Put Block, Append Block and Put Page,
// and x-ms-source-content-md5 with x-ms-source-content-crc64 on the
// From-URL operations, are 400 BothCrc64AndMd5HeaderPresent (before: 400
// InvalidHeaderValue, and the source pair was taken with its CRC64
// ignored), and store nothing. x-ms-source-content-crc64 alone is checked
// against the source bytes on Put Block, Append Block and Put Page From URL
// (before: ignored, so a wrong value was accepted) and echoed as
// x-ms-content-crc64; Put Blob From URL and Copy Blob From URL, which do
// not take it, refuse it (400 UnsupportedHeader).
func TestChecksumPairs(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "sums")
	cont := b.client.ServiceClient().NewContainerClient("sums")
	data := randBytes(4096, 77)
	src := cont.NewBlockBlobClient("src")
	if _, err := src.UploadBuffer(ctx, data, nil); err != nil {
		t.Fatal(err)
	}
	ab := cont.NewAppendBlobClient("ap")
	if _, err := ab.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	pb := cont.NewPageBlobClient("pg")
	if _, err := pb.Create(ctx, 4096, nil); err != nil {
		t.Fatal(err)
	}
	page := string(data[:512])
	md5v, crcv := b64(md5Of([]byte(page))), b64(azureCRC64([]byte(page)))
	both := map[string]string{"Content-MD5": md5v, "x-ms-content-crc64": crcv}
	with := func(h map[string]string, more ...string) map[string]string {
		m := map[string]string{}
		for k, v := range h {
			m[k] = v
		}
		for i := 0; i+1 < len(more); i += 2 {
			m[more[i]] = more[i+1]
		}
		return m
	}
	srcBoth := map[string]string{"x-ms-copy-source": src.URL(), "x-ms-source-range": "bytes=0-511",
		"x-ms-source-content-md5": md5v, "x-ms-source-content-crc64": crcv}
	for _, tc := range []struct {
		name, path, body string
		hdr              map[string]string
		status           int
		code             string
	}{
		{"put blob", "sums/both", page, with(both, "x-ms-blob-type", "BlockBlob"), 400, "BothCrc64AndMd5HeaderPresent"},
		{"put block", "sums/both?comp=block&blockid=" + b64([]byte("b1")), page, both, 400, "BothCrc64AndMd5HeaderPresent"},
		{"append block", "sums/ap?comp=appendblock", page, both, 400, "BothCrc64AndMd5HeaderPresent"},
		{"put page", "sums/pg?comp=page", page, with(both, "x-ms-page-write", "update", "x-ms-range", "bytes=0-511"), 400, "BothCrc64AndMd5HeaderPresent"},
		{"put block from url", "sums/both?comp=block&blockid=" + b64([]byte("b1")), "", srcBoth, 400, "BothCrc64AndMd5HeaderPresent"},
		{"append block from url", "sums/ap?comp=appendblock", "", srcBoth, 400, "BothCrc64AndMd5HeaderPresent"},
		{"put page from url", "sums/pg?comp=page", "", with(srcBoth, "x-ms-page-write", "update", "x-ms-range", "bytes=0-511"), 400, "BothCrc64AndMd5HeaderPresent"},
		{"source crc64 not 8 bytes", "sums/both?comp=block&blockid=" + b64([]byte("b1")), "",
			map[string]string{"x-ms-copy-source": src.URL(), "x-ms-source-content-crc64": b64([]byte("four"))}, 400, "InvalidHeaderValue"},
		{"put blob from url crc64", "sums/both", "", map[string]string{"x-ms-blob-type": "BlockBlob", "x-ms-copy-source": src.URL(),
			"x-ms-source-content-crc64": b64(azureCRC64(data))}, 400, "UnsupportedHeader"},
		{"copy blob from url crc64", "sums/both", "", map[string]string{"x-ms-requires-sync": "true", "x-ms-copy-source": src.URL(),
			"x-ms-source-content-crc64": b64(azureCRC64(data))}, 400, "UnsupportedHeader"},
	} {
		resp, body := b.do(t, "PUT", tc.path, tc.body, tc.hdr)
		if d := statusDiff(resp, tc.status, tc.code); d != "" {
			t.Errorf("%s: %s\n%s", tc.name, d, body)
		} else if tc.code == "BothCrc64AndMd5HeaderPresent" && !strings.Contains(body, "Both x-ms-content-crc64 header and Content-MD5 header are present.") {
			t.Errorf("%s: message %s", tc.name, body)
		}
	}
	// Nothing of the refused requests was stored.
	if b.exists(t, "sums/both") {
		t.Fatal("a refused Put Blob stored a blob")
	}
	bl, err := cont.NewBlockBlobClient("both").GetBlockList(ctx, blockblob.BlockListTypeAll, nil)
	if statusOf(err) != 404 && (err != nil || len(bl.UncommittedBlocks) != 0) {
		t.Fatalf("a refused Put Block staged a block: %+v %v", bl, err)
	}
	if p, err := ab.GetProperties(ctx, nil); err != nil || *p.ContentLength != 0 {
		t.Fatalf("a refused append: %v %v", p.ContentLength, err)
	}
	if n := pageRangeCount(t, pb); n != 0 {
		t.Fatalf("a refused page write left %d ranges", n)
	}

	// x-ms-source-content-crc64 is checked against the bytes read.
	good, bad := azureCRC64(data[:512]), azureCRC64(data[512:1024])
	rng := blob.HTTPRange{Offset: 0, Count: 512}
	dst := cont.NewBlockBlobClient("staged")
	_, err = dst.StageBlockFromURL(ctx, blockID(0), src.URL(), &blockblob.StageBlockFromURLOptions{Range: rng,
		SourceContentValidation: blob.SourceContentValidationTypeCRC64(bad)})
	wantErr(t, err, 400, "Crc64Mismatch")
	_, err = ab.AppendBlockFromURL(ctx, src.URL(), &appendblob.AppendBlockFromURLOptions{Range: rng,
		SourceContentValidation: blob.SourceContentValidationTypeCRC64(bad)})
	wantErr(t, err, 400, "Crc64Mismatch")
	_, err = pb.UploadPagesFromURL(ctx, src.URL(), 0, 0, 512, &pageblob.UploadPagesFromURLOptions{
		SourceContentValidation: blob.SourceContentValidationTypeCRC64(bad)})
	wantErr(t, err, 400, "Crc64Mismatch")
	if bl, err := dst.GetBlockList(ctx, blockblob.BlockListTypeAll, nil); statusOf(err) != 404 && (err != nil || len(bl.UncommittedBlocks) != 0) {
		t.Fatalf("a mismatched Put Block From URL staged a block: %+v %v", bl, err)
	}
	if p, err := ab.GetProperties(ctx, nil); err != nil || *p.ContentLength != 0 {
		t.Fatalf("a mismatched append: %v %v", p.ContentLength, err)
	}
	if n := pageRangeCount(t, pb); n != 0 {
		t.Fatalf("a mismatched page write left %d ranges", n)
	}

	sr, err := dst.StageBlockFromURL(ctx, blockID(0), src.URL(), &blockblob.StageBlockFromURLOptions{Range: rng,
		SourceContentValidation: blob.SourceContentValidationTypeCRC64(good)})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sr.ContentCRC64, good) {
		t.Errorf("Put Block From URL x-ms-content-crc64 %x, want %x", sr.ContentCRC64, good)
	}
	ar, err := ab.AppendBlockFromURL(ctx, src.URL(), &appendblob.AppendBlockFromURLOptions{Range: rng,
		SourceContentValidation: blob.SourceContentValidationTypeCRC64(good)})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ar.ContentCRC64, good) {
		t.Errorf("Append Block From URL x-ms-content-crc64 %x, want %x", ar.ContentCRC64, good)
	}
	pr, err := pb.UploadPagesFromURL(ctx, src.URL(), 0, 0, 512, &pageblob.UploadPagesFromURLOptions{
		SourceContentValidation: blob.SourceContentValidationTypeCRC64(good)})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(pr.ContentCRC64, good) {
		t.Errorf("Put Page From URL x-ms-content-crc64 %x, want %x", pr.ContentCRC64, good)
	}
	if got := download(t, b.client, "sums", "ap"); !bytes.Equal(got, data[:512]) {
		t.Fatalf("appended %d bytes, want the source's first 512", len(got))
	}
	if got := downloadRange(t, pb, 0, 512); !bytes.Equal(got, data[:512]) {
		t.Fatal("page written from the source differs")
	}
}

// pageRangeCount is the number of written ranges of a page blob.
func pageRangeCount(t *testing.T, pb *pageblob.Client) int {
	t.Helper()
	n := 0
	pager := pb.NewGetPageRangesPager(nil)
	for pager.More() {
		resp, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		n += len(resp.PageRange)
	}
	return n
}
