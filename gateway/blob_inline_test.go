package gateway_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/blobgw/blobgw/gateway"
	"github.com/blobgw/blobgw/internal/config"
	"github.com/blobgw/blobgw/leasedb"
)

// inlineMax is the inline threshold of the inline tests' gateways.
const inlineMax = 16 << 10

func setupInline(t *testing.T, kind string) *bundle {
	t.Helper()
	return setup(t, kind, setupOpts{options: gateway.Options{InlineMaxBytes: inlineMax}})
}

// putBlob uploads data as one Put Blob (the SDK's Upload is a single
// request whatever the size).
func (b *bundle) putBlob(t *testing.T, cont, name string, data []byte, o *blockblob.UploadOptions) *blockblob.UploadResponse {
	t.Helper()
	r, err := b.client.ServiceClient().NewContainerClient(cont).NewBlockBlobClient(name).
		Upload(context.Background(), streaming.NopCloser(bytes.NewReader(data)), o)
	if err != nil {
		t.Fatalf("put %s/%s (%d bytes): %v", cont, name, len(data), err)
	}
	return &r
}

// rowExtents is the extents of a blob's row as the store holds them.
func (b *bundle) rowExtents(t *testing.T, cont, name string) []leasedb.Extent {
	t.Helper()
	var out []leasedb.Extent
	err := b.db.Store.View(context.Background(), func(tx leasedb.Tx) error {
		r, err := tx.Blob(context.Background(), config.DevAccountName, cont, name, leasedb.LockNone)
		if err != nil {
			return err
		}
		if r == nil {
			return fmt.Errorf("no row %s/%s", cont, name)
		}
		out = r.Extents
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// wantInline fails t unless the row of cont/name holds data as one inline
// extent.
func (b *bundle) wantInline(t *testing.T, cont, name string, data []byte) {
	t.Helper()
	x := b.rowExtents(t, cont, name)
	if len(x) != 1 || !x[0].Inline() || !bytes.Equal(x[0].Data, data) || x[0].Size != int64(len(data)) {
		t.Fatalf("%s/%s: extents %d, want one inline extent of %d bytes", cont, name, len(x), len(data))
	}
}

// TestInlinePutGet: a Put Blob at most the threshold is kept in the row
// (no backend object), and Get Blob in every range form, the range digests
// and Get Blob Properties' Content-MD5 serve it; one byte over the
// threshold goes to the backend.
func TestInlinePutGet(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setupInline(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "inl")
		n0 := b.countObjects(t)
		data := randBytes(5000, 1)
		sum := md5.Sum(data)
		up := b.putBlob(t, "inl", "small", data, &blockblob.UploadOptions{HTTPHeaders: &blob.HTTPHeaders{BlobContentType: to.Ptr("text/x")}})
		if !bytes.Equal(up.ContentMD5, sum[:]) {
			t.Fatalf("Put Blob answered Content-MD5 %x, want %x", up.ContentMD5, sum)
		}
		b.wantObjects(t, n0, "after an inline Put Blob (none new)")
		b.wantInline(t, "inl", "small", data)
		if got := download(t, b.client, "inl", "small"); !bytes.Equal(got, data) {
			t.Fatal("Get Blob of an inline blob: bytes differ")
		}
		p, err := b.client.ServiceClient().NewContainerClient("inl").NewBlobClient("small").GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *p.ContentLength != int64(len(data)) || !bytes.Equal(p.ContentMD5, sum[:]) || *p.ContentType != "text/x" {
			t.Fatalf("Get Blob Properties: length %d, MD5 %x, type %q", *p.ContentLength, p.ContentMD5, *p.ContentType)
		}
		// Every range form, raw (Range and x-ms-range) and through the SDK.
		for _, c := range []struct {
			hdr, val   string
			start, end int
		}{
			{"Range", "bytes=0-0", 0, 1},
			{"Range", "bytes=100-199", 100, 200},
			{"Range", "bytes=4990-", 4990, 5000},
			{"Range", "bytes=-7", 4993, 5000},
			{"Range", "bytes=-9000", 0, 5000},
			{"Range", "bytes=4000-9999", 4000, 5000},
			{"x-ms-range", "bytes=1234-2345", 1234, 2346},
		} {
			resp, body := b.do(t, http.MethodGet, "inl/small", "", map[string]string{c.hdr: c.val})
			wantStatus(t, resp, http.StatusPartialContent, "", c.hdr+": "+c.val)
			if body != string(data[c.start:c.end]) {
				t.Fatalf("%s: %s: %d bytes, want [%d,%d)", c.hdr, c.val, len(body), c.start, c.end)
			}
			if want := fmt.Sprintf("bytes %d-%d/5000", c.start, c.end-1); resp.Header.Get("Content-Range") != want {
				t.Fatalf("%s: Content-Range %q, want %q", c.val, resp.Header.Get("Content-Range"), want)
			}
		}
		resp, _ := b.do(t, http.MethodGet, "inl/small", "", map[string]string{"Range": "bytes=5000-"})
		wantStatus(t, resp, http.StatusRequestedRangeNotSatisfiable, "InvalidRange", "a range past the end")
		dl, err := b.client.DownloadStream(ctx, "inl", "small", &blob.DownloadStreamOptions{
			Range: blob.HTTPRange{Offset: 17, Count: 1000}, RangeGetContentMD5: to.Ptr(true)})
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if _, err := got.ReadFrom(dl.Body); err != nil {
			t.Fatal(err)
		}
		dl.Body.Close()
		rsum := md5.Sum(data[17:1017])
		if !bytes.Equal(got.Bytes(), data[17:1017]) || !bytes.Equal(dl.ContentMD5, rsum[:]) {
			t.Fatalf("SDK range with x-ms-range-get-content-md5: %d bytes, MD5 %x want %x", got.Len(), dl.ContentMD5, rsum)
		}

		// At the threshold: inline; one byte over: a backend object.
		edge := randBytes(inlineMax, 2)
		b.putBlob(t, "inl", "edge", edge, nil)
		b.wantInline(t, "inl", "edge", edge)
		b.wantObjects(t, n0, "after a Put Blob of exactly the threshold (none new)")
		over := randBytes(inlineMax+1, 3)
		b.putBlob(t, "inl", "over", over, nil)
		if x := b.rowExtents(t, "inl", "over"); len(x) != 1 || x[0].Inline() || x[0].Key == "" {
			t.Fatalf("a body over the threshold: extents %+v, want one backend object", x)
		}
		b.wantObjects(t, n0+1, "a body over the threshold (one new object)")
		for name, want := range map[string][]byte{"edge": edge, "over": over} {
			if got := download(t, b.client, "inl", name); !bytes.Equal(got, want) {
				t.Fatalf("%s: bytes differ", name)
			}
		}
		b.checkNoLeak(t)
	})
}

// TestInlineBodyChecks: an inline body is checked as a staged one is
// (Content-MD5, x-ms-content-crc64, length), and a refused one stores
// nothing.
func TestInlineBodyChecks(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setupInline(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "chk")
		data := randBytes(3000, 4)
		wrong := md5.Sum([]byte("other"))
		bb := b.client.ServiceClient().NewContainerClient("chk").NewBlockBlobClient("x")
		_, err := bb.Upload(ctx, streaming.NopCloser(bytes.NewReader(data)), &blockblob.UploadOptions{
			TransactionalValidation: blob.TransferValidationTypeMD5(wrong[:])})
		wantErr(t, err, http.StatusBadRequest, "Md5Mismatch")
		_, err = bb.Upload(ctx, streaming.NopCloser(bytes.NewReader(data)), &blockblob.UploadOptions{
			HTTPHeaders: &blob.HTTPHeaders{BlobContentMD5: wrong[:]}})
		wantErr(t, err, http.StatusBadRequest, "Md5Mismatch")
		_, err = bb.Upload(ctx, streaming.NopCloser(bytes.NewReader(data)), &blockblob.UploadOptions{
			TransactionalValidation: blob.TransferValidationTypeCRC64(12345)})
		wantErr(t, err, http.StatusBadRequest, "Crc64Mismatch")
		if _, err := bb.GetProperties(ctx, nil); statusOf(err) != http.StatusNotFound {
			t.Fatalf("a refused inline body was stored: %v", err)
		}
		// The right digests pass, and CRC64 is answered.
		right := md5.Sum(data)
		if _, err := bb.Upload(ctx, streaming.NopCloser(bytes.NewReader(data)), &blockblob.UploadOptions{
			TransactionalValidation: blob.TransferValidationTypeMD5(right[:])}); err != nil {
			t.Fatal(err)
		}
		r, err := bb.Upload(ctx, streaming.NopCloser(bytes.NewReader(data)), &blockblob.UploadOptions{
			TransactionalValidation: blob.TransferValidationTypeComputeCRC64()})
		if err != nil || len(r.ContentCRC64) != 8 {
			t.Fatalf("Put Blob with x-ms-content-crc64: %v, answered %x", err, r.ContentCRC64)
		}
		b.wantInline(t, "chk", "x", data)
		// A body shorter than Content-Length: 400, nothing changes.
		resp, _ := b.do(t, http.MethodPut, "chk/short", "", map[string]string{"x-ms-blob-type": "BlockBlob"})
		wantStatus(t, resp, http.StatusCreated, "", "an empty Put Blob")
		req, err := http.NewRequest(http.MethodPut, b.serviceURL(0)+"chk/x", bytes.NewReader(data[:100]))
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = 200
		req.Header.Set("x-ms-blob-type", "BlockBlob")
		b.sign(t, req)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			wantStatus(t, resp, http.StatusBadRequest, "InvalidInput", "a short inline body")
		}
		b.wantInline(t, "chk", "x", data)
		// Expect: 100-continue: the pre-check runs first, the body still
		// goes inline.
		req, err = http.NewRequest(http.MethodPut, b.serviceURL(0)+"chk/cont", bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("x-ms-blob-type", "BlockBlob")
		req.Header.Set("Expect", "100-continue")
		b.sign(t, req)
		resp, err = (&http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Minute}}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		wantStatus(t, resp, http.StatusCreated, "", "an inline Put Blob with Expect: 100-continue")
		b.wantInline(t, "chk", "cont", data)
		b.checkNoLeak(t)
	})
}

