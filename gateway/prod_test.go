package gateway_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	"github.com/blobgw/blobgw/backends/disk"
	"github.com/blobgw/blobgw/gateway"
	"github.com/blobgw/blobgw/gateway/auth"
	"github.com/blobgw/blobgw/internal/gwtest"
	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/dbopen"
	"github.com/blobgw/blobgw/leasedb/pgtest"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// headerPolicy adds fixed headers to every request an SDK client sends
// (what a proxy in front of the gateway would add).
type headerPolicy map[string]string

func (h headerPolicy) Do(req *policy.Request) (*http.Response, error) {
	for k, v := range h {
		req.Raw().Header.Set(k, v)
	}
	return req.Next()
}

func sasBlobClient(t *testing.T, u string, hdr map[string]string, transport policy.Transporter) *blockblob.Client {
	t.Helper()
	opts := &blockblob.ClientOptions{ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}, Transport: transport}}
	if hdr != nil {
		opts.PerCallPolicies = []policy.Policy{headerPolicy(hdr)}
	}
	c, err := blockblob.NewClientWithNoCredential(u, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// httpsOnly is a blob SAS with spr=https (SAS signed protocol: "https").
func httpsOnly(cont, name, ip string) sas.BlobSignatureValues {
	now := time.Now().UTC()
	v := sas.BlobSignatureValues{Protocol: sas.ProtocolHTTPS, StartTime: now.Add(-time.Minute), ExpiryTime: now.Add(time.Hour),
		Permissions: (&sas.BlobPermissions{Read: true, Write: true, Create: true}).String(), ContainerName: cont, BlobName: name}
	if ip != "" {
		v.IPRange = sas.IPRange{Start: netip.MustParseAddr(ip).AsSlice()}
	}
	return v
}

func readAll(t *testing.T, c *blockblob.Client) string {
	t.Helper()
	u, _, _ := strings.Cut(c.URL(), "?") // no SAS signature in a failure
	_, data := getBlob(t, c.BlobClient(), nil, u)
	return string(data)
}

// TestSASProtocolBehindProxy: a SAS with spr=https is refused over plain
// HTTP (403 AuthorizationProtocolMismatch) unless a trusted proxy says the
// client spoke https (X-Forwarded-Proto or Forwarded); the same claim from
// an untrusted peer is ignored. sip is checked against the client address
// the trusted proxy names, and a peer not trusted cannot choose it.
func TestSASProtocolBehindProxy(t *testing.T) {
	ctx := context.Background()
	behind := setup(t, "sqlite", setupOpts{options: gateway.Options{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}})
	exposed := setup(t, "sqlite", setupOpts{options: gateway.Options{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}})
	for _, b := range []*bundle{behind, exposed} {
		createContainers(t, b.client, "tls")
		if _, err := b.client.UploadBuffer(ctx, "tls", "a.txt", []byte("secret"), nil); err != nil {
			t.Fatal(err)
		}
	}
	fwdHTTPS := map[string]string{"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.9"}

	// Behind a trusted proxy.
	u := behind.sasURL(t, "tls/a.txt", httpsOnly("tls", "a.txt", ""))
	_, err := sasBlobClient(t, u, nil, nil).GetProperties(ctx, nil)
	wantErr(t, err, 403, "AuthorizationProtocolMismatch")
	if got := readAll(t, sasBlobClient(t, u, fwdHTTPS, nil)); got != "secret" {
		t.Fatalf("read through a trusted proxy: %q", got)
	}
	if got := readAll(t, sasBlobClient(t, u, map[string]string{"Forwarded": "for=203.0.113.9;proto=https"}, nil)); got != "secret" {
		t.Fatalf("read with Forwarded: %q", got)
	}
	// The proxy saying http wins over nothing.
	_, err = sasBlobClient(t, u, map[string]string{"X-Forwarded-Proto": "http"}, nil).GetProperties(ctx, nil)
	wantErr(t, err, 403, "AuthorizationProtocolMismatch")
	// A write through the proxy, too.
	w := sasBlobClient(t, behind.sasURL(t, "tls/w.txt", httpsOnly("tls", "w.txt", "")), fwdHTTPS, nil)
	if _, err := w.UploadBuffer(ctx, []byte("written"), nil); err != nil {
		t.Fatalf("write through a trusted proxy: %v", err)
	}
	// sip: the client address the proxy names.
	ipTok := behind.sasURL(t, "tls/a.txt", httpsOnly("tls", "a.txt", "203.0.113.9"))
	if got := readAll(t, sasBlobClient(t, ipTok, fwdHTTPS, nil)); got != "secret" {
		t.Fatalf("sip through a trusted proxy: %q", got)
	}
	_, err = sasBlobClient(t, ipTok, map[string]string{"X-Forwarded-Proto": "https", "X-Forwarded-For": "198.51.100.1"}, nil).GetProperties(ctx, nil)
	wantErr(t, err, 403, "AuthorizationSourceIPMismatch")

	// Listings name the endpoint with the scheme the client used.
	lc, err := azblob.NewClientWithSharedKeyCredential(behind.serviceURL(0), behind.cred, &azblob.ClientOptions{
		ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}, PerCallPolicies: []policy.Policy{headerPolicy(fwdHTTPS)}}})
	if err != nil {
		t.Fatal(err)
	}
	page, err := lc.NewListBlobsFlatPager("tls", nil).NextPage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ep := *page.ServiceEndpoint; !strings.HasPrefix(ep, "https://") {
		t.Fatalf("ServiceEndpoint through a TLS-terminating proxy: %s", ep)
	}

	// From an untrusted peer the same headers are ignored.
	u = exposed.sasURL(t, "tls/a.txt", httpsOnly("tls", "a.txt", ""))
	_, err = sasBlobClient(t, u, fwdHTTPS, nil).GetProperties(ctx, nil)
	wantErr(t, err, 403, "AuthorizationProtocolMismatch")
	_, err = sasBlobClient(t, u, map[string]string{"Forwarded": "for=203.0.113.9;proto=https"}, nil).GetProperties(ctx, nil)
	wantErr(t, err, 403, "AuthorizationProtocolMismatch")
	_, err = sasBlobClient(t, exposed.sasURL(t, "tls/w2.txt", httpsOnly("tls", "w2.txt", "")), fwdHTTPS, nil).UploadBuffer(ctx, []byte("x"), nil)
	wantErr(t, err, 403, "AuthorizationProtocolMismatch")
	if _, err := exposed.client.ServiceClient().NewContainerClient("tls").NewBlobClient("w2.txt").GetProperties(ctx, nil); statusOf(err) != 404 {
		t.Fatalf("a refused write stored something: %v", err)
	}
	// sip from an untrusted peer: its own address (127.0.0.1) counts, not
	// the one it claims.
	_, err = sasBlobClient(t, exposed.sasURL(t, "tls/a.txt", httpsOnly("tls", "a.txt", "203.0.113.9")),
		map[string]string{"X-Forwarded-For": "203.0.113.9"}, nil).GetProperties(ctx, nil)
	if statusOf(err) != 403 {
		t.Fatalf("sip with a spoofed X-Forwarded-For: want 403, got %v", err)
	}
}

