package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// After the cutover the applications write to the gateway; the rerun the
// README asks for must not put the older source copy back over their
// writes: a blob Put at the gateway (no import marker) is kept, and said so.
func TestImportAzureKeepsGatewayWrites(t *testing.T) {
	ctx := context.Background()
	src := newMigGateway(t, nil)
	dst := newMigGateway(t, nil)
	blobs := fillSource(t, src)
	args := []string{"import", "azure", "--source-url", src.accountSAS(t), "--dest-url", dst.url}
	runCLI(t, nil, args...).ok(t, fmt.Sprintf("copied %d, skipped 0, failed 0", len(blobs)))

	// The applications, now on the gateway.
	if _, err := dst.client.UploadBuffer(ctx, "photos", "cat.jpg", []byte("written at the gateway"), nil); err != nil {
		t.Fatal(err)
	}
	runCLI(t, nil, args...).ok(t, fmt.Sprintf("copied 0, skipped %d, failed 0", len(blobs)), "photos/cat.jpg", "kept")
	if got := string(readBlob(t, dst.client, "photos", "cat.jpg")); got != "written at the gateway" {
		t.Errorf("photos/cat.jpg = %q: the rerun replaced the gateway's write", got)
	}
}

// A blob written at the gateway between the import's look at the
// destination and its write is not replaced either: the write is
// conditional (If-None-Match: * for a blob that was not there), that copy
// fails, and the rerun keeps the gateway's blob.
func TestImportAzureConditionalWrite(t *testing.T) {
	var raced atomic.Bool
	var dstRef *migGateway
	dst := newMigGateway(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/logs/a.log") {
				if raced.CompareAndSwap(false, true) {
					if _, err := dstRef.client.UploadBuffer(context.Background(), "logs", "a.log", []byte("raced in"), nil); err != nil {
						t.Error(err)
					}
				}
			}
			h.ServeHTTP(w, r)
		})
	})
	dstRef = dst
	src := newMigGateway(t, nil)
	blobs := fillSource(t, src)
	args := []string{"import", "azure", "--source-url", src.accountSAS(t), "--dest-url", dst.url}
	runCLI(t, nil, args...).fails(t, 1, fmt.Sprintf("copied %d, skipped 0, failed 1", len(blobs)-1), "logs/a.log")
	if got := string(readBlob(t, dst.client, "logs", "a.log")); got != "raced in" {
		t.Errorf("logs/a.log = %q: the import replaced a blob written during its copy", got)
	}
	runCLI(t, nil, args...).ok(t, fmt.Sprintf("copied 0, skipped %d, failed 0", len(blobs)), "logs/a.log", "kept")
	if got := readBlob(t, dst.client, "logs", "a.log"); !bytes.Equal(got, []byte("raced in")) {
		t.Errorf("logs/a.log = %q after the rerun", got)
	}
}
