package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/blobgw/blobgw/backends"
	"github.com/blobgw/blobgw/backends/disk"
	"github.com/blobgw/blobgw/backends/s3"
	"github.com/blobgw/blobgw/backends/s3/miniotest"
	"github.com/blobgw/blobgw/gateway"
	"github.com/blobgw/blobgw/gateway/auth"
	"github.com/blobgw/blobgw/internal/config"
	"github.com/blobgw/blobgw/internal/gwtest"
	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/dbopen"
	"github.com/blobgw/blobgw/leasedb/pgtest"
)

func TestMain(m *testing.M) { gwtest.Main(m) }

// storeKinds are the metadata store and byte backend pairs every
// end-to-end test runs against ("store+backend"; a bare store name means
// the disk backend).
var storeKinds = []string{"sqlite+disk", "postgres+disk", "sqlite+s3", "postgres+s3"}

// forEachStore runs fn as one subtest per storeKinds entry.
func forEachStore(t *testing.T, fn func(t *testing.T, kind string)) {
	forKinds(t, storeKinds, fn)
}

// forKinds runs fn as one subtest per entry of kinds (a subset of
// storeKinds, for tests that need not run on every pair).
func forKinds(t *testing.T, kinds []string, fn func(t *testing.T, kind string)) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) { fn(t, kind) })
	}
}

// bundle is one gateway (or several sharing a store and data directory)
// driven by the real Azure SDK.
type bundle struct {
	dsn     string
	dataDir string
	stores  []leasedb.Store
	backend backends.Backend
	servers []*httptest.Server
	gws     []*gateway.Server
	db      *leasedb.DB
	cred    *azblob.SharedKeyCredential
	// client talks to the first server.
	client *azblob.Client
}

type setupOpts struct {
	replicas int
	grace    time.Duration
	// accounts are served besides the dev account (name → base64 key).
	accounts map[string]string
	// storeDSN, when set, gives the DSN the replicas' stores connect to
	// (say through a pgtest.Proxy); the bundle's own dsn stays direct.
	storeDSN func(dsn string) string
	// options are every replica's gateway.Options.
	options gateway.Options
	// log, when set, is every replica's logger.
	log *slog.Logger
	// retentionDay, when set, is the length of a blob delete retention
	// day (leasedb.DB.RetentionDay), to see a retention pass.
	retentionDay time.Duration
	// strict is strict_conditions (leasedb.DB.StrictConditions).
	strict bool
	// wrapBackend, when set, wraps the byte backend every replica uses
	// (a fault-injecting one); the bundle's backend stays the plain one.
	wrapBackend func(backends.Backend) backends.Backend
}

// newDSN returns a fresh metadata database of the given kind owned by t.
func newDSN(t *testing.T, kind string) string {
	switch kind {
	case "sqlite":
		return filepath.Join(t.TempDir(), "meta.db")
	case "postgres":
		return pgtest.Start(t)
	}
	t.Fatalf("unknown store kind %q", kind)
	return ""
}