// TestSASOverTLS: the SDK over https (HTTP/2) with a spr=https token
// straight to the gateway.
func TestSASOverTLS(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	srv := httptest.NewUnstartedServer(b.gws[0])
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	createContainers(t, b.client, "tls")
	base := srv.URL + "/devstoreaccount1/"
	tok := strings.Replace(b.sasURL(t, "tls/h2.txt", httpsOnly("tls", "h2.txt", "")), b.serviceURL(0), base, 1)
	c := sasBlobClient(t, tok, nil, srv.Client())
	if _, err := c.UploadBuffer(ctx, []byte("over tls"), nil); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, c); got != "over tls" {
		t.Fatalf("read back %q", got)
	}
	resp, err := srv.Client().Get(tok)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ProtoMajor != 2 {
		t.Fatalf("GET over TLS: %d %s, want 200 over HTTP/2", resp.StatusCode, resp.Proto)
	}
}

// scrape reads the gateway's /metrics and parses it.
func scrape(t *testing.T, ops http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	ops.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("/metrics: %d %s", rec.Code, rec.Body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// value is the value of the series of name whose labels include want (a
// counter, a gauge, or a histogram's sample count); 0 when absent.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
	total := 0.0
next:
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			total += m.GetCounter().GetValue()
		case m.Gauge != nil:
			total += m.GetGauge().GetValue()
		case m.Histogram != nil:
			total += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return total
}

// TestMetrics scrapes /metrics before and after a known set of requests
// and checks that each counter moved by what those requests did.
func TestMetrics(t *testing.T) {
	forKinds(t, []string{"sqlite+disk", "postgres+s3"}, testMetrics)
}

func testMetrics(t *testing.T, kind string) {
	b := setup(t, kind, setupOpts{grace: time.Hour})
	ops := b.gws[0].OpsHandler(false)
	ctx := context.Background()
	cc := b.client.ServiceClient().NewContainerClient("metrics")
	if _, err := cc.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	before := scrape(t, ops)
	put := func(name string, data []byte, ac *blob.AccessConditions) error {
		_, err := cc.NewBlockBlobClient(name).Upload(ctx, nopSeeker(string(data)), &blockblob.UploadOptions{AccessConditions: ac})
		return err
	}
	payload := bytes.Repeat([]byte("m"), 1000)
	for range 3 {
		if err := put("a.bin", payload, nil); err != nil {
			t.Fatal(err)
		}
	}
	got := readAll(t, cc.NewBlockBlobClient("a.bin"))
	if len(got) != 1000 {
		t.Fatalf("read %d bytes", len(got))
	}
	// 412 ConditionNotMet, 409 BlobAlreadyExists.
	wantErr(t, put("a.bin", payload, &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: to.Ptr(azcore.ETag(`"0x1"`))}}), 412, "ConditionNotMet")
	wantErr(t, put("a.bin", payload, &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: to.Ptr(azcore.ETagAny)}}), 409, "BlobAlreadyExists")
	// A lease, and a write without its id: 412 LeaseIdMissing.
	lc, err := lease.NewBlobClient(cc.NewBlobClient("a.bin"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lc.AcquireLease(ctx, -1, nil); err != nil {
		t.Fatal(err)
	}
	wantErr(t, put("a.bin", payload, nil), 412, "LeaseIdMissing")
	after := scrape(t, ops)

	delta := func(name string, labels map[string]string) float64 {
		return value(after, name, labels) - value(before, name, labels)
	}
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"blobgw_requests_total", map[string]string{"operation": "PutBlob", "status": "201"}, 3},
		{"blobgw_requests_total", map[string]string{"operation": "PutBlob", "status": "412"}, 2},
		{"blobgw_requests_total", map[string]string{"operation": "PutBlob", "status": "409"}, 1},
		{"blobgw_requests_total", map[string]string{"operation": "GetBlob", "status": "200"}, 1},
		{"blobgw_requests_total", map[string]string{"operation": "LeaseBlob", "status": "201"}, 1},
		{"blobgw_request_duration_seconds", map[string]string{"operation": "PutBlob"}, 6},
		// A small Put Blob is read (and staged) before its commit decides
		// (the lock-free pre-check runs first only for a body over
		// precheckBodyMin): the three refused puts read their bodies too.
		{"blobgw_request_bytes_total", map[string]string{"operation": "PutBlob"}, 6000},
		{"blobgw_response_bytes_total", map[string]string{"operation": "GetBlob"}, 1000},
		{"blobgw_precondition_failures_total", map[string]string{"operation": "PutBlob", "status": "412", "code": "ConditionNotMet"}, 1},
		{"blobgw_precondition_failures_total", map[string]string{"operation": "PutBlob", "status": "409", "code": "BlobAlreadyExists"}, 1},
		{"blobgw_lease_conflicts_total", map[string]string{"operation": "PutBlob", "code": "LeaseIdMissing"}, 1},
		{"blobgw_backend_duration_seconds", map[string]string{"op": "Put"}, 6},
		{"blobgw_backend_duration_seconds", map[string]string{"op": "Open"}, 1},
	}
	for _, c := range checks {
		if d := delta(c.name, c.labels); d != c.want {
			t.Errorf("%s%v moved by %v, want %v", c.name, c.labels, d, c.want)
		}
	}
	if d := delta("blobgw_metadata_tx_duration_seconds", map[string]string{"kind": "update"}); d < 3 {
		t.Errorf("metadata update transactions moved by %v, want ≥ 3", d)
	}
	// Scrape-time gauges: one blob lease held; the two overwritten
	// objects wait out the grace period; the pooled keys are intents.
	if v := value(after, "blobgw_leases", map[string]string{"kind": "blob", "state": "leased"}); v != 1 {
		t.Errorf("blobgw_leases{blob,leased} = %v, want 1", v)
	}
	if v := value(after, "blobgw_collector_queue_depth", nil); v != 2 {
		t.Errorf("blobgw_collector_queue_depth = %v, want 2", v)
	}
	if v, want := value(after, "blobgw_upload_intents", nil), float64(len(b.gws[0].PooledKeys())); v != want {
		t.Errorf("blobgw_upload_intents = %v, want %v (the pooled keys)", v, want)
	}
	if v := value(after, "blobgw_metadata_scrape_ok", nil); v != 1 {
		t.Errorf("blobgw_metadata_scrape_ok = %v", v)
	}
	if _, ok := after["blobgw_collector_oldest_due_seconds"]; !ok {
		t.Error("no blobgw_collector_oldest_due_seconds")
	}
	if _, ok := after["go_goroutines"]; !ok {
		t.Error("no Go runtime metrics")
	}
	// A collection pass with nothing due deletes nothing; counters exist.
	if _, err := b.gws[0].Collect(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := scrape(t, ops)["blobgw_collector_deleted_total"]; !ok {
		t.Error("no blobgw_collector_deleted_total")
	}
	// Two servers in one process count apart (a registry each).
	other := setup(t, "sqlite")
	if v := value(scrape(t, other.gws[0].OpsHandler(false)), "blobgw_requests_total", map[string]string{"operation": "PutBlob"}); v != 0 {
		t.Errorf("a second server counts the first's requests: %v", v)
	}
}

