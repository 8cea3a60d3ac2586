package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/blobgw/blobgw/internal/config"
	"github.com/blobgw/blobgw/internal/testproc"
)

// max_connections, read_header_timeout and idle_timeout: defaults, file <
// environment < flag, and bad values exit 2.
func TestConnectionSettings(t *testing.T) {
	out, code := runApp(t, nil, "config")
	if code != 0 || !strings.Contains(out, "max_connections: 4096") || !strings.Contains(out, "read_header_timeout: 30s") || !strings.Contains(out, "idle_timeout: 2m0s") {
		t.Fatalf("defaults (%d):\n%s", code, out)
	}
	file := filepath.Join(t.TempDir(), "blobgw.yaml")
	os.WriteFile(file, []byte("max_connections: 7\nread_header_timeout: 5s\nidle_timeout: 6s\n"), 0o644)
	out, code = runApp(t, nil, "config", "--config", file)
	if code != 0 || !strings.Contains(out, "max_connections: 7") || !strings.Contains(out, "read_header_timeout: 5s") || !strings.Contains(out, "idle_timeout: 6s") {
		t.Fatalf("file (%d):\n%s", code, out)
	}
	env := map[string]string{"BLOBGW_CONFIG": file, "BLOBGW_MAX_CONNECTIONS": "9", "BLOBGW_READ_HEADER_TIMEOUT": "9s", "BLOBGW_IDLE_TIMEOUT": "19s"}
	out, code = runApp(t, env, "config")
	if code != 0 || !strings.Contains(out, "max_connections: 9") || !strings.Contains(out, "read_header_timeout: 9s") || !strings.Contains(out, "idle_timeout: 19s") {
		t.Fatalf("env over file (%d):\n%s", code, out)
	}
	out, code = runApp(t, env, "config", "--max-connections", "11", "--read-header-timeout", "11s", "--idle-timeout", "21s")
	if code != 0 || !strings.Contains(out, "max_connections: 11") || !strings.Contains(out, "read_header_timeout: 11s") || !strings.Contains(out, "idle_timeout: 21s") {
		t.Fatalf("flag over env (%d):\n%s", code, out)
	}
	for _, args := range [][]string{{"--max-connections", "0"}, {"--max-connections", "-1"}, {"--read-header-timeout", "0s"}, {"--idle-timeout", "0s"}} {
		out, code := runApp(t, nil, append([]string{"serve"}, args...)...)
		name := strings.ReplaceAll(strings.TrimPrefix(args[0], "--"), "-", "_")
		if code != 2 || !strings.Contains(out, name) {
			t.Fatalf("%v: exit %d, %q; want exit 2 naming %s", args, code, out, name)
		}
	}
}

// startAbuseServe runs `blobgw serve` (disk backend, SQLite) with args on a free
// port until the test ends and returns the process, its address and a
// client that never retries.
func startAbuseServe(t *testing.T, args ...string) (*testproc.Proc, string, *azblob.Client) {
	t.Helper()
	dir := t.TempDir()
	bin := buildBlobgw(t, filepath.Join(dir, "blobgw"))
	port, err := testproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(bin, append([]string{"serve", "--listen", addr, "--data-dir", filepath.Join(dir, "data"), "--log-level", "warn"}, args...)...)
	cmd.Env = append(os.Environ(), "BLOBGW_CONFIG=")
	p, err := testproc.Start(cmd, filepath.Join(dir, "serve.log"), syscall.SIGKILL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop("blobgw serve", testproc.Step{Sig: syscall.SIGTERM, Wait: 30 * time.Second}, testproc.Step{Sig: syscall.SIGKILL, Wait: 10 * time.Second})
		if t.Failed() {
			t.Logf("serve log tail:\n%s", testproc.Tail(p.Log()))
		}
	})
	if err := p.WaitReady(time.Now().Add(30*time.Second), func() error {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	client := sharedKeyClient(t, "http://"+addr+"/"+config.DevAccountName+"/", config.DevAccountName, config.DevAccountKey)
	return p, addr, client
}

func isBusy(err error) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == http.StatusServiceUnavailable && re.ErrorCode == "ServerBusy"
}