func setup(t *testing.T, kind string, opts ...setupOpts) *bundle {
	t.Helper()
	o := setupOpts{replicas: 1}
	if len(opts) > 0 {
		o = opts[0]
		if o.replicas == 0 {
			o.replicas = 1
		}
	}
	storeKind, backendKind, _ := strings.Cut(kind, "+")
	b := &bundle{dsn: newDSN(t, storeKind), dataDir: t.TempDir()}
	var be backends.Backend
	var err error
	switch backendKind {
	case "", "disk":
		be, err = disk.New(filepath.Join(b.dataDir, "blobs"))
	case "s3":
		cfg := miniotest.NewBucket(t)
		cfg.PartSize = 5 << 20
		var st *s3.Store
		if st, err = s3.New(context.Background(), cfg); err == nil {
			be = st
		}
	default:
		t.Fatalf("unknown backend %q", backendKind)
	}
	if err != nil {
		t.Fatal(err)
	}
	b.backend = be
	if o.wrapBackend != nil {
		be = o.wrapBackend(be)
	}
	accounts := gwtest.DevAccounts(t)
	for name, key := range o.accounts {
		if accounts[name], err = auth.NewAccount(name, key); err != nil {
			t.Fatal(err)
		}
	}
	log := gwtest.Discard()
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	if o.log != nil {
		log = o.log
	}
	for i := 0; i < o.replicas; i++ {
		// Each replica has its own store connection, as separate
		// processes would.
		dsn := b.dsn
		if o.storeDSN != nil {
			dsn = o.storeDSN(b.dsn)
		}
		store, err := dbopen.Open(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		db := &leasedb.DB{Store: store, Grace: o.grace, RetentionDay: o.retentionDay, StrictConditions: o.strict}
		if i == 0 {
			b.db = db
		}
		gw := gateway.New(db, be, accounts, log, o.options)
		t.Cleanup(func() {
			if err := gw.Close(context.Background()); err != nil {
				t.Errorf("gateway close: %v", err)
			}
		})
		srv := serveGateway(gw)
		t.Cleanup(srv.Close)
		b.stores = append(b.stores, store)
		b.gws = append(b.gws, gw)
		b.servers = append(b.servers, srv)
	}
	b.cred, err = azblob.NewSharedKeyCredential(config.DevAccountName, config.DevAccountKey)
	if err != nil {
		t.Fatal(err)
	}
	b.client = b.clientFor(t, 0)
	return b
}

// serveGateway starts h as blobgw serve does: through PreserveHeaderCase,
// so metadata names keep the client's case.
func serveGateway(h http.Handler) *httptest.Server {
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = gateway.PreserveHeaderCase(srv.Listener)
	srv.Config.ConnContext = gateway.ConnContext
	srv.Start()
	return srv
}

// clientFor returns an SDK client for replica i, with retries off so every
// status reaches the test.
func (b *bundle) clientFor(t *testing.T, i int) *azblob.Client {
	t.Helper()
	c, err := azblob.NewClientWithSharedKeyCredential(b.serviceURL(i), b.cred, &azblob.ClientOptions{
		ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (b *bundle) serviceURL(i int) string {
	return b.servers[i].URL + "/" + config.DevAccountName + "/"
}

// createContainers creates each named container through c, failing t on
// the first error: the set-up most tests begin with.
func createContainers(t *testing.T, c *azblob.Client, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := c.CreateContainer(context.Background(), n, nil); err != nil {
			t.Fatalf("create container %s: %v", n, err)
		}
	}
}

// statusOf returns the HTTP status of an SDK error (0 when err is nil).
func statusOf(err error) int {
	if err == nil {
		return 0
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return -1
}

func codeOf(err error) string {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.ErrorCode
	}
	return ""
}

// wantErr asserts an SDK error's status and x-ms-error-code.
func wantErr(t *testing.T, err error, status int, code string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want %d %s, got success", status, code)
	}
	if got := statusOf(err); got != status {
		t.Fatalf("want status %d %s, got %d %s: %v", status, code, got, codeOf(err), err)
	}
	if code != "" && codeOf(err) != code {
		t.Fatalf("want code %s, got %s (status %d)", code, codeOf(err), statusOf(err))
	}
}

// do sends a hand-built request signed with the dev key, for inputs the
// SDK will not produce; path is relative to the account URL and already
// escaped. It reads and closes the response body and returns it.
func (b *bundle) do(t *testing.T, method, path, body string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, b.serviceURL(0)+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(len(body))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	b.sign(t, req)
	return send(t, req)
}

// send sends a hand-built request as it is (signed or not) and returns
// the response with its body, read and closed.
func send(t *testing.T, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("%s %s: reading the response: %v", req.Method, req.URL.RequestURI(), err)
	}
	return resp, string(got)
}

// statusDiff compares a raw response with the status and x-ms-error-code
// wanted (code "" wants no error code): "" when they match, else what
// differs.
func statusDiff(resp *http.Response, status int, code string) string {
	got := resp.Header.Get("x-ms-error-code")
	if resp.StatusCode == status && got == code {
		return ""
	}
	what := "response"
	if resp.Request != nil {
		what = resp.Request.Method + " " + resp.Request.URL.RequestURI()
	}
	return fmt.Sprintf("%s: %d %s, want %d %s", what, resp.StatusCode, got, status, code)
}

// wantStatus fails t unless resp has status and x-ms-error-code code
// (code "" wants none); what says which step of the test it was.
func wantStatus(t *testing.T, resp *http.Response, status int, code, what string) {
	t.Helper()
	if d := statusDiff(resp, status, code); d != "" {
		t.Fatalf("%s: %s", what, d)
	}
}

// sign signs a hand-built request with the dev key (for inputs the SDK
// will not produce).
func (b *bundle) sign(t *testing.T, r *http.Request) {
	t.Helper()
	r.Header.Set("x-ms-date", time.Now().UTC().Format(http.TimeFormat))
	if r.Header.Get("x-ms-version") == "" {
		r.Header.Set("x-ms-version", "2025-11-05")
	}
	key, _ := auth.DecodeKey(config.DevAccountKey)
	r.Header.Set("Authorization", "SharedKey "+config.DevAccountName+":"+auth.Sign(key, auth.StringToSign(r, config.DevAccountName)))
}
