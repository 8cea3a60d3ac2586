package gateway_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/appendblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
)

func blockID(n int) string {
	return base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("block-%06d", n)))
}

// TestLargeTransfers: the SDK's high-level block uploads (UploadStream,
// UploadBuffer, UploadFile; 4 MiB blocks, concurrency 4) and parallel ranged
// downloads (DownloadBuffer, DownloadFile) round-trip 40 MiB+.
func TestLargeTransfers(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "big")
		data := randBytes(40<<20+12345, 11)
		want := sha256.Sum256(data)
		if _, err := b.client.UploadStream(ctx, "big", "blob", bytes.NewReader(data), &azblob.UploadStreamOptions{BlockSize: 4 << 20, Concurrency: 4}); err != nil {
			t.Fatal(err)
		}
		bl, err := blockClient(b.client, "big", "blob").GetBlockList(ctx, blockblob.BlockListTypeAll, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(bl.BlockList.CommittedBlocks) != 11 || len(bl.BlockList.UncommittedBlocks) != 0 {
			t.Fatalf("block list: %d committed, %d uncommitted", len(bl.BlockList.CommittedBlocks), len(bl.BlockList.UncommittedBlocks))
		}
		buf := make([]byte, len(data))
		if _, err := b.client.DownloadBuffer(ctx, "big", "blob", buf, &azblob.DownloadBufferOptions{BlockSize: 3 << 20, Concurrency: 4}); err != nil {
			t.Fatal(err)
		}
		if sha256.Sum256(buf) != want {
			t.Fatal("downloaded content differs (SHA-256)")
		}
		// A range across a block boundary (4 MiB).
		resp, err := b.client.DownloadStream(ctx, "big", "blob", &azblob.DownloadStreamOptions{Range: azblob.HTTPRange{Offset: 4<<20 - 100, Count: 300}})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !bytes.Equal(got, data[4<<20-100:4<<20+200]) {
			t.Fatal("cross-block range differs")
		}

		// UploadBuffer and UploadFile (same block size and concurrency),
		// read back with DownloadFile's parallel ranges.
		if _, err := b.client.UploadBuffer(ctx, "big", "from-buffer", data, &azblob.UploadBufferOptions{BlockSize: 4 << 20, Concurrency: 4}); err != nil {
			t.Fatal(err)
		}
		srcPath := filepath.Join(t.TempDir(), "src")
		if err := os.WriteFile(srcPath, data, 0o600); err != nil {
			t.Fatal(err)
		}
		src, err := os.Open(srcPath)
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		if _, err := b.client.UploadFile(ctx, "big", "from-file", src, &azblob.UploadFileOptions{BlockSize: 4 << 20, Concurrency: 4}); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"from-buffer", "from-file"} {
			dst, err := os.Create(filepath.Join(t.TempDir(), name))
			if err != nil {
				t.Fatal(err)
			}
			n, err := b.client.DownloadFile(ctx, "big", name, dst, &azblob.DownloadFileOptions{BlockSize: 4 << 20, Concurrency: 4})
			dst.Close()
			if err != nil || n != int64(len(data)) {
				t.Fatalf("DownloadFile %s: %d bytes, %v", name, n, err)
			}
			back, err := os.ReadFile(dst.Name())
			if err != nil {
				t.Fatal(err)
			}
			if sha256.Sum256(back) != want {
				t.Fatalf("%s: DownloadFile content differs (SHA-256)", name)
			}
		}
		b.collectNoLeak(t)
	})
}

