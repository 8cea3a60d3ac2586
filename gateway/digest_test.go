package gateway_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/crc64"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/appendblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/pageblob"
)

// azureCRC64 is the SDK's CRC64 of p, as x-ms-content-crc64 carries it.
func azureCRC64(p []byte) []byte {
	return binary.LittleEndian.AppendUint64(nil, crc64.Checksum(p, crc64.MakeTable(0x9A6C9329AC4BC9B5)))
}

// TestTransactionalCRC64: a body sent with x-ms-content-crc64 (the SDK's
// TransferValidationTypeComputeCRC64 / TransferValidationTypeCRC64) is
// checked: a match is stored and the CRC64 echoed, a mismatch is 400
// Crc64Mismatch and stores nothing; on Put Blob, Put Block, Append Block
// and Put Page. A structured-message body (segmented CRC64 framing) is
// refused with 400 UnsupportedHeader instead of being stored framing and
// all.
func TestTransactionalCRC64(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "crc")
		data := randBytes(300_000, 51)
		wrong := blob.TransferValidationTypeCRC64(12345)

		// Put Blob.
		bb := blockClient(b.client, "crc", "put")
		up, err := bb.Upload(ctx, nopSeeker(string(data)), &blockblob.UploadOptions{TransactionalValidation: blob.TransferValidationTypeComputeCRC64()})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(up.ContentCRC64, azureCRC64(data)) {
			t.Fatalf("Put Blob x-ms-content-crc64 %x, want %x", up.ContentCRC64, azureCRC64(data))
		}
		_, err = bb.Upload(ctx, nopSeeker("other bytes"), &blockblob.UploadOptions{TransactionalValidation: wrong})
		wantErr(t, err, 400, "Crc64Mismatch")
		if got := download(t, b.client, "crc", "put"); !bytes.Equal(got, data) {
			t.Fatal("a refused Put Blob changed the blob")
		}

		// Put Block.
		sb := blockClient(b.client, "crc", "blocks")
		sr, err := sb.StageBlock(ctx, blockID(1), nopSeeker(string(data)), &blockblob.StageBlockOptions{TransactionalValidation: blob.TransferValidationTypeComputeCRC64()})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(sr.ContentCRC64, azureCRC64(data)) || sr.ContentMD5 != nil {
			t.Fatalf("Put Block: x-ms-content-crc64 %x (want %x), Content-MD5 %x", sr.ContentCRC64, azureCRC64(data), sr.ContentMD5)
		}
		_, err = sb.StageBlock(ctx, blockID(2), nopSeeker("two"), &blockblob.StageBlockOptions{TransactionalValidation: wrong})
		wantErr(t, err, 400, "Crc64Mismatch")
		bl, err := sb.GetBlockList(ctx, blockblob.BlockListTypeUncommitted, nil)
		if err != nil || len(bl.UncommittedBlocks) != 1 {
			t.Fatalf("staged after a refused block: %v %d", err, len(bl.UncommittedBlocks))
		}

		// Append Block.
		ab := b.client.ServiceClient().NewContainerClient("crc").NewAppendBlobClient("log")
		if _, err := ab.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		ar, err := ab.AppendBlock(ctx, nopSeeker("entry one\n"), &appendblob.AppendBlockOptions{TransactionalValidation: blob.TransferValidationTypeComputeCRC64()})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(ar.ContentCRC64, azureCRC64([]byte("entry one\n"))) {
			t.Fatalf("Append Block x-ms-content-crc64 %x", ar.ContentCRC64)
		}
		_, err = ab.AppendBlock(ctx, nopSeeker("entry two\n"), &appendblob.AppendBlockOptions{TransactionalValidation: wrong})
		wantErr(t, err, 400, "Crc64Mismatch")

		// Put Page: 1 MiB of pages, long enough to be folded in many
		// pieces as the body arrives.
		pb := b.client.ServiceClient().NewContainerClient("crc").NewPageBlobClient("disk")
		if _, err := pb.Create(ctx, 2<<20, nil); err != nil {
			t.Fatal(err)
		}
		pages := randBytes(1<<20, 52)
		pr, err := pb.UploadPages(ctx, rsc{bytes.NewReader(pages)}, rangeOf(0, int64(len(pages))),
			&pageblob.UploadPagesOptions{TransactionalValidation: blob.TransferValidationTypeComputeCRC64()})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(pr.ContentCRC64, azureCRC64(pages)) {
			t.Fatalf("Put Page x-ms-content-crc64 %x, want %x", pr.ContentCRC64, azureCRC64(pages))
		}
		_, err = pb.UploadPages(ctx, rsc{bytes.NewReader(pages[:4096])}, rangeOf(1<<20, 4096),
			&pageblob.UploadPagesOptions{TransactionalValidation: wrong})
		wantErr(t, err, 400, "Crc64Mismatch")
		if got := download(t, b.client, "crc", "disk"); !bytes.Equal(got[:1<<20], pages) || !bytes.Equal(got[1<<20:], make([]byte, 1<<20)) {
			t.Fatal("page blob after a refused Put Page: not the first write's pages and zeros")
		}

		// Structured-message bodies are refused, and change nothing.
		_, err = sb.StageBlock(ctx, blockID(3), nopSeeker(string(data)), &blockblob.StageBlockOptions{TransactionalValidation: blob.TransferValidationTypeComputeStructuredMessageCRC64(64 << 10)})
		wantErr(t, err, 400, "UnsupportedHeader")
		_, err = ab.AppendBlock(ctx, nopSeeker("entry three\n"), &appendblob.AppendBlockOptions{TransactionalValidation: blob.TransferValidationTypeComputeStructuredMessageCRC64(64 << 10)})
		wantErr(t, err, 400, "UnsupportedHeader")
		if got := string(download(t, b.client, "crc", "log")); got != "entry one\n" {
			t.Fatalf("append blob after refused appends: %q", got)
		}
		b.collectNoLeak(t)
	})
}

