package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/blobgw/blobgw/backends/disk"
	"github.com/blobgw/blobgw/backends/s3/miniotest"
	"github.com/blobgw/blobgw/gateway"
	"github.com/blobgw/blobgw/gateway/auth"
	"github.com/blobgw/blobgw/internal/config"
	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/dbopen"
	"github.com/urfave/cli/v2"
)

// migGateway is one in-process gateway (SQLite, disk backend).
type migGateway struct {
	url    string // service URL with trailing slash
	client *azblob.Client
	wrap   func(http.Handler) http.Handler
}

func newMigGateway(t testing.TB, wrap func(http.Handler) http.Handler) *migGateway {
	t.Helper()
	store, err := dbopen.Open(context.Background(), filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	be, err := disk.New(filepath.Join(t.TempDir(), "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	acct, err := auth.NewAccount(config.DevAccountName, config.DevAccountKey)
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler = gateway.New(&leasedb.DB{Store: store}, be, auth.MapAccounts{config.DevAccountName: acct}, slog.New(slog.NewTextHandler(io.Discard, nil)), gateway.Options{})
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	g := &migGateway{url: srv.URL + "/" + config.DevAccountName + "/"}
	cred, err := azblob.NewSharedKeyCredential(config.DevAccountName, config.DevAccountKey)
	if err != nil {
		t.Fatal(err)
	}
	g.client, err = azblob.NewClientWithSharedKeyCredential(g.url, cred, &azblob.ClientOptions{ClientOptions: azureClientOptions()})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// accountSAS returns the gateway's service URL with a read/list account SAS.
func (g *migGateway) accountSAS(t testing.TB) string { return devAccountSAS(t, g.url) }

// devAccountSAS returns serviceURL with a read/list account SAS of the dev
// account (the gateways' and Azurite's).
func devAccountSAS(t testing.TB, serviceURL string) string {
	t.Helper()
	cred, err := azblob.NewSharedKeyCredential(config.DevAccountName, config.DevAccountKey)
	if err != nil {
		t.Fatal(err)
	}
	qp, err := sas.AccountSignatureValues{
		Protocol:      sas.ProtocolHTTPSandHTTP,
		StartTime:     time.Now().Add(-time.Hour).UTC(),
		ExpiryTime:    time.Now().Add(time.Hour).UTC(),
		Permissions:   to.Ptr(sas.AccountPermissions{Read: true, List: true}).String(),
		ResourceTypes: to.Ptr(sas.AccountResourceTypes{Service: true, Container: true, Object: true}).String(),
	}.SignWithSharedKey(cred)
	if err != nil {
		t.Fatal(err)
	}
	return serviceURL + "?" + qp.Encode()
}

type srcBlob struct {
	container, name string
	data            []byte
	contentType     string
	encoding        string
	metadata        map[string]*string
	putMD5          bool
}

func fillSource(t *testing.T, g *migGateway) []srcBlob {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewSource(1))
	big := make([]byte, 10<<20+123)
	rng.Read(big)
	blobs := []srcBlob{
		{container: "photos", name: "cat.jpg", data: []byte("meow meow"), contentType: "image/jpeg", metadata: map[string]*string{"owner": to.Ptr("alice")}, putMD5: true},
		{container: "photos", name: "dir/sub/dog.png", data: bytes.Repeat([]byte("woof"), 1000), contentType: "image/png", putMD5: true},
		{container: "photos", name: "empty", data: []byte{}, contentType: "application/octet-stream", putMD5: true},
		{container: "docs", name: "big.bin", data: big, contentType: "application/x-big", metadata: map[string]*string{"kind": to.Ptr("large"), "n": to.Ptr("10")}},
		{container: "docs", name: "readme.txt", data: []byte("hello, world\n"), contentType: "text/plain; charset=utf-8", putMD5: true},
		// Stored gzip-compressed: copied as stored, never inflated.
		{container: "docs", name: "page.html", data: gzipped(t, bytes.Repeat([]byte("<p>hi</p>"), 200)), contentType: "text/html", encoding: "gzip"},
		{container: "logs", name: "a.log", data: []byte("line1\nline2\n"), contentType: "text/plain"},
	}
	made := map[string]bool{}
	for _, b := range blobs {
		if !made[b.container] {
			made[b.container] = true
			if _, err := g.client.CreateContainer(ctx, b.container, &container.CreateOptions{Metadata: map[string]*string{"team": to.Ptr("t-" + b.container)}}); err != nil {
				t.Fatal(err)
			}
		}
		bb := g.client.ServiceClient().NewContainerClient(b.container).NewBlockBlobClient(b.name)
		h := &blob.HTTPHeaders{BlobContentType: to.Ptr(b.contentType), BlobCacheControl: to.Ptr("max-age=60"), BlobContentDisposition: to.Ptr("inline")}
		if b.encoding != "" {
			h.BlobContentEncoding = &b.encoding
		}
		if b.putMD5 {
			sum := md5.Sum(b.data)
			h.BlobContentMD5 = sum[:]
		}
		if _, err := bb.UploadBuffer(ctx, b.data, &blockblob.UploadBufferOptions{BlockSize: 4 << 20, HTTPHeaders: h, Metadata: b.metadata}); err != nil {
			t.Fatalf("%s/%s: %v", b.container, b.name, err)
		}
	}
	return blobs
}

func gzipped(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// checkImported compares every source blob with the destination.
// conts are the containers whose metadata must have been copied.
func checkImported(t *testing.T, src, dst *migGateway, blobs []srcBlob, conts ...string) {
	t.Helper()
	ctx := context.Background()
	for _, b := range blobs {
		sp, err := src.client.ServiceClient().NewContainerClient(b.container).NewBlobClient(b.name).GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		db := dst.client.ServiceClient().NewContainerClient(b.container).NewBlobClient(b.name)
		dp, err := db.GetProperties(ctx, nil)
		if err != nil {
			t.Fatalf("%s/%s at destination: %v", b.container, b.name, err)
		}
		dl, err := db.DownloadStream(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(dl.Body)
		dl.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, b.data) {
			t.Errorf("%s/%s: %d bytes differ from the source's %d", b.container, b.name, len(got), len(b.data))
		}
		sum := md5.Sum(b.data)
		if !bytes.Equal(dp.ContentMD5, sum[:]) {
			t.Errorf("%s/%s: Content-MD5 %x, want %x", b.container, b.name, dp.ContentMD5, sum)
		}
		for name, pair := range map[string][2]*string{
			"content type": {sp.ContentType, dp.ContentType}, "cache control": {sp.CacheControl, dp.CacheControl},
			"disposition": {sp.ContentDisposition, dp.ContentDisposition}, "encoding": {sp.ContentEncoding, dp.ContentEncoding},
			"language": {sp.ContentLanguage, dp.ContentLanguage},
		} {
			if deref(pair[0]) != deref(pair[1]) {
				t.Errorf("%s/%s: %s %q, want %q", b.container, b.name, name, deref(pair[1]), deref(pair[0]))
			}
		}
		for k, v := range sp.Metadata {
			if metaValue(dp.Metadata, k) != deref(v) {
				t.Errorf("%s/%s: metadata %s = %q, want %q", b.container, b.name, k, metaValue(dp.Metadata, k), deref(v))
			}
		}
		if metaValue(dp.Metadata, importETagKey) != strings.Trim(string(*sp.ETag), `"`) {
			t.Errorf("%s/%s: import marker %q, want source ETag %q", b.container, b.name, metaValue(dp.Metadata, importETagKey), *sp.ETag)
		}
	}
	for _, cont := range conts {
		p, err := dst.client.ServiceClient().NewContainerClient(cont).GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if metaValue(p.Metadata, "team") != "t-"+cont {
			t.Errorf("container %s metadata %v", cont, p.Metadata)
		}
	}
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// runAppCtx is runApp with a context.
func runAppCtx(t testing.TB, ctx context.Context, args ...string) (string, int) {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "BLOBGW_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	var out bytes.Buffer
	app := newApp()
	app.Writer = &out
	app.ErrWriter = &out
	err := app.RunContext(ctx, append([]string{"blobgw"}, args...))
	code := 0
	if err != nil {
		code = 1
		var ec cli.ExitCoder
		if errors.As(err, &ec) {
			code = ec.ExitCode()
		}
		out.WriteString(err.Error())
	}
	return out.String(), code
}

func TestImportAzure(t *testing.T) {
	src := newMigGateway(t, nil)
	dst := newMigGateway(t, nil)
	blobs := fillSource(t, src)
	args := []string{"import", "azure", "--source-url", src.accountSAS(t), "--dest-url", dst.url}

	out, code := runApp(t, nil, args...)
	if code != 0 {
		t.Fatalf("import exit %d:\n%s", code, out)
	}
	if !strings.Contains(out, fmt.Sprintf("copied %d, skipped 0, failed 0", len(blobs))) {
		t.Fatalf("first run summary:\n%s", out)
	}
	if !strings.Contains(out, fmt.Sprintf("%d/%d objects", len(blobs), len(blobs))) {
		t.Errorf("no progress line:\n%s", out)
	}
	checkImported(t, src, dst, blobs, "photos", "docs", "logs")

	// Second run: everything is already there.
	out, code = runApp(t, nil, args...)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("copied 0, skipped %d, failed 0", len(blobs))) {
		t.Fatalf("second run (%d):\n%s", code, out)
	}

	// A changed source blob is copied again.
	if _, err := src.client.UploadBuffer(context.Background(), "logs", "a.log", []byte("line1\nline2\nline3\n"), nil); err != nil {
		t.Fatal(err)
	}
	blobs[len(blobs)-1].data = []byte("line1\nline2\nline3\n")
	out, code = runApp(t, nil, args...)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("copied 1, skipped %d, failed 0", len(blobs)-1)) {
		t.Fatalf("run after a change (%d):\n%s", code, out)
	}
	checkImported(t, src, dst, blobs, "photos", "docs", "logs")

	// One container only, from a connection string for the destination.
	dst2 := newMigGateway(t, nil)
	conn := "DefaultEndpointsProtocol=http;AccountName=" + config.DevAccountName + ";AccountKey=" + config.DevAccountKey + ";BlobEndpoint=" + strings.TrimSuffix(dst2.url, "/") + ";"
	out, code = runApp(t, nil, "import", "azure", "--source-url", src.accountSAS(t), "--dest-connection-string", conn, "--container", "docs")
	if code != 0 || !strings.Contains(out, "copied 3, skipped 0, failed 0") {
		t.Fatalf("--container docs (%d):\n%s", code, out)
	}
	if _, err := dst2.client.ServiceClient().NewContainerClient("photos").GetProperties(context.Background(), nil); err == nil {
		t.Errorf("--container docs also created photos")
	}
}

func TestImportAzureContainerSAS(t *testing.T) {
	src := newMigGateway(t, nil)
	dst := newMigGateway(t, nil)
	blobs := fillSource(t, src)
	cred, err := azblob.NewSharedKeyCredential(config.DevAccountName, config.DevAccountKey)
	if err != nil {
		t.Fatal(err)
	}
	qp, err := sas.BlobSignatureValues{
		Protocol:      sas.ProtocolHTTPSandHTTP,
		StartTime:     time.Now().Add(-time.Hour).UTC(),
		ExpiryTime:    time.Now().Add(time.Hour).UTC(),
		Permissions:   to.Ptr(sas.ContainerPermissions{Read: true, List: true}).String(),
		ContainerName: "photos",
	}.SignWithSharedKey(cred)
	if err != nil {
		t.Fatal(err)
	}
	out, code := runApp(t, nil, "import", "azure", "--source-url", src.url+"photos?"+qp.Encode(), "--dest-url", dst.url)
	if code != 0 || !strings.Contains(out, "copied 3, skipped 0, failed 0") {
		t.Fatalf("container SAS import (%d):\n%s", code, out)
	}
	// A container SAS cannot read container metadata, so only blobs are checked.
	checkImported(t, src, dst, blobs[:3])
}

func TestImportAzureInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var once sync.Once
	// The destination cancels the import once it has stored its first blob
	// (a Put Blob or Put Block List), before the copy is verified.
	src := newMigGateway(t, nil)
	dst := newMigGateway(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(w, r)
			q := r.URL.Query()
			if r.Method == http.MethodPut && q.Get("restype") == "" && (q.Get("comp") == "" || q.Get("comp") == "blocklist") {
				once.Do(cancel)
			}
		})
	})
	blobs := fillSource(t, src)
	args := []string{"import", "azure", "--source-url", src.accountSAS(t), "--dest-url", dst.url, "--parallel", "1"}

	out, code := runAppCtx(t, ctx, args...)
	if code != 1 || !strings.Contains(out, "interrupted") {
		t.Fatalf("interrupted run (%d):\n%s", code, out)
	}
	t.Logf("interrupted run:\n%s", out)
	out, code = runApp(t, nil, args...)
	if code != 0 || !strings.Contains(out, "failed 0") || strings.Contains(out, "skipped 0,") {
		t.Fatalf("rerun (%d):\n%s", code, out)
	}
	t.Logf("rerun:\n%s", out)
	checkImported(t, src, dst, blobs, "photos", "docs", "logs")
	out, code = runApp(t, nil, args...)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("copied 0, skipped %d, failed 0", len(blobs))) {
		t.Fatalf("third run (%d):\n%s", code, out)
	}
}

