package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/appendblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"

	"github.com/blobgw/blobgw/backends"
	"github.com/blobgw/blobgw/backends/s3"
	"github.com/blobgw/blobgw/backends/s3/miniotest"
	"github.com/blobgw/blobgw/internal/config"
	"github.com/blobgw/blobgw/leasedb/pgtest"
)

// TestThreeProcesses runs three `blobgw serve` processes on one Postgres and
// one MinIO bucket, each with its own store pool, S3 client, upload intent
// pool and collector (1 s grace and interval, so the three collect while the
// races run), and spreads racing clients over all three:
//
//   - creates with If-None-Match: * of one name: exactly one wins;
//   - read-modify-write increments with If-Match: none lost;
//   - lease acquisitions with different ids: exactly one wins, and only
//     its holder writes;
//   - appends at the current length until 60 blocks: each block once, in
//     order;
//   - blocks staged on two processes and committed on the third;
//
// and at the end, with everything deleted, the collectors leave no object
// in the bucket.
func TestThreeProcesses(t *testing.T) {
	dir := t.TempDir()
	bin := buildBlobgw(t, filepath.Join(dir, "blobgw"))
	dsn := pgtest.Start(t)
	cfg := miniotest.NewBucket(t)
	cfg.Prefix = "gw/"
	clients := startServes(t, bin, dir, 3, append(s3ServeArgs(cfg), "--metadata", dsn, "--gc-grace", "1s", "--gc-interval", "1s")...)
	ctx := context.Background()
	if _, err := clients[0].CreateContainer(ctx, "race", nil); err != nil {
		t.Fatal(err)
	}
	bc := func(i int, name string) *blockblob.Client {
		return clients[i%3].ServiceClient().NewContainerClient("race").NewBlockBlobClient(name)
	}

	t.Run("CreateOnce", func(t *testing.T) {
		var wins, lost atomic.Int32
		var wg sync.WaitGroup
		for i := range 30 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := bc(i, "once").Upload(ctx, streaming.NopCloser(bytes.NewReader([]byte("writer "+strconv.Itoa(i)))),
					&blockblob.UploadOptions{AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{
						IfNoneMatch: to.Ptr(azcore.ETagAny)}}})
				switch {
				case err == nil:
					wins.Add(1)
				case bloberror.HasCode(err, bloberror.BlobAlreadyExists):
					lost.Add(1)
				default:
					t.Errorf("writer %d: %v", i, err)
				}
			}()
		}
		wg.Wait()
		if wins.Load() != 1 || lost.Load() != 29 {
			t.Fatalf("%d created, %d refused; want 1 and 29", wins.Load(), lost.Load())
		}
	})

	t.Run("CompareAndSwap", func(t *testing.T) {
		if _, err := bc(0, "counter").UploadBuffer(ctx, []byte("0"), nil); err != nil {
			t.Fatal(err)
		}
		const workers, each = 9, 8
		var conflicts atomic.Int32
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for done := 0; done < each; {
					c := bc(w, "counter")
					resp, err := c.DownloadStream(ctx, nil)
					if err != nil {
						t.Errorf("read: %v", err)
						return
					}
					var buf bytes.Buffer
					buf.ReadFrom(resp.Body)
					resp.Body.Close()
					n, err := strconv.Atoi(buf.String())
					if err != nil {
						t.Errorf("counter holds %q", buf.String())
						return
					}
					_, err = c.UploadBuffer(ctx, []byte(strconv.Itoa(n+1)), &blockblob.UploadBufferOptions{
						AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: resp.ETag}}})
					switch {
					case err == nil:
						done++
					case bloberror.HasCode(err, bloberror.ConditionNotMet):
						conflicts.Add(1)
					default:
						t.Errorf("write: %v", err)
						return
					}
				}
			}()
		}
		wg.Wait()
		got := download(t, bc(2, "counter").BlobClient())
		if string(got) != strconv.Itoa(workers*each) {
			t.Fatalf("counter = %s after %d increments (%d conflicts)", got, workers*each, conflicts.Load())
		}
		t.Logf("%d increments, %d refused by If-Match", workers*each, conflicts.Load())
	})

	t.Run("LeaseOnce", func(t *testing.T) {
		if _, err := bc(0, "leased").UploadBuffer(ctx, []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
		ids := make([]string, 15)
		won := make([]bool, 15)
		var wg sync.WaitGroup
		for i := range ids {
			ids[i] = fmt.Sprintf("00000000-0000-0000-0000-%012d", i+1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				lc, err := lease.NewBlobClient(bc(i, "leased"), &lease.BlobClientOptions{LeaseID: &ids[i]})
				if err != nil {
					t.Error(err)
					return
				}
				_, err = lc.AcquireLease(ctx, 60, nil)
				switch {
				case err == nil:
					won[i] = true
				case bloberror.HasCode(err, bloberror.LeaseAlreadyPresent):
				default:
					t.Errorf("acquire %d: %v", i, err)
				}
			}()
		}
		wg.Wait()
		holder := -1
		for i, w := range won {
			if w {
				if holder >= 0 {
					t.Fatalf("ids %d and %d both acquired the lease", holder, i)
				}
				holder = i
			}
		}
		if holder < 0 {
			t.Fatal("no acquisition succeeded")
		}
		// Every process refuses a write without the id, takes the holder's.
		for i := range 3 {
			_, err := bc(i, "leased").UploadBuffer(ctx, []byte("no lease"), nil)
			if !bloberror.HasCode(err, bloberror.LeaseIDMissing) {
				t.Fatalf("process %d, write without the lease id: %v", i, err)
			}
			if _, err := bc(i, "leased").UploadBuffer(ctx, []byte("holder "+strconv.Itoa(i)), &blockblob.UploadBufferOptions{
				AccessConditions: &blob.AccessConditions{LeaseAccessConditions: &blob.LeaseAccessConditions{LeaseID: &ids[holder]}}}); err != nil {
				t.Fatalf("process %d, holder's write: %v", i, err)
			}
		}
		lc, _ := lease.NewBlobClient(bc(1, "leased"), &lease.BlobClientOptions{LeaseID: &ids[holder]})
		if _, err := lc.ReleaseLease(ctx, nil); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("Append", func(t *testing.T) {
		ac := func(i int) *appendblob.Client {
			return clients[i%3].ServiceClient().NewContainerClient("race").NewAppendBlobClient("log")
		}
		if _, err := ac(0).Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		const blocks = 60
		var next atomic.Int32 // blocks claimed by writers
		var wg sync.WaitGroup
		for w := range 12 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					n := next.Add(1) - 1
					if n >= blocks {
						return
					}
					block := []byte(fmt.Sprintf("<%03d:%s>", n, bytes.Repeat([]byte{'a' + byte(n%26)}, 1000)))
					for attempt := 0; ; attempt++ {
						props, err := ac(w+attempt).GetProperties(ctx, nil)
						if err != nil {
							t.Errorf("properties: %v", err)
							return
						}
						_, err = ac(w+attempt).AppendBlock(ctx, streaming.NopCloser(bytes.NewReader(block)), &appendblob.AppendBlockOptions{
							AppendPositionAccessConditions: &appendblob.AppendPositionAccessConditions{AppendPosition: props.ContentLength}})
						if err == nil {
							break
						}
						if !bloberror.HasCode(err, bloberror.AppendPositionConditionNotMet) {
							t.Errorf("append %d: %v", n, err)
							return
						}
					}
				}
			}()
		}
		wg.Wait()
		got := download(t, ac(1).BlobClient())
		seen := map[int]bool{}
		for off := 0; off < len(got); {
			var n int
			if _, err := fmt.Sscanf(string(got[off:off+5]), "<%03d:", &n); err != nil {
				t.Fatalf("byte %d: no block starts here: %q", off, got[off:min(off+20, len(got))])
			}
			want := fmt.Sprintf("<%03d:%s>", n, bytes.Repeat([]byte{'a' + byte(n%26)}, 1000))
			if string(got[off:min(off+len(want), len(got))]) != want || seen[n] {
				t.Fatalf("byte %d: block %d torn or repeated", off, n)
			}
			seen[n] = true
			off += len(want)
		}
		if len(seen) != blocks {
			t.Fatalf("%d distinct blocks, want %d", len(seen), blocks)
		}
	})

	t.Run("StageAndCommitAcross", func(t *testing.T) {
		ids := []string{"YmxvY2stMA==", "YmxvY2stMQ=="}
		parts := [][]byte{bytes.Repeat([]byte("p"), 3<<20), bytes.Repeat([]byte("q"), 1<<20)}
		for i, id := range ids {
			if _, err := bc(i, "staged").StageBlock(ctx, id, streaming.NopCloser(bytes.NewReader(parts[i])), nil); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := bc(2, "staged").CommitBlockList(ctx, []string{ids[1], ids[0]}, nil); err != nil {
			t.Fatal(err)
		}
		want := append(append([]byte{}, parts[1]...), parts[0]...)
		for i := range 3 {
			if got := download(t, bc(i, "staged").BlobClient()); !bytes.Equal(got, want) {
				t.Fatalf("process %d reads %d bytes, want %d", i, len(got), len(want))
			}
		}
	})

	// Everything goes; the three collectors empty the bucket.
	st, err := s3.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	objects := func() []string {
		var keys []string
		if err := st.List(ctx, "", func(o backends.ObjectInfo) error {
			keys = append(keys, o.Key)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return keys
	}
	if n := len(objects()); n < 4 {
		t.Fatalf("%d objects in the bucket before the delete; the blobs alone hold more", n)
	}
	if _, err := clients[1].DeleteContainer(ctx, "race", nil); err != nil {
		t.Fatal(err)
	}
	var left []string
	for deadline := time.Now().Add(30 * time.Second); ; {
		if left = objects(); len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(left) != 0 {
		t.Fatalf("%d objects left in the bucket after deleting everything: %v", len(left), left[:min(len(left), 5)])
	}
}

// buildBlobgw builds this command to bin and returns bin.
func buildBlobgw(t testing.TB, bin string) string {
	t.Helper()
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// s3ServeArgs are the `blobgw serve` flags for the MinIO bucket cfg
// (path-style; --s3-prefix when cfg has a prefix).
func s3ServeArgs(cfg s3.Config) []string {
	args := []string{"--backend", "s3", "--s3-endpoint", cfg.Endpoint, "--s3-bucket", cfg.Bucket, "--s3-region", cfg.Region,
		"--s3-access-key", cfg.AccessKey, "--s3-secret-key", cfg.SecretKey, "--s3-path-style"}
	if cfg.Prefix != "" {
		args = append(args, "--s3-prefix", cfg.Prefix)
	}
	return args
}

// startServes starts n `bin serve` processes with args, each with its own
// data directory dir/dataI (see startServe), and returns their clients.
func startServes(t *testing.T, bin, dir string, n int, args ...string) []*azblob.Client {
	t.Helper()
	var clients []*azblob.Client
	for i := range n {
		clients = append(clients, startServe(t, bin, filepath.Join(dir, "data"+strconv.Itoa(i)), args...))
	}
	return clients
}

// startServe starts `bin serve` on a free port with args, stopped when t
// ends, and returns an SDK client (no retries: every status reaches the
// test) once it listens.
func startServe(t *testing.T, bin, dataDir string, args ...string) *azblob.Client {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, append([]string{"serve", "--listen", addr, "--data-dir", dataDir, "--log-level", "warn"}, args...)...)
	cmd.Env = append(os.Environ(), "BLOBGW_CONFIG=")
	logs := newSyncBuffer()
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		terminate(cmd.Process, exited, 10*time.Second)
		if t.Failed() {
			t.Logf("gateway %s log:\n%s", addr, logs.String())
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		select {
		case <-exited:
			t.Fatalf("gateway exited:\n%s", logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("gateway did not listen on %s:\n%s", addr, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	client := sharedKeyClient(t, "http://"+addr+"/"+config.DevAccountName+"/", config.DevAccountName, config.DevAccountKey)
	return client
}

// syncBuffer is a buffer for a child's output, written through the lock
// of the syncWriter the import commands use and read back by String.
type syncBuffer struct {
	syncWriter
	b bytes.Buffer
}

func newSyncBuffer() *syncBuffer {
	s := &syncBuffer{}
	s.w = &s.b
	return s
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
