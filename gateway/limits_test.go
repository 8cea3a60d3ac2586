package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/blobgw/blobgw/gateway"
)

// stalledPut opens a raw connection to replica 0 and sends a signed Put
// Blob announcing size bytes with Expect: 100-continue, waits for the 100
// Continue (the server sends it when the handler first reads the body:
// the upload has been admitted), then sends only the first sent bytes and
// stops: a client that went quiet mid-body. The connection is closed when
// t ends; read the final response from the returned reader.
func (b *bundle) stalledPut(t *testing.T, cont, name string, size, sent int) (net.Conn, *bufio.Reader) {
	t.Helper()
	req, _ := http.NewRequest("PUT", b.serviceURL(0)+cont+"/"+name, nil)
	req.ContentLength = int64(size)
	req.Header.Set("x-ms-blob-type", "BlockBlob")
	req.Header.Set("Content-Length", strconv.Itoa(size))
	req.Header.Set("Expect", "100-continue")
	b.sign(t, req)
	conn, err := net.Dial("tcp", b.servers[0].Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	w := bufio.NewWriter(conn)
	fmt.Fprintf(w, "PUT %s HTTP/1.1\r\nHost: %s\r\n", req.URL.RequestURI(), req.URL.Host)
	req.Header.Write(w)
	fmt.Fprintf(w, "\r\n")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("waiting for 100 Continue: %v", err)
	}
	if resp.StatusCode != http.StatusContinue {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("want 100 Continue, got %d %s", resp.StatusCode, body)
	}
	conn.SetReadDeadline(time.Time{})
	w.Write(make([]byte, sent))
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return conn, br
}

// tempFiles lists the disk backend's temporary files (nil for s3).
func (b *bundle) tempFiles(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(b.dataDir, "blobs", "tmp"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// A Put Blob whose body stops after 1 byte of 1 MiB is answered 408
// RequestTimeout once the body idle timeout (1 s here) passes, not held
// for ever; nothing is stored, and neither a temporary file nor an upload
// intent stays behind.
func TestBodyIdleTimeout(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		b := setup(t, kind, setupOpts{options: gateway.Options{BodyIdleTimeout: time.Second}})
		createContainers(t, b.client, "idle")
		start := time.Now()
		conn, br := b.stalledPut(t, "idle", "stalled", 1<<20, 1)
		conn.SetReadDeadline(time.Now().Add(15 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("stalled upload: no response after %v: %v", time.Since(start), err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if d := statusDiff(resp, http.StatusRequestTimeout, "RequestTimeout"); d != "" {
			t.Fatalf("stalled upload: %s: %s", d, body)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("stalled upload answered after %v, want about 1s", d)
		}
		_, err = b.client.ServiceClient().NewContainerClient("idle").NewBlobClient("stalled").GetProperties(ctx, nil)
		wantErr(t, err, 404, "BlobNotFound")

		deadline := time.Now().Add(10 * time.Second)
		for {
			b.collectAll(t)
			keys, err := b.db.Store.CollectionKeys(ctx)
			if err != nil {
				t.Fatal(err)
			}
			keys = b.withoutPooled(keys)
			tmp := b.tempFiles(t)
			if len(keys) == 0 && len(tmp) == 0 && b.countObjects(t) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("stalled upload left %d queue entries, temp files %v and %d objects", len(keys), tmp, b.countObjects(t))
			}
			time.Sleep(50 * time.Millisecond)
		}

		// A slow body that keeps arriving is not cut: 4 chunks, each
		// within the idle timeout, but the whole taking longer than it.
		data := bytes.Repeat([]byte("s"), 4<<10)
		req, _ := http.NewRequest("PUT", b.serviceURL(0)+"idle/slow", &slowReader{data: data, chunk: 1 << 10, pause: 400 * time.Millisecond})
		req.ContentLength = int64(len(data))
		req.Header.Set("x-ms-blob-type", "BlockBlob")
		b.sign(t, req)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusCreated {
			t.Fatalf("slow upload: %d %s", res.StatusCode, msg)
		}
		if got := download(t, b.client, "idle", "slow"); !bytes.Equal(got, data) {
			t.Fatalf("slow upload stored %d bytes, want %d", len(got), len(data))
		}
	})
}

// slowReader yields data chunk bytes at a time, pausing before each.
type slowReader struct {
	data  []byte
	chunk int
	pause time.Duration
}

func (r *slowReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	time.Sleep(r.pause)
	n := copy(p[:min(len(p), r.chunk)], r.data)
	r.data = r.data[n:]
	return n, nil
}

// With max_uploads 2 and two uploads stalled mid-body, a third upload is
// refused 503 ServerBusy at once while reads still work; when the stalled
// clients go away, uploads are accepted again.
func TestMaxUploads(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		b := setup(t, kind, setupOpts{options: gateway.Options{MaxUploads: 2, BodyIdleTimeout: time.Minute}})
		createContainers(t, b.client, "cap")
		if _, err := b.client.UploadBuffer(ctx, "cap", "kept", []byte("kept"), nil); err != nil {
			t.Fatal(err)
		}
		c1, _ := b.stalledPut(t, "cap", "s1", 1<<20, 1)
		c2, _ := b.stalledPut(t, "cap", "s2", 1<<20, 1)

		_, err := b.client.UploadBuffer(ctx, "cap", "third", []byte("third"), nil)
		wantErr(t, err, 503, "ServerBusy")
		_, err = b.client.ServiceClient().NewContainerClient("cap").NewBlobClient("third").GetProperties(ctx, nil)
		wantErr(t, err, 404, "BlobNotFound")
		// Put Block is an upload too; reads are not.
		bb := b.client.ServiceClient().NewContainerClient("cap").NewBlockBlobClient("blocks")
		_, err = bb.StageBlock(ctx, "YWFh", nopSeeker("block"), nil)
		wantErr(t, err, 503, "ServerBusy")
		if got := download(t, b.client, "cap", "kept"); string(got) != "kept" {
			t.Fatalf("Get beside the stalled uploads: %q", got)
		}

		c1.Close()
		c2.Close()
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, err := b.client.UploadBuffer(ctx, "cap", "after", []byte("after"), nil)
			if err == nil {
				break
			}
			if statusOf(err) != 503 || time.Now().After(deadline) {
				t.Fatalf("upload after the stalled clients left: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		_, err = b.client.ServiceClient().NewContainerClient("cap").NewBlobClient("s1").GetProperties(ctx, nil)
		wantErr(t, err, 404, "BlobNotFound")
		if tmp := b.tempFiles(t); len(tmp) != 0 {
			t.Fatalf("temp files left: %v", tmp)
		}
	})
}
