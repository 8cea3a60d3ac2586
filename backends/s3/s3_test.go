package s3_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/blobgw/blobgw/backends"
	"github.com/blobgw/blobgw/backends/backendtest"
	"github.com/blobgw/blobgw/backends/s3"
	"github.com/blobgw/blobgw/backends/s3/miniotest"
)

func TestMain(m *testing.M) { miniotest.Main(m) }

func newStore(t testing.TB, cfg s3.Config) *s3.Store {
	t.Helper()
	s, err := s3.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// smallParts is a fresh bucket with the smallest parts, so that a few MiB
// take the multipart path, and two parts in memory, so that the suite's
// 64 MiB object stays within its 16 MiB allocation budget.
func smallParts(t testing.TB) s3.Config {
	cfg := miniotest.NewBucket(t)
	cfg.PartSize = s3.MinPartSize
	cfg.Concurrency = 2
	return cfg
}

func TestConformance(t *testing.T) {
	backendtest.Run(t,
		func(t *testing.T) backends.Backend { return newStore(t, smallParts(t)) },
		backendtest.AfterFailedPut(func(t *testing.T, b backends.Backend) {
			checkNoUploads(t, b.(*s3.Store))
		}),
		backendtest.AdoptedObject(putForeignObject))
}

// putForeignObject writes data as an object of the bucket that the Store
// did not write (what blobgw import s3 adopts) and returns its adopted key.
// The name is no valid key, so List never sees it even without a prefix.
func putForeignObject(t *testing.T, b backends.Backend, data []byte) string {
	t.Helper()
	s := b.(*s3.Store)
	name := fmt.Sprintf("adopt me/object %d.bin", foreignObjects.Add(1))
	if _, err := s.Client().PutObject(context.Background(), &awss3.PutObjectInput{Bucket: aws.String(s.Bucket()), Key: aws.String(name), Body: bytes.NewReader(data)}); err != nil {
		t.Fatal(err)
	}
	return s3.AdoptedKey(name)
}

var foreignObjects atomic.Int64

// checkNoUploads asserts that no multipart upload is pending in the bucket.
func checkNoUploads(t *testing.T, s *s3.Store) {
	t.Helper()
	out, err := s.Client().ListMultipartUploads(context.Background(), &awss3.ListMultipartUploadsInput{Bucket: aws.String(s.Bucket())})
	if err != nil {
		t.Fatalf("ListMultipartUploads: %v", err)
	}
	if len(out.Uploads) > 0 {
		var keys []string
		for _, u := range out.Uploads {
			keys = append(keys, aws.ToString(u.Key))
		}
		t.Fatalf("%d multipart uploads left pending: %q", len(out.Uploads), keys)
	}
}

func checkAbsent(t *testing.T, s *s3.Store, key string) {
	t.Helper()
	if _, err := s.Stat(context.Background(), key); !errors.Is(err, backends.ErrNotFound) {
		t.Fatalf("Stat(%q) = %v, want ErrNotFound", key, err)
	}
	if got := listKeys(t, s, ""); slices.Contains(got, key) {
		t.Fatalf("List shows %q", key)
	}
}

func listKeys(t testing.TB, s backends.Backend, prefix string) []string {
	t.Helper()
	var keys []string
	if err := s.List(context.Background(), prefix, func(info backends.ObjectInfo) error {
		keys = append(keys, info.Key)
		return nil
	}); err != nil {
		t.Fatalf("List(%q) = %v", prefix, err)
	}
	slices.Sort(keys)
	return keys
}

func readAll(t testing.TB, s backends.Backend, key string) []byte {
	t.Helper()
	rc, err := s.Open(context.Background(), key, 0, -1)
	if err != nil {
		t.Fatalf("Open(%q) = %v", key, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading %q: %v", key, err)
	}
	return b
}

// failingReader yields n bytes of the stream seed and then fails.
type failingReader struct {
	r   io.Reader
	n   int64
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, f.err
	}
	if int64(len(p)) > f.n {
		p = p[:f.n]
	}
	n, err := f.r.Read(p)
	f.n -= int64(n)
	return n, err
}

// A multipart upload that fails after some parts were stored is aborted:
// no object, no pending upload.
func TestMultipartAbortedOnFailure(t *testing.T) {
	s := newStore(t, smallParts(t))
	const size = 3*s3.MinPartSize + 1000
	errBoom := errors.New("boom")
	for _, known := range []bool{true, false} {
		t.Run(fmt.Sprintf("failing reader, known size %t", known), func(t *testing.T) {
			key := fmt.Sprintf("abort/reader-%t", known)
			sz := int64(size)
			if !known {
				sz = -1
			}
			// Two full parts are read (and uploaded) before the failure.
			r := &failingReader{r: backendtest.NewReader(size, 1), n: 2*s3.MinPartSize + 100, err: errBoom}
			if err := s.Put(context.Background(), key, r, sz); !errors.Is(err, errBoom) {
				t.Fatalf("Put = %v, want %v", err, errBoom)
			}
			checkAbsent(t, s, key)
			checkNoUploads(t, s)
		})
	}
	t.Run("short body", func(t *testing.T) {
		err := s.Put(context.Background(), "abort/short", backendtest.NewReader(size-1, 2), size)
		if err == nil {
			t.Fatal("Put of a short body succeeded")
		}
		checkAbsent(t, s, "abort/short")
		checkNoUploads(t, s)
	})
	t.Run("long body", func(t *testing.T) {
		err := s.Put(context.Background(), "abort/long", backendtest.NewReader(size+1, 3), size)
		if err == nil {
			t.Fatal("Put of a long body succeeded")
		}
		checkAbsent(t, s, "abort/long")
		checkNoUploads(t, s)
	})
	t.Run("context cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		r := &cancelAfter{r: backendtest.NewReader(size, 4), n: 2*s3.MinPartSize + 100, cancel: cancel}
		if err := s.Put(ctx, "abort/cancel", r, -1); !errors.Is(err, context.Canceled) {
			t.Fatalf("Put = %v, want context.Canceled", err)
		}
		checkAbsent(t, s, "abort/cancel")
		checkNoUploads(t, s)
	})
	// The failed keys are free again.
	want := backendtest.Data(size, 5)
	if err := s.Put(context.Background(), "abort/reader-true", bytes.NewReader(want), size); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, s, "abort/reader-true"); !bytes.Equal(got, want) {
		t.Fatal("read back different bytes")
	}
}