func TestBlockListSemantics(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "blocks")
		bc := blockClient(b.client, "blocks", "x")
		stage := func(c *blockblob.Client, n int, body string) {
			t.Helper()
			if _, err := c.StageBlock(ctx, blockID(n), nopSeeker(body), nil); err != nil {
				t.Fatal(err)
			}
		}
		stage(bc, 1, "one,")
		stage(bc, 2, "two,")
		stage(bc, 3, "three,")
		// Content-MD5 is checked and echoed only when the request sends it.
		if r, err := bc.StageBlock(ctx, blockID(9), nopSeeker("nine"), nil); err != nil || r.ContentMD5 != nil {
			t.Fatalf("stage without MD5: %v, Content-MD5 %x", err, r.ContentMD5)
		}
		sum := md5.Sum([]byte("nine"))
		if r, err := bc.StageBlock(ctx, blockID(9), nopSeeker("nine"), &blockblob.StageBlockOptions{TransactionalValidation: blob.TransferValidationTypeMD5(sum[:])}); err != nil || !bytes.Equal(r.ContentMD5, sum[:]) {
			t.Fatalf("stage with MD5: %v, Content-MD5 %x", err, r.ContentMD5)
		}
		_, err := bc.StageBlock(ctx, blockID(9), nopSeeker("nine"), &blockblob.StageBlockOptions{TransactionalValidation: blob.TransferValidationTypeMD5(make([]byte, 16))})
		wantErr(t, err, 400, "Md5Mismatch")
		// Uncommitted-only blob is invisible.
		_, err = bc.GetProperties(ctx, nil)
		wantErr(t, err, 404, "BlobNotFound")
		bl, err := bc.GetBlockList(ctx, blockblob.BlockListTypeUncommitted, nil)
		if err != nil || len(bl.BlockList.UncommittedBlocks) != 4 {
			t.Fatalf("uncommitted list: %v %d", err, len(bl.BlockList.UncommittedBlocks))
		}
		// Reorder on commit; block 2 not named is dropped.
		if _, err := bc.CommitBlockList(ctx, []string{blockID(3), blockID(1)}, nil); err != nil {
			t.Fatal(err)
		}
		if got := string(download(t, b.client, "blocks", "x")); got != "three,one," {
			t.Fatalf("after commit: %q", got)
		}
		bl, err = bc.GetBlockList(ctx, blockblob.BlockListTypeAll, nil)
		if err != nil || len(bl.BlockList.CommittedBlocks) != 2 || len(bl.BlockList.UncommittedBlocks) != 0 ||
			*bl.BlockList.CommittedBlocks[0].Name != blockID(3) || *bl.BlockList.CommittedBlocks[1].Size != 4 {
			t.Fatalf("block list after commit: %v %+v", err, bl.BlockList)
		}
		etag := *bl.ETag
		// Recommit with Uncommitted refs that were cleared: 400, nothing changes.
		resp := b.rawBlockList(t, "blocks/x", `<BlockList><Uncommitted>`+blockID(3)+`</Uncommitted></BlockList>`)
		wantStatus(t, resp, 400, "InvalidBlockList", "recommit uncommitted")
		// Committed refs re-commit without staging, repeats allowed.
		resp = b.rawBlockList(t, "blocks/x", `<BlockList><Committed>`+blockID(1)+`</Committed><Committed>`+blockID(1)+`</Committed><Committed>`+blockID(3)+`</Committed></BlockList>`)
		if resp.StatusCode != 201 {
			t.Fatalf("commit committed: %d %s", resp.StatusCode, resp.Header.Get("x-ms-error-code"))
		}
		if got := string(download(t, b.client, "blocks", "x")); got != "one,one,three," {
			t.Fatalf("after committed recommit: %q", got)
		}
		p, err := bc.GetProperties(ctx, nil)
		if err != nil {
			t.Fatalf("Get Properties: %v", err)
		}
		if *p.ETag == etag {
			t.Fatal("Put Block List must change the ETag")
		}
		// Latest picks the newest staged version; two writers stage the same ids.
		other := blockClient(b.clientFor(t, 0), "blocks", "x")
		stage(bc, 1, "ONE-a,")
		stage(other, 1, "ONE-b,")
		if _, err := bc.CommitBlockList(ctx, []string{blockID(1), blockID(3)}, nil); err != nil {
			t.Fatal(err)
		}
		if got := string(download(t, b.client, "blocks", "x")); got != "ONE-b,three," {
			t.Fatalf("Latest: %q", got)
		}
		// Unknown id: 400 and nothing changes.
		_, err = bc.CommitBlockList(ctx, []string{blockID(99)}, nil)
		wantErr(t, err, 400, "InvalidBlockList")
		if got := string(download(t, b.client, "blocks", "x")); got != "ONE-b,three," {
			t.Fatalf("after refused commit: %q", got)
		}
		// Malformed XML, bad block ids, mixed id lengths.
		wantStatus(t, b.rawBlockList(t, "blocks/x", `<BlockList><Latest>`), 400, "InvalidXmlDocument", "malformed xml")
		_, err = bc.StageBlock(ctx, "not base64!", nopSeeker("x"), nil)
		wantErr(t, err, 400, "InvalidBlockId")
		_, err = bc.StageBlock(ctx, base64.StdEncoding.EncodeToString(make([]byte, 65)), nopSeeker("x"), nil)
		wantErr(t, err, 400, "InvalidBlockId")
		_, err = bc.StageBlock(ctx, base64.StdEncoding.EncodeToString([]byte("short")), nopSeeker("x"), nil)
		wantErr(t, err, 400, "InvalidBlobOrBlock")
		// Empty list: a zero-length blob.
		if _, err := bc.CommitBlockList(ctx, nil, nil); err != nil {
			t.Fatal(err)
		}
		if got := download(t, b.client, "blocks", "x"); len(got) != 0 {
			t.Fatalf("empty list: %d bytes", len(got))
		}
		// Create-only commit on an existing blob.
		_, err = bc.CommitBlockList(ctx, nil, &blockblob.CommitBlockListOptions{AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: to.Ptr(azcore.ETagAny)}}})
		wantErr(t, err, 409, "BlobAlreadyExists")
		// Put Blob over staged blocks discards them.
		stage(bc, 5, "five")
		if _, err := bc.Upload(ctx, nopSeeker("whole"), nil); err != nil {
			t.Fatal(err)
		}
		bl, _ = bc.GetBlockList(ctx, blockblob.BlockListTypeAll, nil)
		if len(bl.BlockList.UncommittedBlocks) != 0 {
			t.Fatal("Put Blob must discard staged blocks")
		}
		// Block ops on an append blob: 409 InvalidBlobType.
		ab := b.client.ServiceClient().NewContainerClient("blocks").NewAppendBlobClient("app")
		if _, err := ab.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		_, err = blockClient(b.client, "blocks", "app").StageBlock(ctx, blockID(1), nopSeeker("x"), nil)
		wantErr(t, err, 409, "InvalidBlobType")
		b.collectNoLeak(t)
	})
}