// TestInlineOverwrite: inline → backend → inline overwrites read back
// whole, and after collection no object is left (the large one was
// queued when the inline one replaced it).
func TestInlineOverwrite(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setupInline(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "ovw")
		small1, large, small2 := randBytes(100, 5), randBytes(64<<10, 6), randBytes(9000, 7)
		b.putBlob(t, "ovw", "o", small1, nil)
		b.putBlob(t, "ovw", "o", large, nil)
		if x := b.rowExtents(t, "ovw", "o"); len(x) != 1 || x[0].Inline() {
			t.Fatalf("the large overwrite: extents %+v", x)
		}
		if got := download(t, b.client, "ovw", "o"); !bytes.Equal(got, large) {
			t.Fatal("after the large overwrite: bytes differ")
		}
		b.putBlob(t, "ovw", "o", small2, nil)
		b.wantInline(t, "ovw", "o", small2)
		if got := download(t, b.client, "ovw", "o"); !bytes.Equal(got, small2) {
			t.Fatal("after the inline overwrite: bytes differ")
		}
		b.checkNoLeak(t)
		b.collectAll(t)
		b.wantObjects(t, 0, "after collection; the replaced large blob's must be gone")
		// Put Block List over an inline blob, then inline again.
		bb := b.client.ServiceClient().NewContainerClient("ovw").NewBlockBlobClient("o")
		id := base64.StdEncoding.EncodeToString([]byte("blk-0001"))
		if _, err := bb.StageBlock(ctx, id, streaming.NopCloser(bytes.NewReader(large)), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := bb.CommitBlockList(ctx, []string{id}, nil); err != nil {
			t.Fatal(err)
		}
		if got := download(t, b.client, "ovw", "o"); !bytes.Equal(got, large) {
			t.Fatal("after Put Block List over an inline blob: bytes differ")
		}
		b.putBlob(t, "ovw", "o", small1, nil)
		b.wantInline(t, "ovw", "o", small1)
		b.checkNoLeak(t)
		b.collectAll(t)
		b.wantObjects(t, 0, "after collection; the committed block's must be gone")
		// Deleting the blob leaves nothing either.
		if _, err := b.client.DeleteBlob(ctx, "ovw", "o", nil); err != nil {
			t.Fatal(err)
		}
		b.collectAll(t)
		b.wantObjects(t, 0, "after deleting an inline blob")
	})
}