func TestImportAzureMissingSourceBlob(t *testing.T) {
	// A blob deleted after the listing fails that blob only; exit 1.
	var once sync.Once
	var srcRef *migGateway
	src := newMigGateway(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("comp") == "list" && r.URL.Query().Get("restype") == "container" && strings.Contains(r.URL.Path, "/logs") {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, r)
				once.Do(func() {
					srcRef.client.DeleteBlob(context.Background(), "logs", "a.log", nil)
				})
				for k, v := range rec.Header() {
					w.Header()[k] = v
				}
				w.WriteHeader(rec.Code)
				w.Write(rec.Body.Bytes())
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	srcRef = src
	dst := newMigGateway(t, nil)
	blobs := fillSource(t, src)
	out, code := runApp(t, nil, "import", "azure", "--source-url", src.accountSAS(t), "--dest-url", dst.url)
	if code != 1 || !strings.Contains(out, "failed 1") || !strings.Contains(out, "logs/a.log") {
		t.Fatalf("(%d):\n%s", code, out)
	}
	checkImported(t, src, dst, blobs[:len(blobs)-1], "photos", "docs", "logs")
	// The rerun no longer sees it and succeeds.
	out, code = runApp(t, nil, "import", "azure", "--source-url", src.accountSAS(t), "--dest-url", dst.url)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("copied 0, skipped %d, failed 0", len(blobs)-1)) {
		t.Fatalf("rerun (%d):\n%s", code, out)
	}
}