// cancelAfter cancels its context once n bytes were read, and goes on.
type cancelAfter struct {
	r      io.Reader
	n      int64
	cancel context.CancelFunc
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if c.n -= int64(n); c.n <= 0 {
		c.cancel()
	}
	return n, err
}

// Multipart Puts never overwrite either, and of concurrent ones exactly one
// wins.
func TestMultipartExists(t *testing.T) {
	s := newStore(t, smallParts(t))
	const size = 2*s3.MinPartSize + 7
	ctx := context.Background()
	original := backendtest.Data(size, 1)
	if err := s.Put(ctx, "k", bytes.NewReader(original), size); err != nil {
		t.Fatal(err)
	}
	for _, sz := range []int64{size, -1} {
		if err := s.Put(ctx, "k", backendtest.NewReader(size, 2), sz); !errors.Is(err, backends.ErrExists) {
			t.Fatalf("second Put (size %d) = %v, want ErrExists", sz, err)
		}
	}
	checkNoUploads(t, s)
	if got := readAll(t, s, "k"); !bytes.Equal(got, original) {
		t.Fatal("existing object changed")
	}

	const writers = 4
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sz := int64(size)
			if w%2 == 1 {
				sz = -1
			}
			errs[w] = s.Put(ctx, "race", backendtest.NewReader(size, uint64(10+w)), sz)
		}()
	}
	wg.Wait()
	winner := -1
	for w, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("writers %d and %d both succeeded", winner, w)
		case err == nil:
			winner = w
		case !errors.Is(err, backends.ErrExists):
			t.Fatalf("writer %d: %v, want ErrExists", w, err)
		}
	}
	if winner < 0 {
		t.Fatal("no writer succeeded")
	}
	if got := readAll(t, s, "race"); !bytes.Equal(got, backendtest.Data(size, uint64(10+winner))) {
		t.Fatal("race: object is not the winner's")
	}
	checkNoUploads(t, s)
}