// TestHealthEndpoints: /healthz answers while the process runs; /readyz
// turns 503 once the Server drains; pprof only when asked for.
func TestHealthEndpoints(t *testing.T) {
	b := setup(t, "sqlite")
	get := func(h http.Handler, path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec.Code, rec.Body.String()
	}
	ops := b.gws[0].OpsHandler(false)
	if code, _ := get(ops, "/healthz"); code != 200 {
		t.Fatalf("/healthz: %d", code)
	}
	if code, body := get(ops, "/readyz"); code != 200 {
		t.Fatalf("/readyz: %d %s", code, body)
	}
	if code, _ := get(ops, "/debug/pprof/"); code != 404 {
		t.Fatalf("/debug/pprof/ without pprof: %d", code)
	}
	if code, _ := get(b.gws[0].OpsHandler(true), "/debug/pprof/"); code != 200 {
		t.Fatalf("/debug/pprof/ with pprof: %d", code)
	}
	b.gws[0].SetDraining()
	if code, body := get(ops, "/readyz"); code != 503 || !strings.Contains(body, "draining") {
		t.Fatalf("/readyz while draining: %d %s", code, body)
	}
	if code, _ := get(ops, "/healthz"); code != 200 {
		t.Fatalf("/healthz while draining: %d", code)
	}
}

