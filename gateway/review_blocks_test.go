package gateway_test

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"

	"github.com/blobgw/blobgw/internal/crc64az"
)

// TestPutBlockListCRC64: Put Block List checks x-ms-content-crc64 against
// its body as Put Block does (it was ignored): a mismatch is 400
// Crc64Mismatch and commits nothing (the blocks stay staged), one that
// matches commits and is echoed, and it with Content-MD5 is 400
// BothCrc64AndMd5HeaderPresent.
func TestPutBlockListCRC64(t *testing.T) {
	b := setup(t, "sqlite+disk")
	ctx := context.Background()
	createContainers(t, b.client, "blcrc")
	bb := b.client.ServiceClient().NewContainerClient("blcrc").NewBlockBlobClient("b")
	if _, err := bb.StageBlock(ctx, blockID(0), nopSeeker("data"), nil); err != nil {
		t.Fatal(err)
	}
	body := "<BlockList><Latest>" + blockID(0) + "</Latest></BlockList>"
	crc := base64.StdEncoding.EncodeToString(binary.LittleEndian.AppendUint64(nil, crc64az.Checksum([]byte(body))))
	wrong := base64.StdEncoding.EncodeToString(binary.LittleEndian.AppendUint64(nil, crc64az.Checksum([]byte(body+" "))))
	sum := md5.Sum([]byte(body))
	for _, c := range []struct {
		name   string
		hdr    map[string]string
		status int
		code   string
	}{
		{"a wrong x-ms-content-crc64", map[string]string{"x-ms-content-crc64": wrong}, 400, "Crc64Mismatch"},
		{"x-ms-content-crc64 not 8 bytes", map[string]string{"x-ms-content-crc64": "AAAA"}, 400, "InvalidHeaderValue"},
		{"both digests", map[string]string{"x-ms-content-crc64": crc, "Content-MD5": base64.StdEncoding.EncodeToString(sum[:])}, 400, "BothCrc64AndMd5HeaderPresent"},
	} {
		resp, out := b.do(t, "PUT", "blcrc/b?comp=blocklist", body, c.hdr)
		if d := statusDiff(resp, c.status, c.code); d != "" {
			t.Fatalf("%s: %s\n%s", c.name, d, out)
		}
	}
	bl, err := bb.GetBlockList(ctx, blockblob.BlockListTypeAll, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(bl.CommittedBlocks) != 0 || len(bl.UncommittedBlocks) != 1 {
		t.Fatalf("after the refusals: %d committed, %d uncommitted blocks; want 0 and 1", len(bl.CommittedBlocks), len(bl.UncommittedBlocks))
	}
	resp, out := b.do(t, "PUT", "blcrc/b?comp=blocklist", body, map[string]string{"x-ms-content-crc64": crc})
	if d := statusDiff(resp, 201, ""); d != "" {
		t.Fatalf("the right x-ms-content-crc64: %s\n%s", d, out)
	}
	if got := resp.Header.Get("x-ms-content-crc64"); got != crc {
		t.Errorf("x-ms-content-crc64 answered %q, want %q", got, crc)
	}
	if got := string(download(t, b.client, "blcrc", "b")); got != "data" {
		t.Fatalf("committed %q", got)
	}
}

// TestSetBlobTagsCRC64: Set Blob Tags checks x-ms-content-crc64 against
// its body (the SDK sends it as TransactionalContentCRC64; it was
// ignored): a mismatch is 400 Crc64Mismatch and the tags stay, one that
// matches sets them, and Content-MD5 with it is 400
// BothCrc64AndMd5HeaderPresent.
func TestSetBlobTagsCRC64(t *testing.T) {
	b := setup(t, "sqlite+disk")
	ctx := context.Background()
	createContainers(t, b.client, "tagcrc")
	if _, err := b.client.UploadBuffer(ctx, "tagcrc", "b", []byte("x"), &azblob.UploadBufferOptions{Tags: map[string]string{"k": "old"}}); err != nil {
		t.Fatal(err)
	}
	body := "<Tags><TagSet><Tag><Key>k</Key><Value>new</Value></Tag></TagSet></Tags>"
	crc := binary.LittleEndian.AppendUint64(nil, crc64az.Checksum([]byte(body)))
	wrong := binary.LittleEndian.AppendUint64(nil, crc64az.Checksum([]byte(body+" ")))
	bc := b.client.ServiceClient().NewContainerClient("tagcrc").NewBlobClient("b")
	_, err := bc.SetTags(ctx, map[string]string{"k": "new"}, &blob.SetTagsOptions{TransactionalContentCRC64: wrong})
	wantErr(t, err, 400, "Crc64Mismatch")
	sum := md5.Sum([]byte(body))
	resp, out := b.do(t, "PUT", "tagcrc/b?comp=tags", body, map[string]string{
		"x-ms-content-crc64": base64.StdEncoding.EncodeToString(crc), "Content-MD5": base64.StdEncoding.EncodeToString(sum[:])})
	if d := statusDiff(resp, 400, "BothCrc64AndMd5HeaderPresent"); d != "" {
		t.Fatalf("both digests: %s\n%s", d, out)
	}
	got, err := bc.GetTags(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.BlobTagSet) != 1 || *got.BlobTagSet[0].Value != "old" {
		t.Fatalf("tags after the refusals: %+v", got.BlobTagSet)
	}
	resp, out = b.do(t, "PUT", "tagcrc/b?comp=tags", body, map[string]string{"x-ms-content-crc64": base64.StdEncoding.EncodeToString(crc)})
	if d := statusDiff(resp, 204, ""); d != "" {
		t.Fatalf("the right x-ms-content-crc64: %s\n%s", d, out)
	}
	if got, err = bc.GetTags(ctx, nil); err != nil || len(got.BlobTagSet) != 1 || *got.BlobTagSet[0].Value != "new" {
		t.Fatalf("tags after Set Blob Tags: %+v, %v", got.BlobTagSet, err)
	}
}
