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
	"github.com/blobgw/blobgw/internal/testproc"
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
	proc     *testproc.Proc // nil until minio runs

	client *awss3.Client // root credentials
	seq    atomic.Int64

	stopOnce sync.Once
	stopErr  error
}

// Binary returns the path of the minio binary, or an error wrapping
// ErrNotInstalled.
func Binary() (string, error) {
	if p := os.Getenv("MINIOTEST_BIN"); p != "" {
		if testproc.IsExec(p) {
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
		if p := filepath.Join(d, "bin", "minio"); testproc.IsExec(p) {
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

// StartServer starts minio on free ports with its data in a new temporary
// directory and waits until it is ready. The caller must call Stop. It
// returns an error wrapping ErrNotInstalled when the binary is missing.
func StartServer() (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	sweepStale()
	dir, err := testproc.MkdirOwned("", dirPrefix)
	if err != nil {
		return nil, fmt.Errorf("miniotest: %w", err)
	}
	var pw [16]byte
	rand.Read(pw[:])
	s := &Server{dir: dir, password: hex.EncodeToString(pw[:])}
	if err := testproc.Attempts(5, func() (bool, error) { return s.start(bin) }); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// start runs minio on two free ports and waits until it is live. retry
// reports whether other ports may help (one was taken).
func (s *Server) start(bin string) (retry bool, err error) {
	apiPort, err := testproc.FreePort()
	if err != nil {
		return false, fmt.Errorf("miniotest: %w", err)
	}
	consolePort, err := testproc.FreePort()
	if err != nil {
		return false, fmt.Errorf("miniotest: %w", err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(apiPort))
	cmd := exec.Command(bin, "server", filepath.Join(s.dir, "data"),
		"--address", addr,
		"--console-address", net.JoinHostPort("127.0.0.1", strconv.Itoa(consolePort)),
		"--quiet")
	cmd.Dir = s.dir
	cmd.Env = minioEnv(s.dir, s.password)
	proc, err := testproc.Start(cmd, filepath.Join(s.dir, "minio.log"), syscall.SIGKILL)
	if err != nil {
		return false, fmt.Errorf("miniotest: start minio: %w", err)
	}
	s.proc, s.addr = proc, addr

	deadline := time.Now().Add(testproc.ReadyTimeout)
	err = proc.WaitReady(deadline, healthy("http://"+addr+"/minio/health/live"))
	if err != nil {
		exited, retry, err := testproc.StartErr(err, "miniotest", "minio", proc, "already in use", "bind:")
		if exited {
			s.proc = nil
		}
		return retry, err
	}
	client := newClient(s.Endpoint(), s.password)
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
			return false, fmt.Errorf("miniotest: minio object layer not ready after 60s: %v\n%s", err, testproc.Tail(proc.Log()))
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.client = client
	return false, nil
}

// minioEnv is the environment of a minio process with its files in dir:
// the root user's credentials, no browser, no update check, and none of
// the caller's MINIO_ settings; extra adds more.
func minioEnv(dir, password string, extra ...string) []string {
	env := append([]string{
		"HOME=" + dir,
		"MINIO_ROOT_USER=" + user,
		"MINIO_ROOT_PASSWORD=" + password,
		"MINIO_BROWSER=off",
		"MINIO_UPDATE=off",
	}, extra...)
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "MINIO_") || strings.HasPrefix(kv, "_MINIO_") || strings.HasPrefix(kv, "HOME=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// healthy is a WaitReady check: a GET of a MinIO health URL answers 200.
func healthy(url string) func() error {
	hc := &http.Client{Timeout: 2 * time.Second}
	return func() error {
		resp, err := hc.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return nil
	}
}

// newClient is a path-style S3 client for the root user at endpoint.
func newClient(endpoint, password string) *awss3.Client {
	return awss3.New(awss3.Options{
		BaseEndpoint: aws.String(endpoint),
		Region:       region,
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(user, password, ""),
	})
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
		// The name is this server's own (seq), so BucketAlreadyOwnedByYou
		// is the SDK's retry of a CreateBucket that did succeed: a
		// distributed cluster still settling its write quorum can answer
		// the first try with a 503 after creating the bucket.
		var owned *types.BucketAlreadyOwnedByYou
		if !errors.As(err, &owned) {
			return "", fmt.Errorf("miniotest: create bucket %s: %w", name, err)
		}
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
	return s.Config(testproc.Scratch(t, func(ctx context.Context) (string, error) { return s.CreateBucket(ctx, t.Name()) },
		s.RemoveBucket, 2*time.Minute))
}

// Stop shuts the server down (SIGTERM, then SIGKILL) and removes its
// directory. It is safe to call more than once.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		s.stopErr = testproc.StopAndRemove("miniotest", "minio", s.proc, s.dir,
			testproc.Step{Sig: syscall.SIGTERM, Wait: 15 * time.Second}, testproc.Step{Sig: syscall.SIGKILL, Wait: 10 * time.Second})
	})
	return s.stopErr
}

// sweepStale removes directories of servers whose test binary died without
// stopping them. Their minio got SIGKILL with its parent, so only the
// directory is left; nothing is removed while its owner lives.
func sweepStale() {
	for _, dir := range testproc.OrphanedDirs(dirPrefix, os.TempDir()) {
		os.RemoveAll(dir)
	}
}

// The shared server of this test binary.
var shared testproc.Shared[*Server]

// SharedServer returns the test binary's shared server, starting it at the
// first call. When the binary is missing it fails t if CI is set and skips
// t otherwise; any other start-up failure fails t.
func SharedServer(t testing.TB) *Server {
	t.Helper()
	return shared.Server(t, testproc.Harness{Pkg: "miniotest", What: "MinIO", NotInstalled: ErrNotInstalled,
		Install: "go install github.com/minio/minio@latest or set MINIOTEST_BIN"}, StartServer)
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
func Managed() { shared.Managed() }

// Main runs the tests and then stops the shared server if one was started.
// Call it from TestMain:
//
//	func TestMain(m *testing.M) { miniotest.Main(m) }
func Main(m *testing.M) {
	Managed()
	testproc.Main(m, StopShared)
}

// StopShared stops the shared server if it was started. Main calls it; a
// TestMain that needs more control may call it itself after m.Run.
func StopShared() error { return shared.Stop((*Server).Stop) }