func TestDeleteMany(t *testing.T) {
	s := newStore(t, miniotest.NewBucket(t))
	ctx := context.Background()
	const n = 1234 // more than one DeleteObjects batch
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("dm/%04d", i)
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 16)
	for _, k := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := s.Put(ctx, k, bytes.NewReader([]byte(k)), int64(len(k))); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// An invalid key fails the call before anything is deleted.
	if err := s.DeleteMany(ctx, []string{keys[0], "../bad"}); err == nil {
		t.Fatal("DeleteMany with an invalid key succeeded")
	}
	if got := listKeys(t, s, "dm/"); len(got) != n {
		t.Fatalf("after a rejected DeleteMany %d keys remain, want %d", len(got), n)
	}
	if err := s.DeleteMany(ctx, nil); err != nil {
		t.Fatalf("DeleteMany(nil) = %v", err)
	}

	// Delete all but the last 34, plus keys that never existed.
	del := append(slices.Clone(keys[:n-34]), "dm/missing", "never/existed")
	if err := s.DeleteMany(ctx, del); err != nil {
		t.Fatalf("DeleteMany = %v", err)
	}
	if got, want := listKeys(t, s, "dm/"), keys[n-34:]; !slices.Equal(got, want) {
		t.Fatalf("after DeleteMany List = %d keys, want %q", len(got), want)
	}
	checkAbsent(t, s, keys[0])
	// Deleting again is fine.
	if err := s.DeleteMany(ctx, keys); err != nil {
		t.Fatalf("DeleteMany of deleted keys = %v", err)
	}
	if got := listKeys(t, s, ""); len(got) != 0 {
		t.Fatalf("after deleting everything List = %q", got)
	}
}

// A Store whose endpoint refuses connections fails every call with
// ErrUnavailable, quickly.
func TestUnavailable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	s := newStore(t, s3.Config{
		Endpoint:  "http://" + addr,
		Region:    "us-east-1",
		Bucket:    "dead",
		AccessKey: "k",
		SecretKey: "secret",
		PathStyle: true,
		PartSize:  s3.MinPartSize,
		// MaxRetries: the default, 3 retries with jittered exponential
		// backoff from 50 ms (1 s for throttling), capped at 5 s.
	})
	ctx := context.Background()
	calls := []struct {
		name string
		fn   func() error
	}{
		{"Put streamed", func() error { return s.Put(ctx, "k", bytes.NewReader([]byte("hello")), 5) }},
		{"Put buffered", func() error { return s.Put(ctx, "k", bytes.NewReader([]byte("hello")), -1) }},
		{"Put multipart", func() error { return s.Put(ctx, "k", backendtest.NewReader(s3.MinPartSize+1, 1), s3.MinPartSize+1) }},
		{"Open", func() error {
			rc, err := s.Open(ctx, "k", 0, -1)
			if err == nil {
				rc.Close()
			}
			return err
		}},
		{"Open ranged", func() error {
			rc, err := s.Open(ctx, "k", 10, 0)
			if err == nil {
				rc.Close()
			}
			return err
		}},
		{"Stat", func() error { _, err := s.Stat(ctx, "k"); return err }},
		{"Delete", func() error { return s.Delete(ctx, "k") }},
		{"DeleteMany", func() error { return s.DeleteMany(ctx, []string{"k", "l"}) }},
		{"List", func() error { return s.List(ctx, "", func(backends.ObjectInfo) error { return nil }) }},
		{"EnsureBucket", func() error { return s.EnsureBucket(ctx) }},
	}
	for _, c := range calls {
		start := time.Now()
		err := c.fn()
		d := time.Since(start)
		t.Logf("%s: %v after %v", c.name, err, d.Round(time.Millisecond))
		if !errors.Is(err, backends.ErrUnavailable) {
			t.Errorf("%s = %v, want ErrUnavailable", c.name, err)
		}
		if d > 8*time.Second {
			t.Errorf("%s took %v", c.name, d)
		}
	}
}