func TestExportS3(t *testing.T) {
	// No miniotest.Main here (TestMain is pgtest.Main), so start a private
	// server and stop it with the test.
	srv, err := miniotest.StartServer()
	if err != nil {
		if errors.Is(err, miniotest.ErrNotInstalled) {
			t.Skipf("export s3 test needs MinIO: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	cfg := srv.NewBucket(t)

	src := newMigGateway(t, nil)
	blobs := fillSource(t, src)
	args := []string{"export", "s3", "--source-url", src.url, "--endpoint", cfg.Endpoint, "--region", cfg.Region,
		"--bucket", cfg.Bucket, "--prefix", "gw/", "--access-key", cfg.AccessKey, "--secret-key", cfg.SecretKey, "--path-style"}
	out, code := runApp(t, nil, args...)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("copied %d, skipped 0, failed 0", len(blobs))) {
		t.Fatalf("export (%d):\n%s", code, out)
	}
	ctx := context.Background()
	for _, b := range blobs {
		key := "gw/" + b.container + "/" + b.name
		obj, err := srv.Client().GetObject(ctx, &awss3.GetObjectInput{Bucket: &cfg.Bucket, Key: &key})
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		got, err := io.ReadAll(obj.Body)
		obj.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, b.data) {
			t.Errorf("%s: bytes differ", key)
		}
		if deref(obj.ContentType) != b.contentType {
			t.Errorf("%s: content type %q, want %q", key, deref(obj.ContentType), b.contentType)
		}
		for k, v := range b.metadata {
			if obj.Metadata[k] != *v {
				t.Errorf("%s: metadata %s = %q, want %q (%v)", key, k, obj.Metadata[k], *v, obj.Metadata)
			}
		}
	}
	out, code = runApp(t, nil, args...)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("copied 0, skipped %d, failed 0", len(blobs))) {
		t.Fatalf("second export (%d):\n%s", code, out)
	}
}
