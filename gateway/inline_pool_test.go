package gateway_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
)

// TestInlinePooledBodies: inline Put Blob bodies are read into pooled
// buffers (blob_inline.go inlineBuf), which this package's tests poison
// when given back (export_test.go). Many clients put distinct contents of
// every size up to the threshold at once, over their own and each other's
// names, some with a Content-MD5 that does not match (refused after the
// body was read); every answer's Content-MD5, every read right after the
// put and every blob at the end must be the bytes that put sent: a buffer
// read after its return, or lent to two requests, shows as bytes of
// another put or as poison, and under -race as a race.
func TestInlinePooledBodies(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setupInline(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "pool")
		cont := b.client.ServiceClient().NewContainerClient("pool")
		const clients, puts, names = 8, 24, 12
		var mu sync.Mutex
		last := map[string][]byte{} // name → the content of its last acknowledged put
		var wg sync.WaitGroup
		for c := range clients {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(c), 7))
				for i := range puts {
					size := 1 + rng.IntN(inlineMax)
					data := make([]byte, size)
					for j := range data {
						data[j] = byte(rng.Uint32())
					}
					name := fmt.Sprintf("n%d", rng.IntN(names))
					bb := cont.NewBlockBlobClient(name)
					if i%5 == 4 {
						// A wrong Content-MD5: refused with the body read,
						// its buffer given back on the error path.
						bad := md5.Sum(append([]byte("not"), data...))
						_, err := bb.Upload(ctx, streaming.NopCloser(bytes.NewReader(data)),
							&blockblob.UploadOptions{HTTPHeaders: &blob.HTTPHeaders{BlobContentMD5: bad[:]}})
						if statusOf(err) != http.StatusBadRequest || codeOf(err) != "Md5Mismatch" {
							t.Errorf("client %d put %d with a wrong MD5: %v, want 400 Md5Mismatch", c, i, err)
						}
						continue
					}
					// The lock is held from the put to its read so that the
					// read sees this put's bytes, not another client's.
					mu.Lock()
					r, err := bb.Upload(ctx, streaming.NopCloser(bytes.NewReader(data)), nil)
					if err != nil {
						mu.Unlock()
						t.Errorf("client %d put %d (%d bytes): %v", c, i, size, err)
						return
					}
					sum := md5.Sum(data)
					if !bytes.Equal(r.ContentMD5, sum[:]) {
						t.Errorf("client %d put %d: answer's Content-MD5 %x, want %x", c, i, r.ContentMD5, sum)
					}
					last[name] = data
					got := download(t, b.client, "pool", name)
					mu.Unlock()
					if !bytes.Equal(got, data) {
						t.Errorf("client %d put %d: read back %d bytes that differ from the %d put", c, i, len(got), size)
					}
				}
			})
		}
		// Meanwhile, puts that run without the lock, so that bodies are
		// read and committed at the same time as the others.
		for c := range clients {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(c), 11))
				for i := range puts {
					data := bytes.Repeat([]byte{byte(c), byte(i)}, (1+rng.IntN(inlineMax))/2)
					name := fmt.Sprintf("free-%d-%d", c, i)
					if _, err := cont.NewBlockBlobClient(name).Upload(ctx, streaming.NopCloser(bytes.NewReader(data)), nil); err != nil {
						t.Errorf("free put %d/%d: %v", c, i, err)
						return
					}
					if got := download(t, b.client, "pool", name); !bytes.Equal(got, data) {
						t.Errorf("free put %d/%d: read back %d bytes that differ from the %d put", c, i, len(got), len(data))
					}
				}
			})
		}
		wg.Wait()
		for name, data := range last {
			if got := download(t, b.client, "pool", name); !bytes.Equal(got, data) {
				t.Errorf("%s at the end: %d bytes that differ from its last put's %d", name, len(got), len(data))
			}
			b.wantInline(t, "pool", name, data)
		}
	})
}