// Stores with different prefixes share a bucket without seeing each
// other's objects.
func TestPrefixIsolation(t *testing.T) {
	cfg := miniotest.NewBucket(t)
	ctx := context.Background()
	stores := map[string]*s3.Store{}
	for _, p := range []string{"a/", "b/", ""} {
		c := cfg
		c.Prefix = p
		stores[p] = newStore(t, c)
	}
	a, b, root := stores["a/"], stores["b/"], stores[""]
	for _, k := range []string{"k", "x/y"} {
		for p, s := range map[string]*s3.Store{"a/": a, "b/": b} {
			body := []byte(p + k)
			if err := s.Put(ctx, k, bytes.NewReader(body), int64(len(body))); err != nil {
				t.Fatalf("Put(%q) in %q = %v", k, p, err)
			}
		}
	}
	for p, s := range map[string]*s3.Store{"a/": a, "b/": b} {
		if got := listKeys(t, s, ""); !slices.Equal(got, []string{"k", "x/y"}) {
			t.Fatalf("List in %q = %q", p, got)
		}
		if got := listKeys(t, s, "x/"); !slices.Equal(got, []string{"x/y"}) {
			t.Fatalf("List(x/) in %q = %q", p, got)
		}
		if got := string(readAll(t, s, "k")); got != p+"k" {
			t.Fatalf("Open(k) in %q = %q", p, got)
		}
		if info, err := s.Stat(ctx, "x/y"); err != nil || info.Key != "x/y" || info.Size != int64(len(p+"x/y")) {
			t.Fatalf("Stat(x/y) in %q = %+v, %v", p, info, err)
		}
	}
	if got := listKeys(t, root, ""); !slices.Equal(got, []string{"a/k", "a/x/y", "b/k", "b/x/y"}) {
		t.Fatalf("List without prefix = %q", got)
	}
	if err := a.Delete(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteMany(ctx, []string{"x/y"}); err != nil {
		t.Fatal(err)
	}
	if got := listKeys(t, a, ""); !slices.Equal(got, []string{"x/y"}) {
		t.Fatalf("after deletes List in a/ = %q", got)
	}
	if got := listKeys(t, b, ""); !slices.Equal(got, []string{"k"}) {
		t.Fatalf("after deletes List in b/ = %q", got)
	}
}

func TestEnsureBucket(t *testing.T) {
	srv := miniotest.SharedServer(t)
	cfg := srv.Config("ensure-bucket-test")
	s := newStore(t, cfg)
	ctx := context.Background()
	for i := range 2 { // creates, then finds it
		if err := s.EnsureBucket(ctx); err != nil {
			t.Fatalf("EnsureBucket #%d = %v", i+1, err)
		}
	}
	t.Cleanup(func() {
		if err := srv.RemoveBucket(context.Background(), cfg.Bucket); err != nil {
			t.Error(err)
		}
	})
	if err := s.Put(ctx, "k", bytes.NewReader([]byte("v")), 1); err != nil {
		t.Fatal(err)
	}
}

func TestNewValidates(t *testing.T) {
	good := s3.Config{Bucket: "b", Region: "us-east-1", Endpoint: "http://127.0.0.1:1", AccessKey: "a", SecretKey: "s"}
	if _, err := s3.New(context.Background(), good); err != nil {
		t.Fatalf("New(%+v) = %v", good, err)
	}
	for name, mod := range map[string]func(*s3.Config){
		"no bucket":          func(c *s3.Config) { c.Bucket = "" },
		"small parts":        func(c *s3.Config) { c.PartSize = 1 << 20 },
		"huge parts":         func(c *s3.Config) { c.PartSize = 6 << 30 },
		"negative conc":      func(c *s3.Config) { c.Concurrency = -1 },
		"secret without key": func(c *s3.Config) { c.AccessKey = "" },
		"bad endpoint":       func(c *s3.Config) { c.Endpoint = "127.0.0.1:9000" },
	} {
		c := good
		mod(&c)
		if _, err := s3.New(context.Background(), c); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
}

// fakeS3 answers every request with status and an S3 error code, after
// reading the request body, and counts the requests.
func fakeS3(t *testing.T, status int, code string) (*s3.Store, *atomic.Int64) {
	t.Helper()
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(status)
		if r.Method != http.MethodHead {
			fmt.Fprintf(w, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code><Message>fake</Message><RequestId>1</RequestId></Error>", code)
		}
	}))
	t.Cleanup(srv.Close)
	s := newStore(t, s3.Config{
		Endpoint: srv.URL, Region: "us-east-1", Bucket: "fake", AccessKey: "k", SecretKey: "secret",
		PathStyle: true, PartSize: s3.MinPartSize, MaxRetries: 1,
	})
	return s, &requests
}