// rawBlockList sends a hand-written Put Block List body.
func (b *bundle) rawBlockList(t *testing.T, path, body string) *http.Response {
	t.Helper()
	resp, _ := b.do(t, "PUT", path+"?comp=blocklist", body, nil)
	return resp
}

// TestAppendRace: 16 goroutines append with appendpos = current length until
// 200 blocks are in; every accepted block appears exactly once, in offset
// order, with no gaps.
func TestAppendRace(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind, setupOpts{replicas: 3})
		ctx := context.Background()
		createContainers(t, b.client, "app")
		if _, err := b.client.ServiceClient().NewContainerClient("app").NewAppendBlobClient("log").Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		const workers, target = 16, 200
		var accepted atomic.Int64
		var mu sync.Mutex
		byOffset := map[int64]string{}
		var wg sync.WaitGroup
		errc := make(chan error, workers)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				ab := b.clientFor(t, w%3).ServiceClient().NewContainerClient("app").NewAppendBlobClient("log")
				for i := 0; accepted.Load() < target; i++ {
					p, err := ab.GetProperties(ctx, nil)
					if err != nil {
						errc <- err
						return
					}
					payload := fmt.Sprintf("w%02d-%04d;", w, i)
					resp, err := ab.AppendBlock(ctx, nopSeeker(payload), &appendblob.AppendBlockOptions{
						AppendPositionAccessConditions: &appendblob.AppendPositionAccessConditions{AppendPosition: p.ContentLength},
					})
					if err != nil {
						if statusOf(err) == 412 && codeOf(err) == "AppendPositionConditionNotMet" {
							continue
						}
						errc <- err
						return
					}
					off, _ := strconv.ParseInt(*resp.BlobAppendOffset, 10, 64)
					mu.Lock()
					byOffset[off] = payload
					mu.Unlock()
					accepted.Add(1)
				}
			}(w)
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Fatal(err)
		}
		offsets := make([]int64, 0, len(byOffset))
		for o := range byOffset {
			offsets = append(offsets, o)
		}
		sort.Slice(offsets, func(i, j int) bool { return offsets[i] < offsets[j] })
		var want strings.Builder
		for _, o := range offsets {
			if int64(want.Len()) != o {
				t.Fatalf("gap or overlap at offset %d (expected %d)", o, want.Len())
			}
			want.WriteString(byOffset[o])
		}
		got := string(download(t, b.client, "app", "log"))
		if got != want.String() || len(offsets) < target {
			t.Fatalf("append blob: %d blocks accepted, content matches=%v", len(offsets), got == want.String())
		}
		p, err := b.client.ServiceClient().NewContainerClient("app").NewAppendBlobClient("log").GetProperties(ctx, nil)
		if err != nil {
			t.Fatalf("Get Properties: %v", err)
		}
		if int(*p.BlobCommittedBlockCount) != len(offsets) {
			t.Fatalf("committed block count %d, want %d", *p.BlobCommittedBlockCount, len(offsets))
		}
	})
}

