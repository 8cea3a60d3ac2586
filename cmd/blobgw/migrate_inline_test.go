package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/blobgw/blobgw/backends/s3/miniotest"
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
	srv, err := miniotest.StartServer()
	if err != nil {
		if errors.Is(err, miniotest.ErrNotInstalled) {
			t.Skipf("export s3 test needs MinIO: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	cfg := srv.NewBucket(t)
	opt := gateway.Options{InlineMaxBytes: 16 << 10}
	src := newMigGatewayWith(t, nil, opt)
	blobs := fillSource(t, src)
	// cat.jpg, dog.png, readme.txt, page.html and a.log are small; empty
	// and big.bin are not inline.
	const small = 5
	if n := src.inlineBlobs(t, blobs); n != small {
		t.Fatalf("%d inline blobs in the source, want %d", n, small)
	}
	args := []string{"export", "s3", "--source-url", src.url, "--endpoint", cfg.Endpoint, "--region", cfg.Region,
		"--bucket", cfg.Bucket, "--prefix", "gw/", "--access-key", cfg.AccessKey, "--secret-key", cfg.SecretKey, "--path-style"}
	out, code := runApp(t, nil, args...)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("copied %d, skipped 0, failed 0", len(blobs))) {
		t.Fatalf("export (%d):\n%s", code, out)
	}
	ctx := context.Background()
	for _, b := range blobs {
		key := "gw/" + b.container + "/" + b.name
		obj, err := srv.Client().GetObject(ctx, &awss3.GetObjectInput{Bucket: &cfg.Bucket, Key: &key})
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		got, err := io.ReadAll(obj.Body)
		obj.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, b.data) {
			t.Errorf("%s: %d bytes exported, want %d", key, len(got), len(b.data))
		}
	}

	dst := newMigGatewayWith(t, nil, opt)
	out, code = runApp(t, nil, "import", "azure", "--source-url", src.accountSAS(t), "--dest-url", dst.url)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("copied %d, skipped 0, failed 0", len(blobs))) {
		t.Fatalf("import (%d):\n%s", code, out)
	}
	checkImported(t, src, dst, blobs, "photos", "docs", "logs")
	if n := dst.inlineBlobs(t, blobs); n != small {
		t.Fatalf("%d inline blobs imported, want %d", n, small)
	}
}