// Server-side failures (5xx, throttling) are retried and then reported as
// ErrUnavailable; a refused request (403) is not.
func TestServerErrors(t *testing.T) {
	ctx := context.Background()
	calls := []struct {
		name string
		fn   func(s *s3.Store) error
	}{
		{"Put streamed", func(s *s3.Store) error { return s.Put(ctx, "k", bytes.NewReader([]byte("hello")), 5) }},
		{"Put buffered", func(s *s3.Store) error { return s.Put(ctx, "k", bytes.NewReader([]byte("hello")), -1) }},
		{"Put multipart", func(s *s3.Store) error {
			return s.Put(ctx, "k", backendtest.NewReader(s3.MinPartSize+1, 1), s3.MinPartSize+1)
		}},
		{"Open", func(s *s3.Store) error {
			rc, err := s.Open(ctx, "k", 5, 10)
			if err == nil {
				rc.Close()
			}
			return err
		}},
		{"Stat", func(s *s3.Store) error { _, err := s.Stat(ctx, "k"); return err }},
		{"Delete", func(s *s3.Store) error { return s.Delete(ctx, "k") }},
		{"DeleteMany", func(s *s3.Store) error { return s.DeleteMany(ctx, []string{"k"}) }},
		{"List", func(s *s3.Store) error { return s.List(ctx, "", func(backends.ObjectInfo) error { return nil }) }},
	}
	for _, c := range []struct {
		status      int
		code        string
		unavailable bool
	}{
		{http.StatusServiceUnavailable, "SlowDown", true},
		{http.StatusInternalServerError, "InternalError", true},
		{http.StatusForbidden, "AccessDenied", false},
	} {
		for _, call := range calls {
			t.Run(fmt.Sprintf("%d %s", c.status, call.name), func(t *testing.T) {
				s, requests := fakeS3(t, c.status, c.code)
				err := call.fn(s)
				t.Logf("%v (%d requests)", err, requests.Load())
				if err == nil {
					t.Fatal("succeeded")
				}
				if got := errors.Is(err, backends.ErrUnavailable); got != c.unavailable {
					t.Fatalf("errors.Is(%v, ErrUnavailable) = %t, want %t", err, got, c.unavailable)
				}
				if errors.Is(err, backends.ErrNotFound) || errors.Is(err, backends.ErrExists) {
					t.Fatalf("%v is ErrNotFound or ErrExists", err)
				}
			})
		}
	}
}

// A body cut short by the server fails the read with ErrUnavailable rather
// than ending early.
func TestTruncatedRead(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		w.Header().Set("Last-Modified", time.Now().UTC().Format(http.TimeFormat))
		w.WriteHeader(http.StatusOK)
		w.Write(make([]byte, 50))
		// The handler returns: the server closes the connection.
	}))
	defer srv.Close()
	s := newStore(t, s3.Config{Endpoint: srv.URL, Region: "us-east-1", Bucket: "fake", AccessKey: "k", SecretKey: "secret", PathStyle: true})
	rc, err := s.Open(context.Background(), "k", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	n, err := io.Copy(io.Discard, rc)
	if n != 50 || !errors.Is(err, backends.ErrUnavailable) || !strings.Contains(err.Error(), io.ErrUnexpectedEOF.Error()) {
		t.Fatalf("read %d bytes, %v; want 50 and ErrUnavailable for an unexpected EOF", n, err)
	}
}