// max_connections: with every slot held by idle connections, a request
// is answered 503 ServerBusy (Get and Put alike, and nothing of the Put is
// stored); once they go, requests are served again.
func TestConnectionLimit(t *testing.T) {
	const limit = 8
	_, addr, client := startAbuseServe(t, "--max-connections", strconv.Itoa(limit))
	ctx := context.Background()
	if _, err := client.CreateContainer(ctx, "lim", nil); err != nil {
		t.Fatal(err)
	}
	// The SDK's own pooled connection from CreateContainer holds a slot
	// until it is closed: a fresh client per phase.
	fresh := func() *azblob.Client {
		cred, _ := azblob.NewSharedKeyCredential(config.DevAccountName, config.DevAccountKey)
		c, err := azblob.NewClientWithSharedKeyCredential("http://"+addr+"/"+config.DevAccountName+"/", cred,
			&azblob.ClientOptions{ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1},
				Transport: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	var idle []net.Conn
	for len(idle) < limit {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	// Every slot is taken once the server has accepted them all; the
	// accept loop runs behind the dials, so look until a request is busy.
	busyClient := fresh()
	var err error
	for i := 0; i < 100; i++ {
		_, err = busyClient.ServiceClient().NewContainerClient("lim").NewBlobClient("x").GetProperties(ctx, nil)
		if isBusy(err) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !isBusy(err) {
		t.Fatalf("Get Blob Properties with %d idle connections held: %v; want 503 ServerBusy", limit, err)
	}
	_, err = busyClient.UploadBuffer(ctx, "lim", "refused", bytes.Repeat([]byte("x"), 100_000), nil)
	if !isBusy(err) {
		t.Fatalf("Put Blob over the limit: %v; want 503 ServerBusy", err)
	}
	for _, c := range idle {
		c.Close()
	}
	ok := fresh()
	for i := 0; ; i++ {
		_, err = ok.UploadBuffer(ctx, "lim", "accepted", []byte("hello"), nil)
		if err == nil {
			break
		}
		if !isBusy(err) || i > 100 {
			t.Fatalf("Put Blob after the idle connections closed: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := ok.ServiceClient().NewContainerClient("lim").NewBlobClient("refused").GetProperties(ctx, nil); !blobNotFound(err) {
		t.Fatalf("the refused Put Blob stored something: %v", err)
	}
}

func blobNotFound(err error) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.ErrorCode == "BlobNotFound"
}

// abuseRSSBound is the peak resident set size TestAbuse allows the gateway.
const abuseRSSBound = 400 << 20

// slowBody yields one byte every gap until ctx ends: a slowloris body that
// keeps within the body idle timeout.
type slowBody struct {
	ctx  context.Context
	gap  time.Duration
	size int64
	off  int64
}

func (b *slowBody) Read(p []byte) (int, error) {
	if b.off >= b.size {
		return 0, io.EOF
	}
	select {
	case <-b.ctx.Done():
		return 0, b.ctx.Err()
	case <-time.After(b.gap):
	}
	p[0] = 'x'
	b.off++
	return 1, nil
}

func (b *slowBody) Seek(offset int64, whence int) (int64, error) {
	if whence == io.SeekEnd {
		return b.size + offset, nil
	}
	b.off = offset
	return offset, nil
}

func (b *slowBody) Close() error { return nil }

// TestAbuse runs one `blobgw serve` under 2,000 idle connections (dialed
// again as soon as the server cuts them), 100 slow-header and 100
// slow-body (slowloris) clients and 300 clients uploading in parallel,
// while a few clients make normal requests: every normal request returns
// (2xx, or 503 ServerBusy), none hangs; the server cuts idle and slow-header
// connections at its timeouts; its peak RSS (VmHWM) stays under
// abuseRSSBound.
func TestAbuse(t *testing.T) {
	if testing.Short() {
		t.Skip("abuse test: skipped with -short")
	}
	const (
		idleConns   = 2000
		slowHeaders = 100
		slowBodies  = 100
		uploaders   = 300
		normals     = 4
		headerTO    = 10 * time.Second
		load        = 30 * time.Second
	)
	p, addr, client := startAbuseServe(t, "--max-connections", "3000", "--read-header-timeout", headerTO.String(),
		"--idle-timeout", headerTO.String(), "--body-idle-timeout", "10s")
	ctx := context.Background()
	if _, err := client.CreateContainer(ctx, "abuse", nil); err != nil {
		t.Fatal(err)
	}
	cc := client.ServiceClient().NewContainerClient("abuse")
	lctx, stop := context.WithTimeout(ctx, load)
	defer stop()
	var wg sync.WaitGroup
	var idleCut, idleDialErr atomic.Int64
	for range idleConns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for lctx.Err() == nil {
				c, err := net.DialTimeout("tcp", addr, 10*time.Second)
				if err != nil {
					idleDialErr.Add(1)
					time.Sleep(100 * time.Millisecond)
					continue
				}
				// Nothing is sent; the server must cut it.
				c.SetReadDeadline(time.Now().Add(3 * headerTO))
				done := make(chan struct{})
				go func() {
					select {
					case <-lctx.Done():
						c.SetReadDeadline(time.Now())
					case <-done:
					}
				}()
				_, err = c.Read(make([]byte, 1))
				close(done)
				c.Close()
				if lctx.Err() == nil && !errors.Is(err, os.ErrDeadlineExceeded) {
					idleCut.Add(1)
				}
			}
		}()
	}
	// Slow headers: a header line every second, never the end of the
	// head; the server must cut the connection at its read header timeout.
	var slowHeaderCut atomic.Int64
	for i := range slowHeaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				return
			}
			defer c.Close()
			cut := make(chan struct{})
			go func() {
				c.Read(make([]byte, 512))
				close(cut)
			}()
			fmt.Fprintf(c, "GET /%s/abuse/x HTTP/1.1\r\nHost: %s\r\n", config.DevAccountName, addr)
			for n := 0; ; n++ {
				select {
				case <-cut:
					slowHeaderCut.Add(1)
					return
				case <-lctx.Done():
					return
				case <-time.After(time.Second):
				}
				fmt.Fprintf(c, "X-Slow-%d-%d: v\r\n", i, n)
			}
		}()
	}
	// Slow bodies: a signed Put Blob whose body gives a byte every 500 ms,
	// within the body idle timeout; each holds an upload slot.
	var slowBodyBusy atomic.Int64
	for i := range slowBodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := cc.NewBlockBlobClient(fmt.Sprintf("slow-%03d", i)).Upload(lctx,
				&slowBody{ctx: lctx, gap: 500 * time.Millisecond, size: 1 << 20}, nil)
			if isBusy(err) {
				slowBodyBusy.Add(1)
			}
		}()
	}
	var upOK, upBusy, upOther atomic.Int64
	var upErr atomic.Value
	body := bytes.Repeat([]byte("u"), 256<<10)
	for i := range uploaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; lctx.Err() == nil; n++ {
				rctx, cancel := context.WithTimeout(ctx, time.Minute)
				_, err := cc.NewBlockBlobClient(fmt.Sprintf("up-%03d", i)).Upload(rctx, streaming.NopCloser(bytes.NewReader(body)), nil)
				cancel()
				switch {
				case err == nil:
					upOK.Add(1)
				case isBusy(err):
					upBusy.Add(1)
					time.Sleep(100 * time.Millisecond)
				case lctx.Err() != nil:
				default:
					upOther.Add(1)
					upErr.Store(err.Error())
				}
			}
		}()
	}
	// Normal requests: each must come back, 2xx or 503 ServerBusy.
	var normOK, normBusy atomic.Int64
	var normFail []string
	var mu sync.Mutex
	var slowest atomic.Int64
	for i := range normals {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("normal-%d", i)
			for n := 0; lctx.Err() == nil; n++ {
				start := time.Now()
				rctx, cancel := context.WithTimeout(ctx, time.Minute)
				var err error
				if n%2 == 0 {
					_, err = cc.NewBlockBlobClient(name).UploadBuffer(rctx, []byte(name), nil)
				} else {
					var resp azblob.DownloadStreamResponse
					resp, err = client.DownloadStream(rctx, "abuse", name, nil)
					if err == nil {
						b, rerr := io.ReadAll(resp.Body)
						resp.Body.Close()
						if rerr == nil && string(b) != name {
							rerr = fmt.Errorf("read %q", b)
						}
						err = rerr
					}
				}
				cancel()
				if d := time.Since(start); int64(d) > slowest.Load() {
					slowest.Store(int64(d))
				}
				switch {
				case err == nil:
					normOK.Add(1)
				case isBusy(err) || blobNotFound(err):
					// Not found: its Put was refused busy.
					normBusy.Add(1)
				default:
					mu.Lock()
					normFail = append(normFail, err.Error())
					mu.Unlock()
				}
				time.Sleep(100 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	hwm, err := vmHWM(p.Cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("gateway peak RSS (VmHWM) %.1f MiB; idle connections cut by the server %d (dial errors %d); slow-header connections cut %d of %d; slow bodies refused busy %d of %d; parallel uploads: %d ok, %d busy, %d other; normal requests: %d ok, %d busy, %d failed, slowest %v",
		float64(hwm)/(1<<20), idleCut.Load(), idleDialErr.Load(), slowHeaderCut.Load(), slowHeaders, slowBodyBusy.Load(), slowBodies,
		upOK.Load(), upBusy.Load(), upOther.Load(), normOK.Load(), normBusy.Load(), len(normFail), time.Duration(slowest.Load()).Round(time.Millisecond))
	if len(normFail) > 0 {
		t.Errorf("%d normal requests failed otherwise than 503 ServerBusy, e.g. %s", len(normFail), normFail[0])
	}
	if normOK.Load() == 0 {
		t.Error("no normal request succeeded")
	}
	if upOK.Load() == 0 || upOther.Load() > 0 {
		t.Errorf("parallel uploads: %d ok, %d failed otherwise than 503 (%v)", upOK.Load(), upOther.Load(), upErr.Load())
	}
	if slowHeaderCut.Load() != slowHeaders {
		t.Errorf("%d of %d slow-header connections cut by the server within %v", slowHeaderCut.Load(), slowHeaders, load)
	}
	if idleCut.Load() < idleConns {
		t.Errorf("the server cut %d idle connections, want every one of the %d (read_header_timeout %v)", idleCut.Load(), idleConns, headerTO)
	}
	if hwm > abuseRSSBound {
		t.Errorf("peak RSS %d MiB, want under %d MiB", hwm>>20, abuseRSSBound>>20)
	}
	// And afterwards the replica serves as before.
	if _, err := cc.NewBlockBlobClient("after").UploadBuffer(ctx, []byte("after"), nil); err != nil {
		t.Fatalf("Put Blob after the abuse: %v", err)
	}
}
