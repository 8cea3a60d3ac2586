package main

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/blobgw/blobgw/gateway"
	"github.com/blobgw/blobgw/internal/config"
	"github.com/blobgw/blobgw/leasedb"
)

// inlineBlobs counts the blob rows of g whose bytes are inline.
func (g *migGateway) inlineBlobs(t *testing.T, blobs []srcBlob) int {
	t.Helper()
	n := 0
	err := g.store.View(context.Background(), func(tx leasedb.Tx) error {
		for _, b := range blobs {
			r, err := tx.Blob(context.Background(), config.DevAccountName, b.container, b.name, leasedb.LockNone)
			if err != nil || r == nil {
				return fmt.Errorf("%s/%s: %v %v", b.container, b.name, r, err)
			}
			if len(r.Extents) == 1 && r.Extents[0].Inline() {
				n++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestExportImportInline: `export s3` writes the bytes of inline blobs
// (kept in the metadata row) out whole, and `import azure` into a gateway
// that keeps small bodies inline copies them so.
func TestExportImportInline(t *testing.T) {
	bucket := startExportBucket(t)
	opt := gateway.Options{InlineMaxBytes: 16 << 10}
	src := newMigGatewayWith(t, nil, opt)
	blobs := fillSource(t, src)
	// cat.jpg, dog.png, readme.txt, page.html and a.log are small; empty
	// and big.bin are not inline.
	const small = 5
	if n := src.inlineBlobs(t, blobs); n != small {
		t.Fatalf("%d inline blobs in the source, want %d", n, small)
	}
	runCLI(t, nil, bucket.exportArgs(src)...).ok(t, fmt.Sprintf("copied %d, skipped 0, failed 0", len(blobs)))
	for _, b := range blobs {
		key := "gw/" + b.container + "/" + b.name
		_, got := bucket.object(t, key)
		if !bytes.Equal(got, b.data) {
			t.Errorf("%s: %d bytes exported, want %d", key, len(got), len(b.data))
		}
	}

	dst := newMigGatewayWith(t, nil, opt)
	runCLI(t, nil, "import", "azure", "--source-url", src.accountSAS(t), "--dest-url", dst.url).ok(t, fmt.Sprintf("copied %d, skipped 0, failed 0", len(blobs)))
	checkImported(t, src, dst, blobs, "photos", "docs", "logs")
	if n := dst.inlineBlobs(t, blobs); n != small {
		t.Fatalf("%d inline blobs imported, want %d", n, small)
	}
}
