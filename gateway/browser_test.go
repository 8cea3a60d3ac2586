package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
)

// browserDir holds the test page, its script and the npm packages the
// test harness installs (scripts/test: npm ci here).
const browserDir = "testdata/browser"

// inCI reports whether missing test tools must fail the run (CI set to
// anything but "false" or "0", as in leasedb/pgtest).
func inCI() bool {
	v := strings.TrimSpace(strings.ToLower(os.Getenv("CI")))
	return v != "" && v != "false" && v != "0"
}

// needTool fails the test in CI and skips it elsewhere.
func needTool(t *testing.T, format string, args ...any) {
	t.Helper()
	if inCI() {
		t.Fatalf(format+" (CI is set: the browser test must run; scripts/test installs it)", args...)
	}
	t.Skipf(format+"; skipping (scripts/test installs it; with CI=true this fails)", args...)
}

// findChromium returns Debian's chromium, or chromium-browser on PATH.
func findChromium(t *testing.T) string {
	t.Helper()
	if fi, err := os.Stat("/usr/bin/chromium"); err == nil && !fi.IsDir() {
		return "/usr/bin/chromium"
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	needTool(t, "no Chromium found (/usr/bin/chromium, chromium or chromium-browser on PATH)")
	return ""
}

// bundlePage bundles main.js with @azure/storage-blob for the browser into
// dir/bundle.js.
func bundlePage(t *testing.T, dir string) {
	t.Helper()
	esbuild := filepath.Join(browserDir, "node_modules", ".bin", "esbuild")
	if _, err := os.Stat(esbuild); err != nil {
		needTool(t, "%s is missing: the npm packages of %s are not installed (npm ci there)", esbuild, browserDir)
	}
	if _, err := os.Stat(filepath.Join(browserDir, "node_modules", "@azure", "storage-blob")); err != nil {
		needTool(t, "@azure/storage-blob is not installed in %s (npm ci there)", browserDir)
	}
	cmd := exec.Command(esbuild, filepath.Join(browserDir, "main.js"), "--bundle", "--platform=browser",
		"--format=iife", "--minify", "--log-level=warning", "--outfile="+filepath.Join(dir, "bundle.js"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("esbuild: %v\n%s", err, out)
	}
}

// dumpDOM loads url in headless Chromium and returns the DOM once the
// page's network activity is over (--virtual-time-budget lets the page's
// requests finish before --dump-dom prints).
func dumpDOM(t *testing.T, chromium, pageURL string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--user-data-dir="+t.TempDir(),
		"--virtual-time-budget=30000", "--dump-dom", pageURL)
	// Chromium's helper processes share its process group; a timeout ends
	// them all.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\nstderr:\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "RESULT ") {
		t.Fatalf("the page wrote no result; DOM:\n%s\nchromium stderr:\n%s", stdout.String(), stderr.String())
	}
	return stdout.String()
}

