package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
)

// TestReadWhileAppending: Get Blob of an append blob while appends land
// (inline ones and staged ones, the row's bytes moving between the two)
// answers one committed state whole: the body a prefix of the final
// content as long as its Content-Length, x-ms-blob-committed-block-count
// the number of appends that make that length, a ranged read of the tail
// the same bytes as the whole.
func TestReadWhileAppending(t *testing.T) {
	forKinds(t, []string{"sqlite+disk", "postgres+disk"}, func(t *testing.T, kind string) {
		b := setupInline(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "tail")
		ab := appendClient(b.client, "tail", "log")
		if _, err := ab.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		// Sizes around the inline threshold: some appends stay in the
		// row, some are staged, and the blob's inline total crosses it.
		sizes := []int{3000, 5000, 20000, 1, 4000, 9000, 16384, 700, 2500, 40000, 3000, 6000}
		var final []byte
		ends := map[int]int{0: 0} // blob length after n appends → n
		for i, n := range sizes {
			final = append(final, randBytes(n, int64(300+i))...)
			ends[len(final)] = i + 1
		}
		done := make(chan struct{})
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for r := 0; r < 2; r++ {
			wg.Add(1)
			go func(r int) {
				defer wg.Done()
				check := func() error {
					var o *blob.DownloadStreamOptions
					if r == 1 {
						o = &blob.DownloadStreamOptions{Range: blob.HTTPRange{Offset: 2000}}
					}
					resp, err := ab.DownloadStream(ctx, o)
					if err != nil {
						if r == 1 && statusOf(err) == 416 {
							return nil // not 2000 bytes yet
						}
						return err
					}
					got, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					if err != nil {
						return err
					}
					off := 0
					if r == 1 {
						off = 2000
					}
					if int64(len(got)) != *resp.ContentLength {
						return fmt.Errorf("body %d bytes, Content-Length %d", len(got), *resp.ContentLength)
					}
					end := off + len(got)
					if end > len(final) || !bytes.Equal(got, final[off:end]) {
						return fmt.Errorf("bytes [%d, %d) are not the blob's", off, end)
					}
					n, ok := ends[end]
					if !ok {
						return fmt.Errorf("length %d is no append's end", end)
					}
					if c := resp.BlobCommittedBlockCount; c == nil || int(*c) != n {
						return fmt.Errorf("length %d with committed block count %v, want %d", end, c, n)
					}
					return nil
				}
				for {
					select {
					case <-done:
						return
					default:
					}
					if err := check(); err != nil {
						errs <- fmt.Errorf("reader %d: %w", r, err)
						return
					}
				}
			}(r)
		}
		off := 0
		for i, n := range sizes {
			if _, err := ab.AppendBlock(ctx, nopSeeker(string(final[off:off+n])), nil); err != nil {
				t.Fatalf("append %d: %v", i, err)
			}
			off += n
		}
		close(done)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		r, err := ab.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *r.ContentLength != int64(len(final)) || strconv.Itoa(int(*r.BlobCommittedBlockCount)) != strconv.Itoa(len(sizes)) {
			t.Fatalf("final: %d bytes, %d blocks", *r.ContentLength, *r.BlobCommittedBlockCount)
		}
		if got := download(t, b.client, "tail", "log"); !bytes.Equal(got, final) {
			t.Fatal("final content differs")
		}
	})
}
