package miniotest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
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

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/blobgw/blobgw/backends/s3"
	"github.com/blobgw/blobgw/internal/testproc"
)

// Cluster is a distributed MinIO started by StartDistributed: n `minio
// server` processes on 127.0.0.1, each with its own drive directory, that
// form one erasure set, and a small round-robin HTTP proxy in front of
// them. Endpoint (and Config, NewBucket) name the proxy, so that one S3
// endpoint spreads requests over the nodes; the proxy skips a node that
// was killed or refuses connections.
type Cluster struct {
	dir      string
	password string
	bin      string
	addrs    []string // API host:port per node
	consoles []string // console host:port per node

	mu    sync.Mutex
	procs []*testproc.Proc // nil while a node is down
	runs  []int            // starts per node, for the log names

	served []atomic.Int64 // requests the proxy sent to each node
	next   atomic.Uint64

	ln    net.Listener
	srv   *http.Server
	front *Server // bucket helpers and credentials, addressed at the proxy

	stopOnce sync.Once
	stopErr  error
}

// StartDistributed starts a cluster of n nodes (at least 4, MinIO's
// smallest distributed erasure set) and waits until it is ready. The
// caller must call Stop. It returns an error wrapping ErrNotInstalled when
// the binary is missing.
func StartDistributed(n int) (*Cluster, error) {
	if n < 4 {
		return nil, fmt.Errorf("miniotest: a distributed cluster needs at least 4 nodes, not %d", n)
	}
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	sweepStale()
	var c *Cluster
	err = testproc.Attempts(3, func() (retry bool, err error) {
		c, retry, err = startCluster(bin, n)
		return retry, err
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

func startCluster(bin string, n int) (c *Cluster, retry bool, err error) {
	dir, err := testproc.MkdirOwned("", dirPrefix)
	if err != nil {
		return nil, false, fmt.Errorf("miniotest: %w", err)
	}
	var pw [16]byte
	rand.Read(pw[:])
	c = &Cluster{dir: dir, password: hex.EncodeToString(pw[:]), bin: bin,
		procs: make([]*testproc.Proc, n), runs: make([]int, n), served: make([]atomic.Int64, n)}
	// The failure returns set the named result c to nil before deferred
	// calls run: stop the cluster through a copy of the pointer.
	started := c
	ok := false
	defer func() {
		if !ok {
			started.Stop()
		}
	}()
	for i := 0; i < n; i++ {
		api, err1 := testproc.FreePort()
		console, err2 := testproc.FreePort()
		if err := errors.Join(err1, err2); err != nil {
			return nil, false, fmt.Errorf("miniotest: %w", err)
		}
		c.addrs = append(c.addrs, net.JoinHostPort("127.0.0.1", strconv.Itoa(api)))
		c.consoles = append(c.consoles, net.JoinHostPort("127.0.0.1", strconv.Itoa(console)))
		if err := os.MkdirAll(filepath.Join(dir, fmt.Sprintf("node%d", i+1), "data"), 0o755); err != nil {
			return nil, false, fmt.Errorf("miniotest: %w", err)
		}
	}
	if err := c.startProxy(); err != nil {
		return nil, false, err
	}
	// All nodes at once: each waits for the others to form the set.
	for i := range c.addrs {
		p, err := c.spawn(i)
		if err != nil {
			return nil, false, err
		}
		c.procs[i] = p
	}
	deadline := time.Now().Add(90 * time.Second)
	for i, p := range c.procs {
		if err := c.waitNode(i, p, deadline); err != nil {
			log := p.Log()
			select {
			case <-p.Done():
				retry = strings.Contains(string(log), "already in use") || strings.Contains(string(log), "bind:")
			default:
			}
			return nil, retry, fmt.Errorf("miniotest: node %d: %v\n%s", i, err, testproc.Tail(log))
		}
	}
	c.front = &Server{dir: dir, addr: c.ln.Addr().String(), password: c.password}
	c.front.client = newClient(c.Endpoint(), c.password)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// BucketAlreadyOwnedByYou: the SDK retried a CreateBucket whose first
	// attempt the cluster, still settling, carried out but answered late.
	var owned *types.BucketAlreadyOwnedByYou
	if _, err := c.front.client.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String(probeBucket)}); err != nil && !errors.As(err, &owned) {
		return nil, false, fmt.Errorf("miniotest: create %s: %w", probeBucket, err)
	}
	ok = true
	return c, false, nil
}

// probeBucket holds the objects Restart writes while a node is down.
const probeBucket = "miniotest-probe"

// nodeClient is an S3 client addressed at node i itself.
func (c *Cluster) nodeClient(i int) *awss3.Client {
	return newClient("http://"+c.addrs[i], c.password)
}

// spawn starts node i's process (not waiting for it, not putting it in the
// proxy's rotation).
func (c *Cluster) spawn(i int) (*testproc.Proc, error) {
	// Every node gets the same list of all drives, explicit ports: the
	// {1...n} expansion would form the cross product of ports and paths.
	var drives []string
	for j, a := range c.addrs {
		drives = append(drives, "http://"+a+filepath.Join(c.dir, fmt.Sprintf("node%d", j+1), "data"))
	}
	args := append([]string{"server", "--address", c.addrs[i], "--console-address", c.consoles[i], "--quiet"}, drives...)
	cmd := exec.Command(c.bin, args...)
	cmd.Dir = c.dir
	cmd.Env = minioEnv(c.dir, c.password,
		// Distributed drives on the root disk are refused outside CI/CD
		// mode.
		"MINIO_CI_CD=1",
		// In a container (/.dockerenv) MinIO waits forever for a host
		// that resolves to loopback to resolve to "a valid IP"; this
		// names the node's own endpoint as local instead.
		"_MINIO_SERVER_LOCAL="+c.addrs[i])
	c.mu.Lock()
	c.runs[i]++
	logPath := filepath.Join(c.dir, fmt.Sprintf("node%d.%d.log", i+1, c.runs[i]))
	c.mu.Unlock()
	p, err := testproc.Start(cmd, logPath, syscall.SIGKILL)
	if err != nil {
		return nil, fmt.Errorf("miniotest: start minio node %d: %w", i, err)
	}
	return p, nil
}

// waitNode waits until node i reports the cluster able to serve reads and
// writes (GET /minio/health/cluster: 200 once the node has write quorum).
func (c *Cluster) waitNode(i int, p *testproc.Proc, deadline time.Time) error {
	return p.WaitReady(deadline, healthy("http://"+c.addrs[i]+"/minio/health/cluster"))
}

// startProxy listens on a free 127.0.0.1 port. Keep-alives to the nodes
// are off so that every request dials anew and so goes to the next live
// node; the Host header stays the proxy's, which the client signed.
func (c *Cluster) startProxy() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("miniotest: proxy: %w", err)
	}
	c.ln = ln
	target := &url.URL{Scheme: "http", Host: "minio-cluster"}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = &http.Transport{DisableKeepAlives: true, DialContext: c.dial, ResponseHeaderTimeout: time.Minute}
	director := rp.Director
	rp.Director = func(r *http.Request) {
		host := r.Host
		director(r)
		r.Host = host
	}
	// A request broken by a killed node is the client's to see (a 502),
	// not noise on the test's output.
	rp.ErrorLog = log.New(io.Discard, "", 0)
	c.srv = &http.Server{Handler: rp}
	go c.srv.Serve(ln)
	return nil
}

