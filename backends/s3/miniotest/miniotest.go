// Package miniotest runs a throwaway MinIO server for tests: the minio
// binary on a free 127.0.0.1 port with its data in a temporary directory,
// one fresh bucket per test.
//
// Typical use shares one server per test binary:
//
//	func TestMain(m *testing.M) { miniotest.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		cfg := miniotest.NewBucket(t) // an s3.Config for a fresh, empty bucket owned by this test
//		store, err := s3.New(context.Background(), cfg)
//		...
//	}
//
// Main starts nothing by itself; it stops the shared server (and removes its
// directory) after the tests if one was started. Packages that want their
// own server call StartServer and Server.NewBucket.
//
// The binary is looked up in $MINIOTEST_BIN, on PATH, in $(go env GOPATH)/bin
// and in $HOME/go/bin (go install github.com/minio/minio@latest puts it
// there). When it is missing, NewBucket fails the test if the environment
// variable CI is set (to anything but "false" or "0") and skips it
// otherwise. This package must never skip silently in CI, never leave a
// server running after the test binary exits (the server gets a
// parent-death signal as a last resort), and never touch a server it did
// not start.
package miniotest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"go/build"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/blobgw/blobgw/backends/s3"
)

// ErrNotInstalled is returned by StartServer when the minio binary cannot be
// found.
var ErrNotInstalled = errors.New("miniotest: minio binary not found in $MINIOTEST_BIN, on PATH, in $(go env GOPATH)/bin or in $HOME/go/bin")

const (
	dirPrefix = "blobgw-miniotest-"
	region    = "us-east-1"
	user      = "miniotest"
)

// Server is one running MinIO server started by this package.
type Server struct {
	dir      string // temporary root: data/, the log, owner.pid
	addr     string // host:port of the S3 API
	password string
	cmd      *exec.Cmd
	done     chan struct{} // closed when the minio process has exited

	client *awss3.Client // root credentials
	seq    atomic.Int64

	stopOnce sync.Once
	stopErr  error
}

// Binary returns the path of the minio binary, or an error wrapping
// ErrNotInstalled.
func Binary() (string, error) {
	if p := os.Getenv("MINIOTEST_BIN"); p != "" {
		if isExec(p) {
			return p, nil
		}
		return "", fmt.Errorf("%w (MINIOTEST_BIN=%q is not an executable file)", ErrNotInstalled, p)
	}
	if p, err := exec.LookPath("minio"); err == nil {
		return p, nil
	}
	var dirs []string
	if out, err := goEnvGOPATH(); err == nil {
		dirs = append(dirs, filepath.SplitList(out)...)
	}
	dirs = append(dirs, filepath.SplitList(os.Getenv("GOPATH"))...)
	dirs = append(dirs, build.Default.GOPATH)
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, "go"))
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if p := filepath.Join(d, "bin", "minio"); isExec(p) {
			return p, nil
		}
	}
	return "", ErrNotInstalled
}

// goEnvGOPATH asks the go command, which knows about `go env -w`.
func goEnvGOPATH() (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, goBin, "env", "GOPATH").Output()
	return strings.TrimSpace(string(out)), err
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// StartServer starts minio on free ports with its data in a new temporary
// directory and waits until it is ready. The caller must call Stop. It
// returns an error wrapping ErrNotInstalled when the binary is missing.
func StartServer() (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	sweepStale()
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, fmt.Errorf("miniotest: %w", err)
	}
	var pw [16]byte
	rand.Read(pw[:])
	s := &Server{dir: dir, password: hex.EncodeToString(pw[:])}
	ok := false
	defer func() {
		if !ok {
			s.Stop()
		}
	}()
	if err := os.WriteFile(filepath.Join(dir, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return nil, fmt.Errorf("miniotest: %w", err)
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		retry, err := s.start(bin)
		if err == nil {
			ok = true
			return s, nil
		}
		lastErr = err
		if !retry {
			break
		}
	}
	return nil, lastErr
}