// A server that accepts connections but never answers does not hold a call
// past its context.
func TestHungServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { // read whatever comes, say nothing
				io.Copy(io.Discard, c)
				c.Close()
			}()
		}
	}()
	s := newStore(t, s3.Config{Endpoint: "http://" + l.Addr().String(), Region: "us-east-1", Bucket: "hung", AccessKey: "k", SecretKey: "secret", PathStyle: true})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = s.Stat(ctx, "k")
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 3*time.Second {
		t.Fatalf("Stat = %v after %v, want DeadlineExceeded after 300ms", err, time.Since(start))
	}
	err = s.Put(ctx, "k", backendtest.NewReader(1000, 1), 1000)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Put = %v, want DeadlineExceeded", err)
	}
}

// A bucket that is gone (NoSuchBucket: removed behind the gateway, or a
// distributed MinIO node that has not loaded it yet) is an outage, never a
// missing object: Stat's HeadObject gets a 404 without a body, which alone
// cannot tell the two apart, and /readyz (a Stat of an absent key) must not
// call a Store that serves nothing ready.
func TestStatMissingBucket(t *testing.T) {
	srv := miniotest.SharedServer(t)
	cfg := srv.Config(fmt.Sprintf("gone-%d", time.Now().UnixNano()))
	cfg.MaxRetries = -1
	s := newStore(t, cfg)
	ctx := context.Background()
	if _, err := s.Stat(ctx, "k"); !errors.Is(err, backends.ErrUnavailable) || errors.Is(err, backends.ErrNotFound) {
		t.Errorf("Stat in a missing bucket = %v, want ErrUnavailable", err)
	}
	if rc, err := s.Open(ctx, "k", 0, 0); !errors.Is(err, backends.ErrUnavailable) || errors.Is(err, backends.ErrNotFound) {
		if err == nil {
			rc.Close()
		}
		t.Errorf("Open(k, 0, 0) in a missing bucket = %v, want ErrUnavailable", err)
	}
	// In a bucket that exists, an absent key is still ErrNotFound.
	s = newStore(t, miniotest.NewBucket(t))
	if _, err := s.Stat(ctx, "k"); !errors.Is(err, backends.ErrNotFound) {
		t.Errorf("Stat of an absent key = %v, want ErrNotFound", err)
	}
	// And so it is when HeadBucket is refused (403: credentials without
	// s3:ListBucket), which says nothing of the bucket being gone.
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fake" || r.URL.Path == "/fake/" {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		w.WriteHeader(http.StatusNotFound)
	}))
	defer fake.Close()
	s = newStore(t, s3.Config{Endpoint: fake.URL, Region: "us-east-1", Bucket: "fake", AccessKey: "k", SecretKey: "secret", PathStyle: true, MaxRetries: -1})
	if _, err := s.Stat(ctx, "k"); !errors.Is(err, backends.ErrNotFound) {
		t.Errorf("Stat of an absent key, HeadBucket refused = %v, want ErrNotFound", err)
	}
}

// A client gone while CreateMultipartUpload is answered (the server made
// the upload, the caller's context ended before the response arrived)
// leaves no multipart upload behind: nothing else would ever learn its id
// to abort it.
func TestMultipartCreateCancelled(t *testing.T) {
	cfg := smallParts(t)
	target, err := url.Parse(cfg.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	proxy := httputil.NewSingleHostReverseProxy(target) // keeps the signed Host
	proxy.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.Method == http.MethodPost && resp.Request.URL.Query().Has("uploads") {
			cancel() // the upload exists; its id has not reached the Store
		}
		return nil
	}
	ps := httptest.NewServer(proxy)
	defer ps.Close()
	cfg.Endpoint = ps.URL
	s := newStore(t, cfg)
	const size = s3.MinPartSize + 1000
	if err := s.Put(ctx, "cancel/create", backendtest.NewReader(size, 1), size); !errors.Is(err, context.Canceled) {
		t.Fatalf("Put = %v, want context.Canceled", err)
	}
	checkAbsent(t, s, "cancel/create")
	checkNoUploads(t, s)
}