// TestInlineCopies: a snapshot, a version, a soft-deleted and undeleted
// blob and Copy Blob / Copy Blob From URL of an inline blob keep its bytes
// in their own rows (no backend object), and survive the source's
// overwrite and deletion; Put Blob From URL and Put Block From URL of an
// inline source stage an object that reads the same.
func TestInlineCopies(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setupInline(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "cps")
		v1, v2, v3 := randBytes(1000, 8), randBytes(2000, 9), randBytes(3000, 10)
		b.putBlob(t, "cps", "src", v1, nil)
		bc := b.client.ServiceClient().NewContainerClient("cps").NewBlobClient("src")
		sr, err := bc.CreateSnapshot(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		// Copy Blob (async form) and Copy Blob From URL, within the account.
		for _, dst := range []string{"async", "sync"} {
			dc := b.client.ServiceClient().NewContainerClient("cps").NewBlobClient(dst)
			if dst == "async" {
				r, err := dc.StartCopyFromURL(ctx, bc.URL(), nil)
				if err != nil || r.CopyStatus == nil || *r.CopyStatus != blob.CopyStatusTypeSuccess {
					t.Fatalf("Copy Blob: %v %+v", err, r)
				}
			} else {
				if _, err := dc.CopyFromURL(ctx, bc.URL(), nil); err != nil {
					t.Fatalf("Copy Blob From URL: %v", err)
				}
			}
			b.wantInline(t, "cps", dst, v1)
		}
		// Put Blob From URL, Put Block From URL + Put Block List.
		fu := b.client.ServiceClient().NewContainerClient("cps").NewBlockBlobClient("fromurl")
		if _, err := fu.UploadBlobFromURL(ctx, bc.URL(), nil); err != nil {
			t.Fatalf("Put Blob From URL: %v", err)
		}
		bu := b.client.ServiceClient().NewContainerClient("cps").NewBlockBlobClient("blockurl")
		id := base64.StdEncoding.EncodeToString([]byte("b1"))
		if _, err := bu.StageBlockFromURL(ctx, id, bc.URL(), &blockblob.StageBlockFromURLOptions{
			Range: blob.HTTPRange{Offset: 10, Count: 500}}); err != nil {
			t.Fatalf("Put Block From URL: %v", err)
		}
		if _, err := bu.CommitBlockList(ctx, []string{id}, nil); err != nil {
			t.Fatal(err)
		}
		// Versions, then soft delete.
		b.setVersioning(t, true)
		up := b.putBlob(t, "cps", "src", v2, nil)
		if up.VersionID == nil {
			t.Fatal("no version id with versioning on")
		}
		vid := *up.VersionID
		b.putBlob(t, "cps", "src", v3, nil)
		b.wantInline(t, "cps", "src", v3)
		if got := b.downloadVersion(t, "cps", "src", vid); !bytes.Equal(got, v2) {
			t.Fatal("the version of an inline blob: bytes differ")
		}
		b.setVersioning(t, false)
		b.setRetention(t, 3)
		if _, err := b.client.DeleteBlob(ctx, "cps", "async", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := b.client.ServiceClient().NewContainerClient("cps").NewBlobClient("async").Undelete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		b.setRetention(t, 0)

		snap, err := bc.WithSnapshot(*sr.Snapshot)
		if err != nil {
			t.Fatal(err)
		}
		if got := downloadClient(t, snap); !bytes.Equal(got, v1) {
			t.Fatal("the snapshot of an inline blob: bytes differ")
		}
		for name, want := range map[string][]byte{"async": v1, "sync": v1, "fromurl": v1, "blockurl": v1[10:510], "src": v3} {
			if got := download(t, b.client, "cps", name); !bytes.Equal(got, want) {
				t.Fatalf("%s: bytes differ", name)
			}
		}
		b.wantInline(t, "cps", "async", v1)
		// The snapshot and the version go with the base (include
		// snapshots); the copies keep their bytes.
		if _, err := bc.Delete(ctx, &blob.DeleteOptions{DeleteSnapshots: to.Ptr(blob.DeleteSnapshotsOptionTypeInclude)}); err != nil {
			t.Fatal(err)
		}
		for name, want := range map[string][]byte{"async": v1, "sync": v1} {
			if got := download(t, b.client, "cps", name); !bytes.Equal(got, want) {
				t.Fatalf("%s after the source's deletion: bytes differ", name)
			}
		}
		b.checkNoLeak(t)
		b.collectAll(t)
		// What is left in the backend: the two From URL copies' objects.
		b.wantObjects(t, 2, "Put Blob From URL's and Put Block From URL's")
	})
}