// dial connects to the next node in turn, skipping a node that is down or
// refuses the connection.
func (c *Cluster) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	n := len(c.addrs)
	start := int(c.next.Add(1) % uint64(n))
	var d net.Dialer
	var lastErr error = errors.New("miniotest: no node is up")
	for k := 0; k < n; k++ {
		i := (start + k) % n
		c.mu.Lock()
		up := c.procs[i] != nil
		c.mu.Unlock()
		if !up {
			continue
		}
		conn, err := d.DialContext(ctx, "tcp", c.addrs[i])
		if err != nil {
			lastErr = err
			continue
		}
		c.served[i].Add(1)
		return conn, nil
	}
	return nil, lastErr
}

// Kill SIGKILLs node i and waits for its exit; the proxy skips it from
// now on.
func (c *Cluster) Kill(i int) {
	c.mu.Lock()
	p := c.procs[i]
	c.procs[i] = nil
	c.mu.Unlock()
	if p == nil {
		return
	}
	p.Cmd.Process.Kill()
	<-p.Done()
}

// Restart starts node i again on its address and drives and waits until
// it reports the cluster healthy; the proxy uses it again from then on.
func (c *Cluster) Restart(i int) error {
	c.mu.Lock()
	up := c.procs[i] != nil
	c.mu.Unlock()
	if up {
		return fmt.Errorf("miniotest: node %d is running", i)
	}
	// A restarted node answers /minio/health/cluster before it has
	// reconnected to its peers, and meanwhile reports objects written
	// while it was down as missing (NoSuchKey). So: write a probe object
	// now, through the proxy (the other nodes), and wait until the node
	// itself reads it.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c.mu.Lock()
	key := aws.String(fmt.Sprintf("node%d-%d", i, c.runs[i]))
	c.mu.Unlock()
	if _, err := c.front.client.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String(probeBucket), Key: key,
		Body: strings.NewReader("probe")}); err != nil {
		return fmt.Errorf("miniotest: restart node %d: write the probe: %w", i, err)
	}
	p, err := c.spawn(i)
	if err != nil {
		return err
	}
	direct := c.nodeClient(i)
	// Into the proxy's rotation only once it is ready.
	if err := p.WaitReady(time.Now().Add(60*time.Second), func() error {
		hctx, hcancel := context.WithTimeout(ctx, 2*time.Second)
		defer hcancel()
		_, err := direct.HeadObject(hctx, &awss3.HeadObjectInput{Bucket: aws.String(probeBucket), Key: key})
		return err
	}); err != nil {
		p.Cmd.Process.Kill()
		<-p.Done()
		return fmt.Errorf("miniotest: restart node %d: %v\n%s", i, err, testproc.Tail(p.Log()))
	}
	c.mu.Lock()
	c.procs[i] = p
	c.mu.Unlock()
	return nil
}