// A CompleteMultipartUpload whose response is lost (the server completed
// the upload; the client saw a 500 and the SDK retried) is the Put's
// success: the retry, answered NoSuchUpload or PreconditionFailed
// (If-None-Match: * against the object the first attempt made), must not
// fail the Put with ErrExists, which the gateway answers 500. When the
// object's ETag does not tell that it is ours (here HeadObject's is
// altered), the Put fails with ErrUnavailable (503, retried by the client).
func TestMultipartCompleteResponseLost(t *testing.T) {
	for _, unknownETag := range []bool{false, true} {
		t.Run(fmt.Sprintf("unknown ETag %t", unknownETag), func(t *testing.T) {
			testCompleteResponseLost(t, unknownETag)
		})
	}
}

func testCompleteResponseLost(t *testing.T, unknownETag bool) {
	s, lost := loseFirstAnswer(t, unknownETag, func(r *http.Request) bool {
		return r.Method == http.MethodPost && r.URL.Query().Has("uploadId")
	})
	const size = 2*s3.MinPartSize + 1000
	err := s.Put(context.Background(), "lost/complete", backendtest.NewReader(size, 7), size)
	if lost.Load() != 1 {
		t.Fatalf("%d completions answered, want 1 (the test did not lose one)", lost.Load())
	}
	checkNoUploads(t, s)
	checkLostAnswerPut(t, s, "lost/complete", err, unknownETag, backendtest.Data(size, 7))
}

