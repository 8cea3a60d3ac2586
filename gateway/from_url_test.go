package gateway_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"net/http"
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

// TestSourceRangeOverflow: an x-ms-source-range ending at the largest
// int64 ("bytes=0-9223372036854775807": its length overflows) is a block
// longer than Put Block From URL or Append Block From URL takes, 413
// RequestBodyTooLarge as "bytes=5-9223372036854775807" is, never a 500;
// nothing is staged or appended.
func TestSourceRangeOverflow(t *testing.T) {
	forKinds(t, []string{"sqlite", "postgres"}, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "sro")
		src := putBlocks(t, b.client, "sro", "src", randBytes(10<<10, 52), 2<<10)
		ab := b.client.ServiceClient().NewContainerClient("sro").NewAppendBlobClient("log")
		if _, err := ab.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		for _, rng := range []string{"bytes=0-9223372036854775807", "bytes=5-9223372036854775807"} {
			hdr := map[string]string{"x-ms-copy-source": src.URL(), "x-ms-source-range": rng}
			resp, _ := b.do(t, http.MethodPut, "sro/dst?comp=block&blockid=YmxrMQ==", "", hdr)
			wantStatus(t, resp, 413, "RequestBodyTooLarge", "Put Block From URL "+rng)
			resp, _ = b.do(t, http.MethodPut, "sro/log?comp=appendblock", "", hdr)
			wantStatus(t, resp, 413, "RequestBodyTooLarge", "Append Block From URL "+rng)
		}
		p, err := ab.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *p.ContentLength != 0 {
			t.Fatalf("the append blob has %d bytes after refused appends", *p.ContentLength)
		}
		if _, err := blockClient(b.client, "sro", "dst").GetBlockList(ctx, blockblob.BlockListTypeAll, nil); statusOf(err) != 404 {
			t.Fatalf("a refused Put Block From URL left a block list (status %d)", statusOf(err))
		}
		b.checkNoLeak(t)
	})
}