// start runs minio on two free ports and waits until it is live. retry
// reports whether other ports may help (one was taken).
func (s *Server) start(bin string) (retry bool, err error) {
	apiPort, err := freePort()
	if err != nil {
		return false, err
	}
	consolePort, err := freePort()
	if err != nil {
		return false, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(apiPort))
	logPath := filepath.Join(s.dir, "minio.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return false, fmt.Errorf("miniotest: %w", err)
	}
	defer logf.Close() // the child has its own descriptor
	cmd := exec.Command(bin, "server", filepath.Join(s.dir, "data"),
		"--address", addr,
		"--console-address", net.JoinHostPort("127.0.0.1", strconv.Itoa(consolePort)),
		"--quiet")
	cmd.Dir = s.dir
	env := []string{
		"HOME=" + s.dir,
		"MINIO_ROOT_USER=" + user,
		"MINIO_ROOT_PASSWORD=" + s.password,
		"MINIO_BROWSER=off",
		"MINIO_UPDATE=off",
	}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "MINIO_") || strings.HasPrefix(kv, "HOME=") {
			continue
		}
		env = append(env, kv)
	}
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return false, fmt.Errorf("miniotest: start minio: %w", err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	s.cmd, s.done, s.addr = cmd, done, addr

	hc := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-done:
			log, _ := os.ReadFile(logPath)
			s.cmd, s.done = nil, nil
			taken := bytes.Contains(log, []byte("already in use")) || bytes.Contains(log, []byte("bind:"))
			return taken, fmt.Errorf("miniotest: minio exited during start-up (%v):\n%s", cmd.ProcessState, tail(log))
		default:
		}
		resp, err := hc.Get("http://" + addr + "/minio/health/live")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
			err = fmt.Errorf("health check: %s", resp.Status)
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logPath)
			return false, fmt.Errorf("miniotest: minio not ready after 60s: %v\n%s", err, tail(log))
		}
		time.Sleep(50 * time.Millisecond)
	}
	client := awss3.New(awss3.Options{
		BaseEndpoint: aws.String(s.Endpoint()),
		Region:       region,
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(user, s.password, ""),
	})
	// "live" answers before the object layer is up ("Server not
	// initialized yet"): wait until a real S3 call succeeds.
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := client.ListBuckets(ctx, &awss3.ListBucketsInput{})
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logPath)
			return false, fmt.Errorf("miniotest: minio object layer not ready after 60s: %v\n%s", err, tail(log))
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.client = client
	return false, nil
}

func tail(b []byte) []byte {
	if len(b) > 4000 {
		return b[len(b)-4000:]
	}
	return b
}

// freePort asks the kernel for a free port. Another process may take it
// before minio binds it; StartServer then retries with new ones.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("miniotest: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Endpoint returns the URL of the S3 API, http://127.0.0.1:port.
func (s *Server) Endpoint() string { return "http://" + s.addr }

// AccessKey returns the root user's access key.
func (s *Server) AccessKey() string { return user }

// SecretKey returns the root user's secret key.
func (s *Server) SecretKey() string { return s.password }

// Region returns the region the server expects in signatures.
func (s *Server) Region() string { return region }

// Client returns an S3 client with root credentials, independent of the
// code under test, for checking and arranging a bucket's state.
func (s *Server) Client() *awss3.Client { return s.client }

// Config returns an s3.Config for bucket on this server (path-style, root
// credentials, default part size and concurrency).
func (s *Server) Config(bucket string) s3.Config {
	return s3.Config{
		Endpoint:  s.Endpoint(),
		Region:    region,
		Bucket:    bucket,
		AccessKey: user,
		SecretKey: s.password,
		PathStyle: true,
	}
}

var unsafeChars = regexp.MustCompile(`[^a-z0-9-]+`)

// CreateBucket creates a new empty bucket and returns its name, derived from
// hint and made unique.
func (s *Server) CreateBucket(ctx context.Context, hint string) (string, error) {
	if s.client == nil {
		return "", errors.New("miniotest: server is not running")
	}
	name := fmt.Sprintf("t%d-%s", s.seq.Add(1), unsafeChars.ReplaceAllString(strings.ToLower(hint), "-"))
	if len(name) > 63 {
		name = name[:63]
	}
	name = strings.TrimRight(name, "-")
	if _, err := s.client.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		return "", fmt.Errorf("miniotest: create bucket %s: %w", name, err)
	}
	return name, nil
}

// RemoveBucket aborts the bucket's multipart uploads, deletes its objects
// and then the bucket.
func (s *Server) RemoveBucket(ctx context.Context, name string) error {
	if s.client == nil {
		return errors.New("miniotest: server is not running")
	}
	b := aws.String(name)
	uploads := awss3.NewListMultipartUploadsPaginator(s.client, &awss3.ListMultipartUploadsInput{Bucket: b})
	for uploads.HasMorePages() {
		page, err := uploads.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("miniotest: list multipart uploads of %s: %w", name, err)
		}
		for _, u := range page.Uploads {
			if _, err := s.client.AbortMultipartUpload(ctx, &awss3.AbortMultipartUploadInput{Bucket: b, Key: u.Key, UploadId: u.UploadId}); err != nil {
				return fmt.Errorf("miniotest: abort multipart upload of %s/%s: %w", name, aws.ToString(u.Key), err)
			}
		}
	}
	objects := awss3.NewListObjectsV2Paginator(s.client, &awss3.ListObjectsV2Input{Bucket: b})
	for objects.HasMorePages() {
		page, err := objects.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("miniotest: list %s: %w", name, err)
		}
		if len(page.Contents) == 0 {
			continue
		}
		ids := make([]types.ObjectIdentifier, len(page.Contents))
		for i, o := range page.Contents {
			ids[i] = types.ObjectIdentifier{Key: o.Key}
		}
		out, err := s.client.DeleteObjects(ctx, &awss3.DeleteObjectsInput{Bucket: b, Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
		if err != nil {
			return fmt.Errorf("miniotest: empty %s: %w", name, err)
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return fmt.Errorf("miniotest: empty %s: %d objects not deleted, %s: %s", name, len(out.Errors), aws.ToString(e.Key), aws.ToString(e.Message))
		}
	}
	if _, err := s.client.DeleteBucket(ctx, &awss3.DeleteBucketInput{Bucket: b}); err != nil {
		return fmt.Errorf("miniotest: delete bucket %s: %w", name, err)
	}
	return nil
}

