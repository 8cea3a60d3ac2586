package gateway_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/appendblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
)

// TestPutBlockFromURL: a blob assembled from ranges of sources, local and
// remote (a server honouring Range, one ignoring it, one of unknown
// length), committed in an order of its own; Append Block From URL grows
// an append blob from ranges.
func TestPutBlockFromURL(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "box")
		data := randBytes(600<<10, 51)
		src := putBlocks(t, b.client, "box", "src", data, 200<<10)
		web := serveBytes(t, data)

		dst := blockClient(b.client, "box", "assembled")
		type part struct {
			url        string
			off, count int64
		}
		parts := []part{
			{src.URL(), 400 << 10, 100 << 10}, // inside one source block
			{src.URL(), 150 << 10, 100 << 10}, // across a block boundary
			{web.URL + "/f", 10, 5000},        // Range honoured
			{web.URL + "/norange", 7, 70000},  // Range ignored: cut here
			{web.URL + "/chunked", 0, 0},      // whole, unknown length
			{src.URL(), 590 << 10, 0},         // open-ended: to the end
		}
		var want []byte
		var ids []string
		for i, p := range parts {
			id := blockID(i)
			resp, err := dst.StageBlockFromURL(ctx, id, p.url, &blockblob.StageBlockFromURLOptions{Range: blob.HTTPRange{Offset: p.off, Count: p.count}})
			if err != nil {
				t.Fatalf("part %d: %v", i, err)
			}
			end := int64(len(data))
			if p.count > 0 {
				end = p.off + p.count
			}
			chunk := data[p.off:end]
			if sum := md5.Sum(chunk); !bytes.Equal(resp.ContentMD5, sum[:]) {
				t.Fatalf("part %d: Content-MD5 %x", i, resp.ContentMD5)
			}
			want = append(want, chunk...)
			ids = append(ids, id)
		}
		bl, err := dst.GetBlockList(ctx, blockblob.BlockListTypeUncommitted, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(bl.UncommittedBlocks) != len(parts) {
			t.Fatalf("%d uncommitted blocks", len(bl.UncommittedBlocks))
		}
		if _, err := dst.CommitBlockList(ctx, ids, nil); err != nil {
			t.Fatal(err)
		}
		if got := download(t, b.client, "box", "assembled"); !bytes.Equal(got, want) {
			t.Fatalf("assembled blob differs (%d bytes, want %d)", len(got), len(want))
		}

		// A range past the end of the source; a missing source.
		_, err = dst.StageBlockFromURL(ctx, blockID(9), src.URL(), &blockblob.StageBlockFromURLOptions{Range: blob.HTTPRange{Offset: int64(len(data)), Count: 10}})
		wantErr(t, err, 416, "CannotVerifyCopySource")
		_, err = dst.StageBlockFromURL(ctx, blockID(9), web.URL+"/f", &blockblob.StageBlockFromURLOptions{Range: blob.HTTPRange{Offset: int64(len(data)), Count: 10}})
		wantErr(t, err, 416, "CannotVerifyCopySource")
		_, err = dst.StageBlockFromURL(ctx, blockID(9), blockClient(b.client, "box", "nope").URL(), nil)
		wantErr(t, err, 404, "CannotVerifyCopySource")
		_, err = dst.StageBlockFromURL(ctx, blockID(9), web.URL+"/missing", nil)
		wantErr(t, err, 404, "CannotVerifyCopySource")

		// Append Block From URL.
		ab := b.client.ServiceClient().NewContainerClient("box").NewAppendBlobClient("log")
		if _, err := ab.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		r1, err := ab.AppendBlockFromURL(ctx, src.URL(), &appendblob.AppendBlockFromURLOptions{Range: blob.HTTPRange{Offset: 100, Count: 1000}})
		if err != nil {
			t.Fatal(err)
		}
		r2, err := ab.AppendBlockFromURL(ctx, web.URL+"/f", &appendblob.AppendBlockFromURLOptions{Range: blob.HTTPRange{Offset: 5000, Count: 234},
			AppendPositionAccessConditions: &appendblob.AppendPositionAccessConditions{AppendPosition: to.Ptr(int64(1000))}})
		if err != nil {
			t.Fatal(err)
		}
		if *r1.BlobAppendOffset != "0" || *r2.BlobAppendOffset != "1000" || *r2.BlobCommittedBlockCount != 2 {
			t.Fatalf("append offsets %s %s count %d", *r1.BlobAppendOffset, *r2.BlobAppendOffset, *r2.BlobCommittedBlockCount)
		}
		_, err = ab.AppendBlockFromURL(ctx, src.URL(), &appendblob.AppendBlockFromURLOptions{Range: blob.HTTPRange{Offset: 0, Count: 10},
			AppendPositionAccessConditions: &appendblob.AppendPositionAccessConditions{AppendPosition: to.Ptr(int64(5))}})
		wantErr(t, err, 412, "AppendPositionConditionNotMet")
		if got := download(t, b.client, "box", "log"); !bytes.Equal(got, append(append([]byte{}, data[100:1100]...), data[5000:5234]...)) {
			t.Fatal("append blob from URL differs")
		}
		b.collectNoLeak(t)
	})
}