// pageResult extracts "RESULT OK {...}" or "RESULT FAIL ..." from the DOM.
func pageResult(dom string) string {
	i := strings.Index(dom, `<pre id="result">`)
	if i < 0 {
		return ""
	}
	rest := dom[i+len(`<pre id="result">`):]
	if j := strings.Index(rest, "</pre>"); j >= 0 {
		rest = rest[:j]
	}
	return strings.NewReplacer("&quot;", `"`, "&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(rest)
}

// TestBrowserCORS loads a page from another origin (its own httptest
// server) in headless Chromium; the page uses the JavaScript SDK
// (@azure/storage-blob) with a container SAS to upload a blob, list the
// container and download the blob through the gateway. Its first try runs
// while the account has no CORS rules and must be blocked by the browser;
// then the page asks its server to go on, the test sets CORS rules through
// the Go SDK, and the second try must succeed with the headers the rule
// exposes (ETag, x-ms-request-id) readable. One browser start covers both.
func TestBrowserCORS(t *testing.T) {
	start := time.Now()
	chromium := findChromium(t)
	assets := t.TempDir()
	bundlePage(t, assets)
	bundled := time.Now()

	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "web")
	cc := b.client.ServiceClient().NewContainerClient("web")
	mux := http.NewServeMux()
	// Not /index.html: http.ServeFile redirects that to "/".
	mux.HandleFunc("/page.html", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, filepath.Join(browserDir, "index.html"))
	})
	mux.HandleFunc("/bundle.js", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, filepath.Join(assets, "bundle.js"))
	})
	mux.HandleFunc("/favicon.ico", http.NotFound)
	page := httptest.NewServer(mux) // 127.0.0.1, another port: another origin
	t.Cleanup(page.Close)
	var blockedSeen atomic.Bool // the first try wrote its blob
	mux.HandleFunc("POST /ready", func(w http.ResponseWriter, r *http.Request) {
		// The first try is over: it must have left nothing behind.
		_, err := cc.NewBlobClient("blocked.txt").GetProperties(r.Context(), nil)
		blockedSeen.Store(statusOf(err) != 404)
		_, err = b.client.ServiceClient().SetProperties(r.Context(), &service.SetPropertiesOptions{CORS: []*service.CORSRule{{
			AllowedOrigins:  to.Ptr(page.URL),
			AllowedMethods:  to.Ptr("GET,HEAD,PUT,DELETE"),
			AllowedHeaders:  to.Ptr("*"),
			ExposedHeaders:  to.Ptr("*"),
			MaxAgeInSeconds: to.Ptr[int32](60),
		}}})
		if err != nil {
			t.Errorf("setting CORS rules: %v", err)
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})

	sasURL := b.sasURL(t, "web", sas.BlobSignatureValues{
		Protocol: sas.ProtocolHTTPSandHTTP, StartTime: time.Now().UTC().Add(-time.Minute), ExpiryTime: time.Now().UTC().Add(time.Hour),
		ContainerName: "web", Permissions: (&sas.ContainerPermissions{Read: true, Add: true, Create: true, Write: true, List: true}).String(),
	})
	_, token, _ := strings.Cut(sasURL, "?")
	q := url.Values{
		"service":   {strings.TrimSuffix(b.serviceURL(0), "/")},
		"sas":       {token},
		"container": {"web"},
		"before":    {"blocked.txt"},
		"ready":     {"/ready"},
		"blob":      {"from-browser.txt"},
	}
	res := pageResult(dumpDOM(t, chromium, page.URL+"/page.html?"+q.Encode()))
	browsed := time.Now()
	ok, found := strings.CutPrefix(res, "RESULT OK ")
	if !found {
		t.Fatalf("the page reported %q", res)
	}
	var got struct {
		Before string `json:"before"`
		After  struct {
			Names      []string `json:"names"`
			Body       string   `json:"body"`
			UploadETag string   `json:"uploadETag"`
			RequestID  string   `json:"requestId"`
		} `json:"after"`
	}
	if err := json.Unmarshal([]byte(ok), &got); err != nil {
		t.Fatalf("page result %q: %v", ok, err)
	}
	if !strings.HasPrefix(got.Before, "FAIL ") || blockedSeen.Load() {
		t.Fatalf("without CORS rules the browser was not blocked: first try %q, blob written: %v", got.Before, blockedSeen.Load())
	}
	const want = "uploaded by Chromium through blobgw"
	a := got.After
	if !slices.Contains(a.Names, "from-browser.txt") || slices.Contains(a.Names, "blocked.txt") || a.Body != want {
		t.Fatalf("page result with CORS rules: %+v", a)
	}
	if a.UploadETag == "" || a.RequestID == "" {
		t.Fatalf("exposed headers were not readable in the browser: %+v", a)
	}
	if data := download(t, b.client, "web", "from-browser.txt"); string(data) != want {
		t.Fatalf("blob written by the browser: %q", data)
	}
	props, err := cc.NewBlobClient("from-browser.txt").GetProperties(ctx, nil)
	if err != nil || props.ETag == nil || string(*props.ETag) != a.UploadETag {
		t.Fatalf("ETag seen by the browser %q, by the Go SDK %v (%v)", a.UploadETag, props.ETag, err)
	}
	if v := props.Metadata["From"]; v == nil || *v != "browser" {
		t.Fatalf("metadata set by the browser: %v", props.Metadata)
	}
	t.Logf("blocked first try: %s", got.Before)
	t.Logf("runtime: bundle %v, browser %v, total %v", bundled.Sub(start).Round(time.Millisecond),
		browsed.Sub(bundled).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}