// TestInlineIfMatchRace: concurrent inline Put Blobs conditioned on one
// ETag: exactly one wins each round, the others get 412, and the winner's
// bytes are what is read.
func TestInlineIfMatchRace(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setupInline(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "race")
		etag := *b.putBlob(t, "race", "hot", []byte("start"), nil).ETag
		const writers, rounds = 6, 4
		for round := 0; round < rounds; round++ {
			var mu sync.Mutex
			var wins []int
			var newETag azcore.ETag
			var wg sync.WaitGroup
			for i := 0; i < writers; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					data := []byte(fmt.Sprintf("round %d writer %d", round, i))
					r, err := b.client.ServiceClient().NewContainerClient("race").NewBlockBlobClient("hot").Upload(ctx,
						streaming.NopCloser(bytes.NewReader(data)), &blockblob.UploadOptions{AccessConditions: &blob.AccessConditions{
							ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &etag}}})
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						wins = append(wins, i)
						newETag = *r.ETag
					case statusOf(err) != http.StatusPreconditionFailed:
						t.Errorf("round %d writer %d: %v", round, i, err)
					}
				}(i)
			}
			wg.Wait()
			if len(wins) != 1 {
				t.Fatalf("round %d: %d writers won on one ETag, want exactly 1", round, len(wins))
			}
			want := fmt.Sprintf("round %d writer %d", round, wins[0])
			if got := download(t, b.client, "race", "hot"); string(got) != want {
				t.Fatalf("round %d: read %q, want the winner's %q", round, got, want)
			}
			b.wantInline(t, "race", "hot", []byte(want))
			etag = newETag
		}
		b.checkNoLeak(t)
	})
}
