package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	"github.com/blobgw/blobgw/internal/config"
	"github.com/blobgw/blobgw/internal/gwtest"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// prodProc is one `blobgw serve` process started by startProd.
type prodProc struct {
	addr, metrics string
	cmd           *exec.Cmd
	logs          *syncBuffer
	exited        chan struct{}
}

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startProd starts `bin serve` on free API and metrics ports with args and
// waits until /healthz answers. It is stopped (SIGTERM, then SIGKILL)
// when t ends unless the test stopped it.
func startProd(t *testing.T, bin, dataDir string, args ...string) *prodProc {
	t.Helper()
	p := &prodProc{addr: freeAddr(t), metrics: freeAddr(t), logs: newSyncBuffer(), exited: make(chan struct{})}
	p.cmd = exec.Command(bin, append([]string{"serve", "--listen", p.addr, "--data-dir", dataDir,
		"--metrics-listen", p.metrics}, args...)...)
	p.cmd.Env = append(os.Environ(), "BLOBGW_CONFIG=")
	p.cmd.Stderr = p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		terminate(p.cmd.Process, p.exited, 30*time.Second)
		if t.Failed() {
			t.Logf("gateway %s log:\n%s", p.addr, p.logs.String())
		}
	})
	for deadline := time.Now().Add(60 * time.Second); ; {
		if code, _ := p.get("/healthz"); code == 200 {
			if c, err := net.Dial("tcp", p.addr); err == nil {
				c.Close()
				return p
			}
		}
		select {
		case <-p.exited:
			t.Fatalf("gateway exited:\n%s", p.logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("gateway did not come up on %s:\n%s", p.addr, p.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// get fetches a path of the metrics listener: status and body (0 when it
// does not answer).
func (p *prodProc) get(path string) (int, string) {
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + p.metrics + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func sdkClient(t *testing.T, url string, transport policy.Transporter) *azblob.Client {
	t.Helper()
	cred, err := azblob.NewSharedKeyCredential(config.DevAccountName, config.DevAccountKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := azblob.NewClientWithSharedKeyCredential(url, cred, &azblob.ClientOptions{ClientOptions: azcore.ClientOptions{
		Retry: policy.RetryOptions{MaxRetries: -1}, Transport: transport}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func blobSAS(t *testing.T, serviceURL, cont, name, perms string, proto sas.Protocol) string {
	t.Helper()
	cred, err := azblob.NewSharedKeyCredential(config.DevAccountName, config.DevAccountKey)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	qp, err := sas.BlobSignatureValues{Protocol: proto, StartTime: now.Add(-time.Minute), ExpiryTime: now.Add(time.Hour),
		Permissions: perms, ContainerName: cont, BlobName: name}.SignWithSharedKey(cred)
	if err != nil {
		t.Fatal(err)
	}
	return serviceURL + cont + "/" + name + "?" + qp.Encode()
}

// TestProduction runs real `blobgw serve` processes the way an operator
// would: TLS with a `cert dev` certificate (HTTP/2, SAS spr=https, the
// certificate replaced while serving), the JSON access log of SAS
// traffic, the metrics and health endpoints, and a graceful drain with
// uploads in flight.
func TestProduction(t *testing.T) {
	dir := t.TempDir()
	bin := buildBlobgw(t, filepath.Join(dir, "blobgw"))
	t.Run("TLS", func(t *testing.T) { testTLS(t, bin) })
	t.Run("AccessLogAndMetrics", func(t *testing.T) { testAccessLogAndMetrics(t, bin) })
	t.Run("Drain", func(t *testing.T) { testDrain(t, bin) })
}

func servedSerial(t *testing.T, addr string, roots *x509.CertPool) string {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})
	if err != nil {
		return "dial: " + err.Error()
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

func testTLS(t *testing.T, bin string) {
	certDir := filepath.Join(t.TempDir(), "certs")
	runCLI(t, nil, "cert", "dev", "--out", certDir).ok(t)
	certPEM, err := os.ReadFile(filepath.Join(certDir, "cert.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(certDir, "key.pem")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key.pem: %v %v", fi, err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(certPEM) {
		t.Fatal("cert.pem does not parse")
	}
	p := startProd(t, bin, filepath.Join(t.TempDir(), "data"), "--log-level", "warn",
		"--tls-cert", filepath.Join(certDir, "cert.pem"), "--tls-key", filepath.Join(certDir, "key.pem"))
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	t.Cleanup(tr.CloseIdleConnections)
	svc := "https://" + p.addr + "/" + config.DevAccountName + "/"
	client := sdkClient(t, svc, hc)
	ctx := context.Background()
	if _, err := client.CreateContainer(ctx, "tls", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := client.UploadBuffer(ctx, "tls", "a.txt", []byte("over https"), nil); err != nil {
		t.Fatal(err)
	}
	// A token only good over https, straight to the gateway.
	tok := blobSAS(t, svc, "tls", "a.txt", "r", sas.ProtocolHTTPS)
	bc, err := blockblob.NewClientWithNoCredential(tok, &blockblob.ClientOptions{ClientOptions: azcore.ClientOptions{
		Retry: policy.RetryOptions{MaxRetries: -1}, Transport: hc}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := bc.DownloadStream(ctx, nil)
	if err != nil {
		t.Fatalf("spr=https over TLS: %v", err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(got) != "over https" {
		t.Fatalf("read %q", got)
	}
	raw, err := hc.Get(tok)
	if err != nil {
		t.Fatal(err)
	}
	raw.Body.Close()
	if raw.StatusCode != 200 || raw.ProtoMajor != 2 {
		t.Fatalf("GET: %d over %s, want 200 over HTTP/2", raw.StatusCode, raw.Proto)
	}
	// Plain HTTP to the TLS port gets no Blob answer.
	if r, err := http.Get("http://" + p.addr + "/" + config.DevAccountName + "/tls/a.txt"); err == nil {
		r.Body.Close()
		if r.StatusCode != http.StatusBadRequest {
			t.Fatalf("plain HTTP to the TLS port: %d", r.StatusCode)
		}
	}

	// Renew the certificate in place: new handshakes get the new one,
	// without a restart.
	first := servedSerial(t, p.addr, roots)
	runCLI(t, nil, "cert", "dev", "--out", certDir).ok(t)
	newPEM, _ := os.ReadFile(filepath.Join(certDir, "cert.pem"))
	roots2 := x509.NewCertPool()
	roots2.AppendCertsFromPEM(newPEM)
	block, _ := pemDecode(newPEM)
	newCert, err := x509.ParseCertificate(block)
	if err != nil {
		t.Fatal(err)
	}
	want := newCert.SerialNumber.String()
	if want == first {
		t.Fatal("cert dev wrote the same serial twice")
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		if got := servedSerial(t, p.addr, roots2); got == want {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("still serving %s, want the renewed %s", got, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// And the SDK works against the renewed certificate.
	tr2 := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots2}, ForceAttemptHTTP2: true}
	t.Cleanup(tr2.CloseIdleConnections)
	if _, err := sdkClient(t, svc, &http.Client{Transport: tr2}).UploadBuffer(ctx, "tls", "b.txt", []byte("renewed"), nil); err != nil {
		t.Fatalf("upload after the renewal: %v", err)
	}
}

func testAccessLogAndMetrics(t *testing.T, bin string) {
	p := startProd(t, bin, filepath.Join(t.TempDir(), "data"), "--log-format", "json", "--log-level", "debug",
		"--trusted-proxies", "127.0.0.1/32", "--pprof")
	svc := "http://" + p.addr + "/" + config.DevAccountName + "/"
	client := sdkClient(t, svc, nil)
	ctx := context.Background()
	if _, err := client.CreateContainer(ctx, "logs", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := client.UploadBuffer(ctx, "logs", "src.txt", []byte("source"), nil); err != nil {
		t.Fatal(err)
	}
	// SAS traffic: a read, a refused token, a copy from a SAS source and
	// one from an unreachable SAS source (its URL ends up in an error).
	rtok := blobSAS(t, svc, "logs", "src.txt", "r", sas.ProtocolHTTPSandHTTP)
	resp, err := http.Get(rtok)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	readID := resp.Header.Get("x-ms-request-id")
	if resp.StatusCode != 200 || readID == "" {
		t.Fatalf("SAS read: %d", resp.StatusCode)
	}
	resp, err = http.Get(strings.Replace(rtok, "sig=", "sig=AAAA", 1))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Fatalf("bad SAS: %d", resp.StatusCode)
	}
	cc := client.ServiceClient().NewContainerClient("logs")
	if _, err := cc.NewBlobClient("dst.txt").CopyFromURL(ctx, rtok, nil); err != nil {
		t.Fatal(err)
	}
	_, q, _ := strings.Cut(rtok, "?")
	if _, err := cc.NewBlobClient("dst2.txt").CopyFromURL(ctx, "http://127.0.0.1:1/devstoreaccount1/logs/src.txt?"+q, nil); err == nil {
		t.Fatal("copy from an unreachable source succeeded")
	}
	// Through the trusted proxy: the logged client is the forwarded one.
	req, _ := http.NewRequest("GET", rtok, nil)
	req.Header.Set("X-Forwarded-For", "203.0.113.9")
	req.Header.Set("X-Forwarded-Proto", "https")
	req.Header.Set("x-ms-client-request-id", "proxied-1")
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	// Metrics on the separate listener moved with these requests.
	code, body := p.get("/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	count := func(name string, labels map[string]string) float64 {
		total := 0.0
		f := fams[name]
		if f == nil {
			return 0
		}
	next:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; ok && v != l.GetValue() {
					continue next
				}
			}
			total += m.GetCounter().GetValue()
		}
		return total
	}
	if n := count("blobgw_requests_total", map[string]string{"operation": "GetBlob", "status": "200"}); n != 2 {
		t.Errorf("GetBlob 200 = %v, want 2", n)
	}
	if n := count("blobgw_requests_total", map[string]string{"operation": "GetBlob", "status": "403"}); n != 1 {
		t.Errorf("GetBlob 403 = %v, want 1", n)
	}
	if n := count("blobgw_requests_total", map[string]string{"operation": "CreateContainer", "status": "201"}); n != 1 {
		t.Errorf("CreateContainer 201 = %v, want 1", n)
	}
	if code, body := p.get("/readyz"); code != 200 {
		t.Fatalf("/readyz: %d %s", code, body)
	}
	if code, _ := p.get("/debug/pprof/"); code != 200 {
		t.Fatalf("/debug/pprof/ with --pprof: %d", code)
	}

	// Stop, then read the whole log.
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(60 * time.Second):
		t.Fatal("gateway did not stop")
	}
	out := p.logs.String()
	var proxied, read map[string]any
	lines := gwtest.LogLines(t, out)
	for _, line := range lines {
		if line["msg"] != "request" {
			continue
		}
		if line["client_request_id"] == "proxied-1" {
			proxied = line
		}
		if line["request_id"] == readID {
			read = line
		}
	}
	if read == nil || read["operation"] != "GetBlob" || read["status"] != 200.0 || read["bytes_out"] != 6.0 || read["client"] != "127.0.0.1" {
		t.Errorf("access line of the SAS read: %v", read)
	}
	if proxied == nil || proxied["client"] != "203.0.113.9" || proxied["https"] != true {
		t.Errorf("access line through the trusted proxy: %v", proxied)
	}
	if len(lines) < 8 {
		t.Errorf("only %d log lines", len(lines))
	}
}

// gatedBody is an upload body that sends its first part at once and the
// rest only once its gate opens; sent is closed when the first part has
// been read.
type gatedBody struct {
	data []byte
	at   int
	off  int
	gate chan struct{}
	sent chan struct{}
	once sync.Once
}

func newGatedBody(data []byte, at int, gate chan struct{}) *gatedBody {
	return &gatedBody{data: data, at: at, gate: gate, sent: make(chan struct{})}
}

func (g *gatedBody) Read(p []byte) (int, error) {
	if g.off >= len(g.data) {
		return 0, io.EOF
	}
	if g.off >= g.at {
		g.once.Do(func() { close(g.sent) })
		<-g.gate
	}
	end := len(g.data)
	if g.off < g.at {
		end = g.at
	}
	n := copy(p, g.data[g.off:end])
	g.off += n
	return n, nil
}

func (g *gatedBody) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
		g.off = int(off)
	case io.SeekCurrent:
		g.off += int(off)
	case io.SeekEnd:
		g.off = len(g.data) + int(off)
	}
	return int64(g.off), nil
}

func (g *gatedBody) Close() error { return nil }

func testDrain(t *testing.T, bin string) {
	dataDir := filepath.Join(t.TempDir(), "data")
	p := startProd(t, bin, dataDir, "--log-level", "info", "--drain-delay", "2s", "--drain-timeout", "8s")
	svc := "http://" + p.addr + "/" + config.DevAccountName + "/"
	client := sdkClient(t, svc, nil)
	ctx := context.Background()
	if _, err := client.CreateContainer(ctx, "drain", nil); err != nil {
		t.Fatal(err)
	}
	cc := client.ServiceClient().NewContainerClient("drain")
	const uploads = 4
	// never opens only after the gateway has exited: Go's client keeps
	// reading a body until the reader returns, even from a dead connection.
	gate, never := make(chan struct{}), make(chan struct{})
	neverClosed := false
	defer func() {
		if !neverClosed {
			close(never)
		}
	}()
	type result struct {
		name string
		data []byte
		err  error
	}
	results := make(chan result, uploads+1)
	var bodies []*gatedBody
	start := func(name string, g chan struct{}) {
		data := bytes.Repeat([]byte(name[:1]), 256<<10)
		body := newGatedBody(data, 64<<10, g)
		bodies = append(bodies, body)
		go func() {
			_, err := cc.NewBlockBlobClient(name).Upload(ctx, body, nil)
			results <- result{name, data, err}
		}()
	}
	for i := range uploads {
		start(fmt.Sprintf("%c-upload", 'a'+i), gate)
	}
	// One upload that never finishes its body: cut at the drain timeout.
	start("z-stalled", never)
	for _, b := range bodies {
		<-b.sent
	}
	time.Sleep(200 * time.Millisecond) // the server has the requests
	signalled := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Readiness turns 503 at once; the API still accepts connections
	// during the drain delay.
	for {
		code, _ := p.get("/readyz")
		if code == 503 {
			break
		}
		if time.Since(signalled) > 1500*time.Millisecond {
			t.Fatalf("/readyz still %d after SIGTERM", code)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := sdkClient(t, svc, &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).
		ServiceClient().NewContainerClient("drain").GetProperties(ctx, nil); err != nil {
		t.Fatalf("a new connection during the drain delay: %v", err)
	}
	close(gate)
	acked := map[string][]byte{}
	for range uploads {
		r := <-results
		switch {
		case r.name == "z-stalled":
			t.Errorf("the stalled upload ended before the drain timeout: %v", r.err)
		case r.err != nil:
			t.Errorf("upload %s in flight during the drain: %v", r.name, r.err)
		default:
			acked[r.name] = r.data
		}
	}
	select {
	case <-p.exited:
	case <-time.After(60 * time.Second):
		t.Fatal("gateway did not exit after the drain")
	}
	close(never)
	neverClosed = true
	if r := <-results; r.name == "z-stalled" && r.err == nil {
		t.Error("the stalled upload succeeded")
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit status %d:\n%s", code, p.logs.String())
	}
	if d := time.Since(signalled); d < 2*time.Second {
		t.Errorf("exited %v after SIGTERM, before the drain delay", d)
	}
	if c, err := net.DialTimeout("tcp", p.addr, time.Second); err == nil {
		c.Close()
		t.Fatal("the listener still accepts after the drain")
	}
	for _, want := range []string{"draining: readiness answers 503", "drain timeout", "stopped"} {
		if !strings.Contains(p.logs.String(), want) {
			t.Errorf("log lacks %q", want)
		}
	}

	// Nothing half-committed: a fresh process over the same data lists
	// exactly the acknowledged uploads, each whole.
	q := startProd(t, bin, dataDir, "--log-level", "warn")
	c2 := sdkClient(t, "http://"+q.addr+"/"+config.DevAccountName+"/", nil)
	pager := c2.NewListBlobsFlatPager("drain", nil)
	listed := map[string]bool{}
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Segment.BlobItems {
			listed[*it.Name] = true
		}
	}
	if len(listed) != len(acked) {
		t.Errorf("listed %v, acknowledged %d uploads", listed, len(acked))
	}
	for name, data := range acked {
		resp, err := c2.DownloadStream(ctx, "drain", name, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s read back %d bytes (%v), want %d", name, len(got), err, len(data))
		}
	}
	if _, err := c2.ServiceClient().NewContainerClient("drain").NewBlobClient("z-stalled").GetProperties(ctx, nil); !isNotFound(err) {
		t.Fatalf("the cut upload is visible: %v", err)
	}
}

func isNotFound(err error) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == 404
}

func pemDecode(b []byte) ([]byte, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	return block.Bytes, nil
}
