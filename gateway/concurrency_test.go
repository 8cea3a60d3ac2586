package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/blobgw/blobgw/backends"
	"github.com/blobgw/blobgw/internal/md5lanes"
)

// TestCreateOnlyRace: 32 goroutines released together doing Put Blob with
// If-None-Match: * on one new name, spread over three gateways sharing the
// metadata store and the data directory: exactly one 201, 31 × 409
// BlobAlreadyExists, and the stored content is the winner's.
func TestCreateOnlyRace(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind, setupOpts{replicas: 3})
		ctx := context.Background()
		createContainers(t, b.client, "race")
		clients := []*azblob.Client{b.clientFor(t, 0), b.clientFor(t, 1), b.clientFor(t, 2)}
		const n = 32
		start := make(chan struct{})
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				bc := clients[i%3].ServiceClient().NewContainerClient("race").NewBlockBlobClient("once")
				body := bytes.Repeat([]byte(fmt.Sprintf("writer-%02d;", i)), 1000)
				<-start
				_, errs[i] = bc.Upload(ctx, rsc{bytes.NewReader(body)}, &blockblob.UploadOptions{
					AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: to.Ptr(azcore.ETagAny)}},
				})
			}(i)
		}
		close(start)
		wg.Wait()
		winner, conflicts := -1, 0
		for i, err := range errs {
			switch {
			case err == nil:
				if winner >= 0 {
					t.Fatalf("two writers won: %d and %d", winner, i)
				}
				winner = i
			case statusOf(err) == 409 && codeOf(err) == "BlobAlreadyExists":
				conflicts++
			default:
				t.Fatalf("writer %d: unexpected %v", i, err)
			}
		}
		if winner < 0 || conflicts != n-1 {
			t.Fatalf("winner %d, conflicts %d", winner, conflicts)
		}
		got := download(t, b.client, "race", "once")
		if want := bytes.Repeat([]byte(fmt.Sprintf("writer-%02d;", winner)), 1000); !bytes.Equal(got, want) {
			t.Fatalf("stored content is not the winner's (%q...)", got[:20])
		}
		// The losers' staged objects were discarded.
		b.collectNoLeak(t)
	})
}

// TestCounterIncrements: 16 workers × 25 read-modify-write increments of a
// counter blob with If-Match, retrying on 412, end at exactly 400.
func TestCounterIncrements(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind, setupOpts{replicas: 3})
		ctx := context.Background()
		createContainers(t, b.client, "ctr")
		if _, err := b.client.UploadBuffer(ctx, "ctr", "n", []byte("0"), nil); err != nil {
			t.Fatal(err)
		}
		const workers, each = 16, 25
		var wg sync.WaitGroup
		var mu sync.Mutex
		retries := 0
		errc := make(chan error, workers)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				bc := b.clientFor(t, w%3).ServiceClient().NewContainerClient("ctr").NewBlockBlobClient("n")
				for i := 0; i < each; {
					resp, err := bc.DownloadStream(ctx, nil)
					if err != nil {
						errc <- err
						return
					}
					data, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					if err != nil {
						errc <- err
						return
					}
					v, err := strconv.Atoi(string(data))
					if err != nil {
						errc <- fmt.Errorf("counter body %q: %w", data, err)
						return
					}
					_, err = bc.Upload(ctx, nopSeeker(strconv.Itoa(v+1)), &blockblob.UploadOptions{
						AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: resp.ETag}},
					})
					switch {
					case err == nil:
						i++
					case statusOf(err) == 412 && codeOf(err) == "ConditionNotMet":
						mu.Lock()
						retries++
						mu.Unlock()
					default:
						errc <- err
						return
					}
				}
			}(w)
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Fatal(err)
		}
		if got := string(download(t, b.client, "ctr", "n")); got != strconv.Itoa(workers*each) {
			t.Fatalf("counter = %s, want %d", got, workers*each)
		}
		t.Logf("%d increments, %d retries on 412", workers*each, retries)
	})
}

// TestReadDuringOverwrite: a reader that started before an overwrite
// finishes on the old bytes, whole.
func TestReadDuringOverwrite(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind, setupOpts{grace: time.Hour})
		ctx := context.Background()
		createContainers(t, b.client, "overwrite")
		old := randBytes(8<<20, 7)
		if _, err := b.client.UploadBuffer(ctx, "overwrite", "big", old, nil); err != nil {
			t.Fatal(err)
		}
		resp, err := b.client.DownloadStream(ctx, "overwrite", "big", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		head := make([]byte, 1<<20)
		if _, err := io.ReadFull(resp.Body, head); err != nil {
			t.Fatal(err)
		}
		newer := randBytes(8<<20, 8)
		if _, err := b.client.UploadBuffer(ctx, "overwrite", "big", newer, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := b.client.DeleteBlob(ctx, "overwrite", "big", nil); err != nil {
			t.Fatal(err)
		}
		// A collection pass now must not touch the old bytes (grace).
		b.collectAll(t)
		rest, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(append(head, rest...), old) {
			t.Fatal("the reader saw a mix of old and new bytes")
		}
	})
}

