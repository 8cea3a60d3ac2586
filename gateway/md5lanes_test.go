package gateway_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"

	"github.com/blobgw/blobgw/internal/md5lanes"
)

// holdPeers opens n large-body hashes, so that every large body the
// gateway hashes meanwhile finds MinPeers others and takes a lane; the
// cleanup closes them.
func holdPeers(t *testing.T, n int) {
	t.Helper()
	for range n {
		h := md5lanes.New(md5lanes.MinBody)
		t.Cleanup(h.Close)
	}
}

// wantLargeBodies waits until the large bodies being hashed are want (a
// handler closes its hash as it returns), then fails if they are not.
func wantLargeBodies(t *testing.T, want int64, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for md5lanes.Stats().Large != want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if c := md5lanes.Stats(); c.Large != want {
		t.Fatalf("%s: %d large bodies still hashing, want %d: a hash was not closed", what, c.Large, want)
	}
}

// TestPutBlobMD5Lanes: a Put Blob whose MD5 runs in the SIMD lanes
// answers and stores the Content-MD5 of its bytes, Get Blob returns it,
// for sizes around the lanes' threshold and the disk backend's buffers;
// a wrong Content-MD5 is 400 Md5Mismatch with nothing committed or
// stored; every body's hash is closed after.
func TestPutBlobMD5Lanes(t *testing.T) {
	forKinds(t, []string{"sqlite+disk", "postgres+s3"}, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "lanes")
		c0 := md5lanes.Stats()
		holdPeers(t, md5lanes.MinPeers)
		sizes := []int{md5lanes.MinBody - 1, md5lanes.MinBody, md5lanes.MinBody + 1, 1<<20 + 512<<10 + 63, 5<<20 + 7}
		for i, n := range sizes {
			data := randBytes(n, int64(300+i))
			sum := md5.Sum(data)
			name := fmt.Sprintf("b%d", i)
			bc := blockClient(b.client, "lanes", name)
			resp, err := bc.UploadBuffer(ctx, data, nil)
			if err != nil {
				t.Fatalf("%d bytes: %v", n, err)
			}
			p, err := bc.GetProperties(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, body := getBlob(t, bc.BlobClient(), nil, name)
			if !bytes.Equal(resp.ContentMD5, sum[:]) || !bytes.Equal(p.ContentMD5, sum[:]) || !bytes.Equal(got.ContentMD5, sum[:]) {
				t.Errorf("%d bytes: Put Blob answered %x, stored %x, Get Blob %x; want %x", n, resp.ContentMD5, p.ContentMD5, got.ContentMD5, sum)
			}
			if !bytes.Equal(body, data) {
				t.Errorf("%d bytes: Get Blob returned other bytes", n)
			}
		}
		lanes := md5lanes.Stats().Lanes - c0.Lanes
		if want := int64(len(sizes) - 1); md5lanes.Lanes && lanes < want {
			t.Errorf("%d bodies hashed in lanes, want at least %d (every one from MinBody)", lanes, want)
		}
		b.wantObjects(t, len(sizes), "after the puts")

		// A wrong Content-MD5 (the MD5 of other bytes) with the bytes in
		// a lane: refused, nothing committed, the object deleted.
		data := randBytes(3<<20+5, 400)
		wrong := md5.Sum(data[1:])
		_, err := blockClient(b.client, "lanes", "bad").Upload(ctx, streaming.NopCloser(bytes.NewReader(data)),
			&blockblob.UploadOptions{TransactionalValidation: blob.TransferValidationTypeMD5(wrong[:])})
		wantErr(t, err, 400, "Md5Mismatch")
		_, err = blockClient(b.client, "lanes", "bad").GetProperties(ctx, nil)
		wantErr(t, err, 404, "BlobNotFound")
		b.wantObjects(t, len(sizes), "after the refused put")
		wantLargeBodies(t, c0.Large+int64(md5lanes.MinPeers), "after the puts")
		b.collectNoLeak(t)
	})
}

// TestPutBlobMD5LanesConcurrent: concurrent large Put Blobs, most of
// them in lanes side by side, each answer and store their own MD5.
func TestPutBlobMD5LanesConcurrent(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "many")
	c0 := md5lanes.Stats()
	const n = 12
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			data := randBytes(2<<20+i*4099, int64(500+i))
			sum := md5.Sum(data)
			bc := blockClient(b.client, "many", fmt.Sprintf("c%d", i))
			resp, err := bc.UploadBuffer(ctx, data, nil)
			if err != nil {
				errs <- err
				return
			}
			p, err := bc.GetProperties(ctx, nil)
			if err != nil {
				errs <- err
				return
			}
			if !bytes.Equal(resp.ContentMD5, sum[:]) || !bytes.Equal(p.ContentMD5, sum[:]) {
				errs <- fmt.Errorf("c%d: answered %x, stored %x, want %x", i, resp.ContentMD5, p.ContentMD5, sum)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	wantLargeBodies(t, c0.Large, "after the concurrent puts")
}

// TestLaneMD5ClientGone: a client that hangs up mid-body of a Put Blob
// hashed in a lane leaves no hash open, no goroutine behind, and nothing
// stored or visible.
func TestLaneMD5ClientGone(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "gone")
	c0 := md5lanes.Stats()
	holdPeers(t, md5lanes.MinPeers)
	held := c0.Large + int64(md5lanes.MinPeers)
	g0 := runtime.NumGoroutine()
	for i := range 3 {
		// Announce 4 MiB, send 1.5 MiB, hang up.
		name := "cut" + strconv.Itoa(i)
		conn := b.startPut(t, "gone/"+name, 4<<20, randBytes(3<<19, int64(i)))
		// The body is being hashed: the handler holds a large body.
		deadline := time.Now().Add(10 * time.Second)
		for md5lanes.Stats().Large <= held && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if md5lanes.Stats().Large <= held {
			t.Fatal("the cut upload's body was never hashed as a large body")
		}
		conn.Close()
		wantLargeBodies(t, held, "after the client hung up")
		_, err := blockClient(b.client, "gone", name).GetProperties(ctx, nil)
		wantErr(t, err, 404, "BlobNotFound")
	}
	if got := md5lanes.Stats().Lanes - c0.Lanes; md5lanes.Lanes && got < 3 {
		t.Errorf("%d cut bodies hashed in lanes, want 3", got)
	}
	b.wantObjects(t, 0, "after the cut uploads")
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > g0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > g0 {
		t.Errorf("%d goroutines after the cut uploads, %d before", g, g0)
	}
}