func TestAppendConditions(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "app")
	ab := b.client.ServiceClient().NewContainerClient("app").NewAppendBlobClient("log")
	if _, err := ab.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if r, err := ab.AppendBlock(ctx, nopSeeker("12"), nil); err != nil || r.ContentMD5 != nil {
		t.Fatalf("append without MD5: %v, Content-MD5 %x", err, r.ContentMD5)
	}
	sum := md5.Sum([]byte("345"))
	if r, err := ab.AppendBlock(ctx, nopSeeker("345"), &appendblob.AppendBlockOptions{TransactionalValidation: blob.TransferValidationTypeMD5(sum[:])}); err != nil || !bytes.Equal(r.ContentMD5, sum[:]) {
		t.Fatalf("append with MD5: %v, Content-MD5 %x", err, r.ContentMD5)
	}
	_, err := ab.AppendBlock(ctx, nopSeeker("6"), &appendblob.AppendBlockOptions{TransactionalValidation: blob.TransferValidationTypeMD5(make([]byte, 16))})
	wantErr(t, err, 400, "Md5Mismatch")
	_, err = ab.AppendBlock(ctx, nopSeeker("678"), &appendblob.AppendBlockOptions{AppendPositionAccessConditions: &appendblob.AppendPositionAccessConditions{MaxSize: to.Ptr(int64(7))}})
	wantErr(t, err, 412, "MaxBlobSizeConditionNotMet")
	_, err = ab.AppendBlock(ctx, nopSeeker("678"), &appendblob.AppendBlockOptions{AppendPositionAccessConditions: &appendblob.AppendPositionAccessConditions{AppendPosition: to.Ptr(int64(3))}})
	wantErr(t, err, 412, "AppendPositionConditionNotMet")
	if got := string(download(t, b.client, "app", "log")); got != "12345" {
		t.Fatalf("refused appends changed the blob: %q", got)
	}
	_, err = blockClient(b.client, "app", "nosuch").GetProperties(ctx, nil)
	wantErr(t, err, 404, "BlobNotFound")
	_, err = b.client.ServiceClient().NewContainerClient("app").NewAppendBlobClient("nosuch").AppendBlock(ctx, nopSeeker("x"), nil)
	wantErr(t, err, 404, "BlobNotFound")
	if _, err := b.client.UploadBuffer(ctx, "app", "block", []byte("b"), nil); err != nil {
		t.Fatal(err)
	}
	_, err = b.client.ServiceClient().NewContainerClient("app").NewAppendBlobClient("block").AppendBlock(ctx, nopSeeker("x"), nil)
	wantErr(t, err, 409, "InvalidBlobType")
	b.collectNoLeak(t)
}