// refusingWrites is a real store that says it refuses every write, as
// the SQLite store does after a failed WAL flush (leasedb.WriteRefuser).
type refusingWrites struct {
	leasedb.Store
	err error
}

func (r refusingWrites) WritesRefused() error { return r.err }

// TestReadyRefusedWrites: /readyz answers 503 with the store's reason
// while the store refuses every write, though it still reads.
func TestReadyRefusedWrites(t *testing.T) {
	store, err := dbopen.Open(context.Background(), filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	be, err := disk.New(filepath.Join(t.TempDir(), "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	probe := func(s leasedb.Store) (int, string) {
		gw := gateway.New(&leasedb.DB{Store: s}, be, gwtest.DevAccounts(t), gwtest.Discard(), gateway.Options{})
		t.Cleanup(func() { gw.Close(context.Background()) })
		rec := httptest.NewRecorder()
		gw.OpsHandler(false).ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := probe(refusingWrites{Store: store}); code != 200 {
		t.Fatalf("/readyz with writes accepted: %d %s", code, body)
	}
	code, body := probe(refusingWrites{Store: store, err: errors.New("an earlier WAL flush failed")})
	if code != 503 || !strings.Contains(body, "refuses writes") || !strings.Contains(body, "WAL flush failed") {
		t.Fatalf("/readyz with writes refused: %d %s", code, body)
	}
}

// syncBuf is a log destination safe for concurrent handlers.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestAccessLog runs SAS requests (allowed and refused, a copy whose
// source carries a SAS) and a 500 with a JSON logger at debug level: one
// "request" line per request with the fields the operator needs, the
// request id the client saw, the 500's cause logged under its request id,
// and no SAS signature, Shared Key signature or account key anywhere.
// Both through slog's own JSON handler and through NewLogHandler's (as
// blobgw serve logs), whose access line bypasses slog.
func TestAccessLog(t *testing.T) {
	for name, newHandler := range map[string]func(io.Writer, *slog.HandlerOptions) slog.Handler{
		"slog": func(w io.Writer, o *slog.HandlerOptions) slog.Handler { return slog.NewJSONHandler(w, o) },
		"direct": func(w io.Writer, o *slog.HandlerOptions) slog.Handler {
			return gateway.NewLogHandler(w, "json", o)
		},
	} {
		t.Run(name, func(t *testing.T) { testAccessLog(t, newHandler) })
	}
}

func testAccessLog(t *testing.T, newHandler func(io.Writer, *slog.HandlerOptions) slog.Handler) {
	var logs syncBuf
	log := slog.New(newHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	b := setup(t, "sqlite", setupOpts{log: log})
	ctx := context.Background()
	cc := b.client.ServiceClient().NewContainerClient("logs")
	if _, err := cc.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cc.NewBlockBlobClient("src.txt").UploadBuffer(ctx, []byte("source"), nil); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	rw := sas.BlobSignatureValues{Protocol: sas.ProtocolHTTPSandHTTP, StartTime: now.Add(-time.Minute), ExpiryTime: now.Add(time.Hour),
		Permissions: "rw", ContainerName: "logs", BlobName: "src.txt"}
	srcURL := b.sasURL(t, "logs/src.txt", rw)
	c := sasBlobClient(t, srcURL, map[string]string{"x-ms-client-request-id": "client-id-1"}, nil)
	if got := readAll(t, c); got != "source" {
		t.Fatalf("read %q", got)
	}
	// A refused token (bad signature) and a copy from a SAS source.
	bad := strings.Replace(srcURL, "sig=", "sig=AAAA", 1)
	_, err := sasBlobClient(t, bad, nil, nil).GetProperties(ctx, nil)
	wantErr(t, err, 403, "AuthenticationFailed")
	if _, err := cc.NewBlobClient("dst.txt").CopyFromURL(ctx, srcURL, nil); err != nil {
		t.Fatal(err)
	}
	// A copy source that cannot be reached: its URL with the SAS lands in
	// an error.
	gone := "http://127.0.0.1:1/devstoreaccount1/logs/src.txt?" + splitQuery(srcURL)
	if _, err := cc.NewBlobClient("dst2.txt").CopyFromURL(ctx, gone, nil); err == nil {
		t.Fatal("copy from an unreachable source succeeded")
	}
	// A 500: the blob's bytes removed behind the gateway's back.
	if _, err := cc.NewBlockBlobClient("lost.txt").UploadBuffer(ctx, []byte("lost bytes"), nil); err != nil {
		t.Fatal(err)
	}
	filepath.Walk(filepath.Join(b.dataDir, "blobs"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && fi.Size() == int64(len("lost bytes")) {
			os.Remove(p)
		}
		return nil
	})
	req, _ := http.NewRequest("GET", b.serviceURL(0)+"logs/lost.txt", nil)
	b.sign(t, req)
	resp, _ := send(t, req)
	if resp.StatusCode != 500 {
		t.Fatalf("read of a blob with missing bytes: %d", resp.StatusCode)
	}
	failedID := resp.Header.Get("x-ms-request-id")

	out := logs.String()
	lines := gwtest.LogLines(t, out)
	if strings.Contains(out, "SharedKey devstoreaccount1:") && !strings.Contains(out, "SharedKey devstoreaccount1:REDACTED") {
		t.Fatalf("a Shared Key signature reached the log:\n%s", out)
	}
	var requests []map[string]any
	causeLogged := false
	for _, line := range lines {
		if line["msg"] == "request" {
			requests = append(requests, line)
		}
		if line["request_id"] == failedID && line["level"] == "ERROR" && line["err"] != nil {
			causeLogged = true
		}
	}
	if !causeLogged {
		t.Errorf("the 500's cause is not logged with its request id %s:\n%s", failedID, out)
	}
	var read map[string]any
	for _, l := range requests {
		if l["client_request_id"] == "client-id-1" && l["operation"] == "GetBlob" {
			read = l
		}
		if l["level"] != "INFO" {
			t.Errorf("access line at level %v", l["level"])
		}
	}
	if read == nil {
		t.Fatalf("no access line for the SAS read:\n%s", out)
	}
	want := map[string]any{"account": "devstoreaccount1", "container": "logs", "blob": "src.txt", "status": 200.0,
		"bytes_out": 6.0, "bytes_in": 0.0, "client": "127.0.0.1", "error_code": ""}
	for k, v := range want {
		if read[k] != v {
			t.Errorf("access line %s = %v, want %v", k, read[k], v)
		}
	}
	if id, _ := read["request_id"].(string); len(id) != 36 {
		t.Errorf("request_id %v", read["request_id"])
	}
	if _, ok := read["duration"]; !ok {
		t.Error("no duration")
	}
	found500, found403 := false, false
	for _, l := range requests {
		if l["request_id"] == failedID && l["status"] == 500.0 && l["error_code"] == "InternalError" {
			found500 = true
		}
		if l["status"] == 403.0 && l["error_code"] == "AuthenticationFailed" {
			found403 = true
		}
	}
	if !found500 || !found403 {
		t.Errorf("access lines for the 500 (%v) and the 403 (%v) missing:\n%s", found500, found403, out)
	}
}

// TestReadinessFollowsPostgres: /readyz answers 503 naming the metadata
// store while Postgres is down, and 200 again once it is back, without a
// restart of the gateway.
func TestReadinessFollowsPostgres(t *testing.T) {
	pg := pgtest.PrivateServer(t)
	dsn := pg.NewDatabase(t)
	store := gwtest.OpenStore(t, dsn)
	gw := gateway.New(&leasedb.DB{Store: store}, gwtest.DiskBackend(t, t.TempDir()), auth.MapAccounts{}, gwtest.Discard(), gateway.Options{})
	ops := gw.OpsHandler(false)
	ready := func() (int, string) {
		rec := httptest.NewRecorder()
		ops.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := ready(); code != 200 {
		t.Fatalf("/readyz with Postgres up: %d %s", code, body)
	}
	if err := pg.Halt(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	code, body := ready()
	if code != 503 || !strings.Contains(body, "metadata store") {
		t.Fatalf("/readyz with Postgres down: %d %s", code, body)
	}
	// The probe is bounded (2 s, plus slack for a loaded machine).
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("/readyz took %v with Postgres down", d)
	}
	if code, _ := ready(); code != 503 {
		t.Fatalf("/readyz again with Postgres down: %d", code)
	}
	rec := httptest.NewRecorder()
	ops.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	if rec.Code != 200 {
		t.Fatalf("/healthz with Postgres down: %d", rec.Code)
	}
	if err := pg.Resume(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); ; {
		code, body := ready()
		if code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz after Postgres came back: %d %s", code, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