// Nodes is the number of nodes.
func (c *Cluster) Nodes() int { return len(c.addrs) }

// Endpoints returns the URLs of the nodes' S3 APIs, http://127.0.0.1:port,
// for clients that spread requests themselves.
func (c *Cluster) Endpoints() []string {
	out := make([]string, len(c.addrs))
	for i, a := range c.addrs {
		out[i] = "http://" + a
	}
	return out
}

// Served returns how many requests the proxy sent to each node so far.
func (c *Cluster) Served() []int64 {
	out := make([]int64, len(c.served))
	for i := range c.served {
		out[i] = c.served[i].Load()
	}
	return out
}

// Endpoint returns the URL of the round-robin proxy.
func (c *Cluster) Endpoint() string { return "http://" + c.ln.Addr().String() }

// Client returns an S3 client with root credentials, through the proxy.
func (c *Cluster) Client() *awss3.Client { return c.front.client }

// Config returns an s3.Config for bucket, addressed at the proxy.
func (c *Cluster) Config(bucket string) s3.Config { return c.front.Config(bucket) }

// NewBucket creates a fresh bucket for t and returns a Config for it
// addressed at the proxy. Unlike Server.NewBucket it leaves the bucket
// when t ends: Stop removes the whole cluster, and emptying a bucket right
// after a node was killed can wait a minute for locks the dead node held.
func (c *Cluster) NewBucket(t testing.TB) s3.Config {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name, err := c.front.CreateBucket(ctx, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	return c.Config(name)
}

// Stop stops the proxy and every node (SIGTERM, then SIGKILL) and removes
// the cluster's directory. It is safe to call more than once.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		if c.srv != nil {
			c.srv.Close()
		}
		c.mu.Lock()
		procs := append([]*testproc.Proc(nil), c.procs...)
		for i := range c.procs {
			c.procs[i] = nil
		}
		c.mu.Unlock()
		var wg sync.WaitGroup
		errs := make([]error, len(procs))
		for i, p := range procs {
			if p == nil {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = p.Stop("minio", testproc.Step{Sig: syscall.SIGTERM, Wait: 15 * time.Second},
					testproc.Step{Sig: syscall.SIGKILL, Wait: 10 * time.Second})
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			c.stopErr = fmt.Errorf("miniotest: %w", err)
		}
		if err := os.RemoveAll(c.dir); err != nil && c.stopErr == nil {
			c.stopErr = fmt.Errorf("miniotest: remove %s: %w", c.dir, err)
		}
	})
	return c.stopErr
}

// Logs returns the tail of every node's latest log, for a failing test.
func (c *Cluster) Logs() string {
	var b strings.Builder
	c.mu.Lock()
	runs := append([]int(nil), c.runs...)
	c.mu.Unlock()
	for i, n := range runs {
		log, _ := os.ReadFile(filepath.Join(c.dir, fmt.Sprintf("node%d.%d.log", i+1, n)))
		fmt.Fprintf(&b, "node %d (start %d):\n%s\n", i, n, testproc.Tail(log))
	}
	return b.String()
}

// Distributed starts a cluster of n nodes for t, stopped when t ends. When
// the binary is missing it fails t if CI is set and skips t otherwise.
func Distributed(t testing.TB, n int) *Cluster {
	t.Helper()
	c, err := StartDistributed(n)
	if err != nil {
		if errors.Is(err, ErrNotInstalled) && !testproc.InCI() {
			t.Skipf("%v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("minio cluster logs:\n%s", c.Logs())
		}
		if err := c.Stop(); err != nil {
			t.Errorf("%v", err)
		}
	})
	return c
}