// checkLostAnswerPut checks err, the outcome of a Put whose answer was lost:
// ErrUnavailable when the object's ETag was made unknown, else success and
// want stored.
func checkLostAnswerPut(t *testing.T, s *s3.Store, key string, err error, unknownETag bool, want []byte) {
	t.Helper()
	if unknownETag {
		if !errors.Is(err, backends.ErrUnavailable) || errors.Is(err, backends.ErrExists) {
			t.Fatalf("Put = %v, want ErrUnavailable", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("Put = %v, want success (the object was stored)", err)
	}
	if got := readAll(t, s, key); !bytes.Equal(got, want) {
		t.Fatal("read back different bytes")
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// A part the store refuses (503 SlowDown, after the retries) fails the Put
// with ErrUnavailable (503 ServerBusy to the client) as soon as the parts
// in flight are done: the rest of the body is not read (a client would
// otherwise send gigabytes to a Put already lost), and the upload is
// aborted.
func TestMultipartPartRefused(t *testing.T) {
	cfg := smallParts(t)
	cfg.MaxRetries = -1
	target, err := url.Parse(cfg.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	// The other parts are forwarded only once part 1's refusal is on its
	// way: otherwise, on a loaded machine, they could all be stored before
	// the refusal arrived, freeing their buffers for the rest of the body
	// (the Put reads on while no part has failed, rightly).
	var refused atomic.Pointer[chan struct{}]
	proxy := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		part := r.URL.Query().Get("partNumber")
		if r.Method == http.MethodPut && part == "1" {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)
			w.(http.Flusher).Flush()
			close(*refused.Load())
			return
		}
		if r.Method == http.MethodPut && part != "" {
			select {
			case <-*refused.Load():
			case <-r.Context().Done():
				return
			}
		}
		rp.ServeHTTP(w, r)
	})
	ps := httptest.NewServer(proxy)
	defer ps.Close()
	cfg.Endpoint = ps.URL
	s := newStore(t, cfg)
	const parts = 10
	for _, known := range []bool{true, false} {
		t.Run(fmt.Sprintf("known size %t", known), func(t *testing.T) {
			gate := make(chan struct{})
			refused.Store(&gate)
			size := int64(parts * s3.MinPartSize)
			body := &countingReader{r: backendtest.NewReader(size, 3)}
			sz := size
			if !known {
				sz = -1
			}
			err := s.Put(context.Background(), "refused/part", body, sz)
			if !errors.Is(err, backends.ErrUnavailable) {
				t.Fatalf("Put = %v, want ErrUnavailable", err)
			}
			// Part 1, the parts that were in flight, and one more read
			// while the failure was being learnt.
			if got, limit := body.n.Load(), int64(5*s3.MinPartSize); got > limit {
				t.Errorf("Put read %d bytes of the body (%d parts) after its first part failed, want at most %d", got, got/s3.MinPartSize, limit)
			}
			checkAbsent(t, s, "refused/part")
			checkNoUploads(t, s)
		})
	}
}

// loseFirstAnswer returns a Store (on a fresh bucket) behind a proxy that
// replaces the first 200 answer to a request lose matches with a 500
// InternalError, as a cut connection or a proxy would: the server did the
// work, the Store does not know. The counter says how many were lost. With
// unknownETag, HeadObject answers an ETag that is no object's.
func loseFirstAnswer(t *testing.T, unknownETag bool, lose func(*http.Request) bool) (*s3.Store, *atomic.Int64) {
	cfg := smallParts(t)
	target, err := url.Parse(cfg.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	var lost atomic.Int64
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(resp *http.Response) error {
		if unknownETag && resp.Request.Method == http.MethodHead {
			resp.Header.Set("ETag", `"not-an-md5"`)
		}
		if resp.StatusCode == http.StatusOK && lose(resp.Request) && lost.CompareAndSwap(0, 1) {
			resp.Body.Close()
			resp.StatusCode = http.StatusInternalServerError
			resp.Status = "500 Internal Server Error"
			body := `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>lost</Message></Error>`
			resp.Body = io.NopCloser(strings.NewReader(body))
			resp.ContentLength = int64(len(body))
			resp.Header.Set("Content-Length", fmt.Sprint(len(body)))
		}
		return nil
	}
	ps := httptest.NewServer(proxy)
	t.Cleanup(ps.Close)
	cfg.Endpoint = ps.URL
	return newStore(t, cfg), &lost
}

// A buffered PutObject (a body of unknown size within one part, or an
// empty one) whose answer is lost is retried by the SDK; the retry's
// PreconditionFailed (If-None-Match: * against the object the first
// attempt stored) is the Put's success, not ErrExists (a 500).
func TestPutObjectResponseLost(t *testing.T) {
	for _, n := range []int{1000, 0} {
		for _, unknownETag := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d bytes, unknown ETag %t", n, unknownETag), func(t *testing.T) {
				s, lost := loseFirstAnswer(t, unknownETag, func(r *http.Request) bool {
					return r.Method == http.MethodPut && !r.URL.Query().Has("partNumber")
				})
				want := backendtest.Data(n, 9)
				err := s.Put(context.Background(), "lost/put", bytes.NewReader(want), -1)
				if lost.Load() != 1 {
					t.Fatalf("%d answers lost, want 1", lost.Load())
				}
				checkLostAnswerPut(t, s, "lost/put", err, unknownETag, want)
			})
		}
	}
}

// A server (or a proxy in front of it) may ignore Range and answer 200
// with the whole object; HTTP allows it. Open must then fail rather than
// hand out the object's first bytes as those at the offset.
func TestOpenRangeIgnored(t *testing.T) {
	const object = "0123456789"
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(object)))
		w.Header().Set("ETag", `"x"`)
		if r.Method == http.MethodGet {
			io.WriteString(w, object)
		}
	}))
	defer fake.Close()
	s := newStore(t, s3.Config{Endpoint: fake.URL, Region: "us-east-1", Bucket: "fake", AccessKey: "k", SecretKey: "secret", PathStyle: true, MaxRetries: -1})
	ctx := context.Background()
	for _, r := range []struct{ off, n int64 }{{3, -1}, {3, 7}, {0, 4}} {
		rc, err := s.Open(ctx, "k", r.off, r.n)
		if err != nil {
			continue
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		t.Errorf("Open(k, %d, %d) of a server ignoring Range read %q, want an error", r.off, r.n, got)
	}
	// The whole object needs no range.
	if got := readAll(t, s, "k"); string(got) != object {
		t.Fatalf("read %q, want %q", got, object)
	}
}