// TestCollection: replaced and deleted blobs' objects are collected once
// due, and an interrupted upload leaves nothing visible or stored.
func TestCollection(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind) // grace 0: due at once
		ctx := context.Background()
		createContainers(t, b.client, "gcc")
		for i := 0; i < 3; i++ {
			if _, err := b.client.UploadBuffer(ctx, "gcc", "a", randBytes(1000, int64(i)), nil); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := b.client.UploadBuffer(ctx, "gcc", "b", []byte("bee"), nil); err != nil {
			t.Fatal(err)
		}
		b.wantObjects(t, 4, "before collection (3 versions of a, 1 of b)")
		b.collectAll(t)
		b.wantObjects(t, 2, "after collection")
		if _, err := b.client.DeleteBlob(ctx, "gcc", "a", nil); err != nil {
			t.Fatal(err)
		}
		b.collectAll(t)
		b.wantObjects(t, 1, "after deleting a")
		if got := string(download(t, b.client, "gcc", "b")); got != "bee" {
			t.Fatalf("b = %q", got)
		}

		// Interrupted upload: announce 1 MiB, send 100 KiB, hang up.
		large0 := md5lanes.Stats().Large
		conn := b.startPut(t, "gcc/cut", 1<<20, make([]byte, 100<<10))
		time.Sleep(200 * time.Millisecond)
		conn.Close()
		deadline := time.Now().Add(10 * time.Second)
		for {
			// Entries left must all be intents pooled for later uploads.
			keys, err := b.db.Store.CollectionKeys(ctx)
			if err != nil {
				t.Fatal(err)
			}
			keys = b.withoutPooled(keys)
			if len(keys) == 0 && b.countObjects(t) == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("interrupted upload left %d queue entries and %d objects", len(keys), b.countObjects(t))
			}
			time.Sleep(50 * time.Millisecond)
		}
		_, err := b.client.ServiceClient().NewContainerClient("gcc").NewBlobClient("cut").GetProperties(ctx, nil)
		wantErr(t, err, 404, "BlobNotFound")
		// The body's MD5 (a large body: md5lanes) was given back.
		wantLargeBodies(t, large0, "after the interrupted upload")

		// Deleting the container queues its blobs' bytes.
		if _, err := b.client.DeleteContainer(ctx, "gcc", nil); err != nil {
			t.Fatal(err)
		}
		b.collectAll(t)
		b.wantObjects(t, 0, "after deleting the container")
	})
}

// startPut sends a signed Put Blob of a block blob announcing size bytes
// at path ("container/blob") on a connection of its own and the first
// bytes of its body, and returns the connection to hang up on.
func (b *bundle) startPut(t *testing.T, path string, size int, first []byte) net.Conn {
	t.Helper()
	req, _ := http.NewRequest("PUT", b.serviceURL(0)+path, nil)
	req.ContentLength = int64(size)
	req.Header.Set("x-ms-blob-type", "BlockBlob")
	req.Header.Set("Content-Length", strconv.Itoa(size))
	b.sign(t, req)
	conn, err := net.Dial("tcp", b.servers[0].Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(conn)
	fmt.Fprintf(w, "PUT %s HTTP/1.1\r\nHost: %s\r\n", req.URL.RequestURI(), req.URL.Host)
	req.Header.Write(w)
	fmt.Fprintf(w, "\r\n")
	w.Write(first)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return conn
}

func (b *bundle) collectAll(t *testing.T) {
	t.Helper()
	for _, gw := range b.gws {
		if _, err := gw.Collect(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// collectNoLeak runs a collection pass on every replica, then asserts
// the no-leak invariant: how most tests end.
func (b *bundle) collectNoLeak(t *testing.T) {
	t.Helper()
	b.collectAll(t)
	b.checkNoLeak(t)
}

// withoutPooled drops from keys those waiting in a replica's key pool.
func (b *bundle) withoutPooled(keys []string) []string {
	pooled := map[string]bool{}
	for _, gw := range b.gws {
		for _, k := range gw.PooledKeys() {
			pooled[k] = true
		}
	}
	out := keys[:0]
	for _, k := range keys {
		if !pooled[k] {
			out = append(out, k)
		}
	}
	return out
}

func (b *bundle) countObjects(t *testing.T) int {
	t.Helper()
	n := 0
	if err := b.backend.List(context.Background(), "", func(backends.ObjectInfo) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// wantObjects fails t unless the backend holds want objects; what says
// at which step and why that many.
func (b *bundle) wantObjects(t *testing.T, want int, what string) {
	t.Helper()
	if n := b.countObjects(t); n != want {
		t.Fatalf("%s: %d backend objects, want %d", what, n, want)
	}
}

// checkNoLeak asserts the no-leak invariant: every backend object is
// referenced by a blob or snapshot row, a staged block or a collection
// entry (upload intents included), the set Store.ReferencedKeys walks.
func (b *bundle) checkNoLeak(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	ref := map[string]bool{}
	err := b.db.Store.ReferencedKeys(ctx, func(key, _ string) error {
		ref[key] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = b.backend.List(ctx, "", func(o backends.ObjectInfo) error {
		if !ref[o.Key] {
			return fmt.Errorf("leaked object %s", o.Key)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