// TestRangeDigests: Get Blob with a Range of at most 4 MiB and
// x-ms-range-get-content-md5 (or -crc64) answers the digest of the range;
// both at once (400 BothCrc64AndMd5RangeHeaderPresent), no Range, or a
// longer range (400 InvalidHeaderValue) are refused.
func TestRangeDigests(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "ranges")
	data := randBytes(5<<20+100, 61)
	putBlocks(t, b.client, "ranges", "x", data, 1<<20) // the range below crosses blocks
	part := data[1<<20-7 : 3<<20+11]
	resp, err := blockClient(b.client, "ranges", "x").DownloadStream(ctx, &blob.DownloadStreamOptions{
		Range: blob.HTTPRange{Offset: 1<<20 - 7, Count: int64(len(part))}, RangeGetContentMD5: to.Ptr(true)})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	sum := md5.Sum(part)
	if !bytes.Equal(got, part) || !bytes.Equal(resp.ContentMD5, sum[:]) {
		t.Fatalf("ranged MD5: body equal %v, Content-MD5 %x want %x", bytes.Equal(got, part), resp.ContentMD5, sum)
	}
	raw := func(hdr map[string]string) *http.Response {
		t.Helper()
		r, _ := b.do(t, "GET", "ranges/x", "", hdr)
		return r
	}
	r := raw(map[string]string{"x-ms-range": "bytes=100-4194403", "x-ms-range-get-content-crc64": "true"})
	if r.StatusCode != 206 || r.Header.Get("x-ms-content-crc64") != b64(azureCRC64(data[100:4194404])) {
		t.Fatalf("ranged CRC64: %d %q", r.StatusCode, r.Header.Get("x-ms-content-crc64"))
	}
	// Both at once: Azure's own code, without header details (as
	// recorded from the service).
	r, body := b.do(t, "GET", "ranges/x", "", map[string]string{"x-ms-range": "bytes=0-99", "x-ms-range-get-content-crc64": "true", "x-ms-range-get-content-md5": "true"})
	wantStatus(t, r, 400, "BothCrc64AndMd5RangeHeaderPresent", "both range digests")
	if !strings.Contains(body, "Both x-ms-range-get-content-crc64 header and x-ms-range-get-content-md5 header are present.") {
		t.Errorf("both range digests: %s", body)
	}
	for _, hdr := range []map[string]string{
		{"x-ms-range-get-content-md5": "true"},
		{"x-ms-range": "bytes=0-4194304", "x-ms-range-get-content-md5": "true"},
	} {
		wantStatus(t, raw(hdr), 400, "InvalidHeaderValue", fmt.Sprint(hdr))
	}
}

func b64(p []byte) string { return base64.StdEncoding.EncodeToString(p) }

// TestLargePutBlobMD5: several Put Blobs of a few MiB at once (each body
// streamed to the backend while its MD5 is computed): each blob's stored
// and answered Content-MD5 is its own bytes' MD5, and a wrong Content-MD5
// sent with one is refused.
func TestLargePutBlobMD5(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "big")
	const n = 4
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func(i int) {
			data := randBytes(3<<20+i*4099, int64(70+i))
			sum := md5.Sum(data)
			name := fmt.Sprintf("b%d", i)
			resp, err := blockClient(b.client, "big", name).UploadBuffer(ctx, data, nil)
			if err != nil {
				errs <- err
				return
			}
			p, err := blockClient(b.client, "big", name).GetProperties(ctx, nil)
			if err != nil {
				errs <- err
				return
			}
			if !bytes.Equal(resp.ContentMD5, sum[:]) || !bytes.Equal(p.ContentMD5, sum[:]) {
				errs <- fmt.Errorf("%s: answered %x, stored %x, want %x", name, resp.ContentMD5, p.ContentMD5, sum)
				return
			}
			errs <- nil
		}(i)
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	data := randBytes(2<<20, 80)
	wrong := md5.Sum(data[1:])
	_, err := blockClient(b.client, "big", "bad").Upload(ctx, streaming.NopCloser(bytes.NewReader(data)),
		&blockblob.UploadOptions{TransactionalValidation: blob.TransferValidationTypeMD5(wrong[:])})
	wantErr(t, err, 400, "Md5Mismatch")
}