// NewBucket creates a fresh bucket for t, removed with its objects when t
// ends, and returns a Config for it.
func (s *Server) NewBucket(t testing.TB) s3.Config {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name, err := s.CreateBucket(ctx, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := s.RemoveBucket(ctx, name); err != nil {
			t.Errorf("%v", err)
		}
	})
	return s.Config(name)
}

// Stop shuts the server down (SIGTERM, then SIGKILL) and removes its
// directory. It is safe to call more than once.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		if s.cmd != nil {
			s.stopErr = stopProcess(s.cmd.Process, s.done)
		}
		if err := os.RemoveAll(s.dir); err != nil && s.stopErr == nil {
			s.stopErr = fmt.Errorf("miniotest: remove %s: %w", s.dir, err)
		}
	})
	return s.stopErr
}

func stopProcess(p *os.Process, done <-chan struct{}) error {
	for _, step := range []struct {
		sig  os.Signal
		wait time.Duration
	}{{syscall.SIGTERM, 15 * time.Second}, {syscall.SIGKILL, 10 * time.Second}} {
		if err := p.Signal(step.sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return fmt.Errorf("miniotest: signal minio (pid %d): %w", p.Pid, err)
		}
		select {
		case <-done:
			return nil
		case <-time.After(step.wait):
		}
	}
	return fmt.Errorf("miniotest: minio (pid %d) did not exit", p.Pid)
}

// sweepStale removes directories of servers whose test binary died without
// stopping them. Their minio got SIGKILL with its parent, so only the
// directory is left; nothing is removed while its owner lives.
func sweepStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, "owner.pid"))
		if err != nil {
			continue // being created, or not ours
		}
		owner, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || owner <= 0 || alive(owner) {
			continue
		}
		os.RemoveAll(dir)
	}
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// The shared server of this test binary.
var shared struct {
	mu      sync.Mutex
	srv     *Server
	err     error
	started bool
	main    bool // Main is in charge of stopping it
}

// SharedServer returns the test binary's shared server, starting it at the
// first call. When the binary is missing it fails t if CI is set and skips
// t otherwise; any other start-up failure fails t.
func SharedServer(t testing.TB) *Server {
	t.Helper()
	shared.mu.Lock()
	if !shared.started {
		shared.started = true
		shared.srv, shared.err = StartServer()
		if shared.err == nil && !shared.main {
			t.Logf("miniotest: started a shared MinIO server without miniotest.Main; call miniotest.Main(m) from TestMain so it is stopped when the tests end")
		}
	}
	srv, err := shared.srv, shared.err
	shared.mu.Unlock()
	if err != nil {
		if errors.Is(err, ErrNotInstalled) {
			if inCI() {
				t.Fatalf("%v (CI is set: MinIO tests must run; go install github.com/minio/minio@latest or set MINIOTEST_BIN)", err)
			}
			t.Skipf("%v; skipping (go install github.com/minio/minio@latest or set MINIOTEST_BIN; with CI=true this fails)", err)
		}
		t.Fatalf("%v", err)
	}
	return srv
}

// NewBucket returns a Config for a fresh, empty bucket on the shared server,
// removed with its objects when t ends.
func NewBucket(t testing.TB) s3.Config {
	t.Helper()
	return SharedServer(t).NewBucket(t)
}

// Managed tells miniotest that the caller's TestMain stops the shared
// server with StopShared (for packages that also run other harnesses and
// so cannot use Main).
func Managed() {
	shared.mu.Lock()
	shared.main = true
	shared.mu.Unlock()
}

// Main runs the tests and then stops the shared server if one was started.
// Call it from TestMain:
//
//	func TestMain(m *testing.M) { miniotest.Main(m) }
func Main(m *testing.M) {
	Managed()
	code := m.Run()
	if err := StopShared(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// StopShared stops the shared server if it was started. Main calls it; a
// TestMain that needs more control may call it itself after m.Run.
func StopShared() error {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.srv == nil {
		return nil
	}
	return shared.srv.Stop()
}

func inCI() bool {
	v := strings.TrimSpace(strings.ToLower(os.Getenv("CI")))
	return v != "" && v != "false" && v != "0"
}
