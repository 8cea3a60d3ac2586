package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/appendblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/blobgw/blobgw/backends/s3"
	"github.com/blobgw/blobgw/backends/s3/miniotest"
	"github.com/blobgw/blobgw/gateway"
	"github.com/blobgw/blobgw/internal/config"
	"github.com/blobgw/blobgw/internal/gwtest"
	"github.com/blobgw/blobgw/leasedb"
)

// migGateway is one in-process gateway (SQLite, disk backend).
type migGateway struct {
	url    string // service URL with trailing slash
	client *azblob.Client
	store  leasedb.Store
}

func newMigGateway(t testing.TB, wrap func(http.Handler) http.Handler) *migGateway {
	t.Helper()
	return newMigGatewayWith(t, wrap, gateway.Options{})
}

// newMigGatewayWith is newMigGateway with the gateway's options.
func newMigGatewayWith(t testing.TB, wrap func(http.Handler) http.Handler, opt gateway.Options) *migGateway {
	t.Helper()
	store := gwtest.OpenStore(t, filepath.Join(t.TempDir(), "meta.db"))
	var h http.Handler = gwtest.Gateway(t, store, gwtest.DiskBackend(t, t.TempDir()), opt)
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	g := &migGateway{url: srv.URL + "/" + config.DevAccountName + "/", store: store}
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

// tagsSAS is accountSAS that may also read tags (t): List Blobs
// include=tags needs it, as Get Blob Tags does.
func (g *migGateway) tagsSAS(t testing.TB) string {
	return devAccountSASWith(t, g.url, sas.AccountPermissions{Read: true, List: true, Tag: true})
}

// devAccountSAS returns serviceURL with a read/list account SAS of the dev
// account (the gateways' and Azurite's).
func devAccountSAS(t testing.TB, serviceURL string) string {
	t.Helper()
	return devAccountSASWith(t, serviceURL, sas.AccountPermissions{Read: true, List: true})
}

// devAccountSASWith is devAccountSAS with other permissions.
func devAccountSASWith(t testing.TB, serviceURL string, perms sas.AccountPermissions) string {
	t.Helper()
	cred, err := azblob.NewSharedKeyCredential(config.DevAccountName, config.DevAccountKey)
	if err != nil {
		t.Fatal(err)
	}
	qp, err := sas.AccountSignatureValues{
		Protocol:      sas.ProtocolHTTPSandHTTP,
		StartTime:     time.Now().Add(-time.Hour).UTC(),
		ExpiryTime:    time.Now().Add(time.Hour).UTC(),
		Permissions:   perms.String(),
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

// runInterrupted runs args with ctx, which the destination cancels
// midway (see cancelAfter), and fails t unless the run ends with exit 1
// saying it was interrupted. It returns the output.
func runInterrupted(t *testing.T, ctx context.Context, args ...string) string {
	t.Helper()
	return runCLICtx(t, ctx, args...).fails(t, 1, "interrupted")
}

// cancelAfter wraps a destination gateway's handler so that it calls
// cancel, once, right after serving the first request stop matches: an
// import running with the cancelled context stops as if interrupted at
// that write.
func cancelAfter(cancel context.CancelFunc, stop func(r *http.Request) bool) func(http.Handler) http.Handler {
	var once sync.Once
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(w, r)
			if stop(r) {
				once.Do(cancel)
			}
		})
	}
}

func TestImportAzure(t *testing.T) {
	src := newMigGateway(t, nil)
	dst := newMigGateway(t, nil)
	blobs := fillSource(t, src)
	args := []string{"import", "azure", "--source-url", src.accountSAS(t), "--dest-url", dst.url}

	// The summary and the progress line.
	runCLI(t, nil, args...).ok(t, fmt.Sprintf("copied %d, skipped 0, failed 0", len(blobs)), fmt.Sprintf("%d/%d objects", len(blobs), len(blobs)))
	checkImported(t, src, dst, blobs, "photos", "docs", "logs")

	// Second run: everything is already there.
	runCLI(t, nil, args...).ok(t, fmt.Sprintf("copied 0, skipped %d, failed 0", len(blobs)))

	// A changed source blob is copied again.
	if _, err := src.client.UploadBuffer(context.Background(), "logs", "a.log", []byte("line1\nline2\nline3\n"), nil); err != nil {
		t.Fatal(err)
	}
	blobs[len(blobs)-1].data = []byte("line1\nline2\nline3\n")
	runCLI(t, nil, args...).ok(t, fmt.Sprintf("copied 1, skipped %d, failed 0", len(blobs)-1))
	checkImported(t, src, dst, blobs, "photos", "docs", "logs")

	// One container only, from a connection string for the destination.
	dst2 := newMigGateway(t, nil)
	conn := "DefaultEndpointsProtocol=http;AccountName=" + config.DevAccountName + ";AccountKey=" + config.DevAccountKey + ";BlobEndpoint=" + strings.TrimSuffix(dst2.url, "/") + ";"
	runCLI(t, nil, "import", "azure", "--source-url", src.accountSAS(t), "--dest-connection-string", conn, "--container", "docs").
		ok(t, "copied 3, skipped 0, failed 0")
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
	runCLI(t, nil, "import", "azure", "--source-url", src.url+"photos?"+qp.Encode(), "--dest-url", dst.url).
		ok(t, "copied 3, skipped 0, failed 0", "photos: the source container's properties cannot be read")
	// A container SAS cannot read container metadata (the run says so), so
	// only blobs are checked.
	checkImported(t, src, dst, blobs[:3])
}

func TestImportAzureInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The destination cancels the import once it has stored its first blob
	// (a Put Blob or Put Block List), before the copy is verified.
	src := newMigGateway(t, nil)
	dst := newMigGateway(t, cancelAfter(cancel, func(r *http.Request) bool {
		q := r.URL.Query()
		return r.Method == http.MethodPut && q.Get("restype") == "" && (q.Get("comp") == "" || q.Get("comp") == "blocklist")
	}))
	blobs := fillSource(t, src)
	args := []string{"import", "azure", "--source-url", src.accountSAS(t), "--dest-url", dst.url, "--parallel", "1"}

	t.Logf("interrupted run:\n%s", runInterrupted(t, ctx, args...))
	out := runCLI(t, nil, args...).without("skipped 0,").ok(t, "failed 0")
	t.Logf("rerun:\n%s", out)
	checkImported(t, src, dst, blobs, "photos", "docs", "logs")
	runCLI(t, nil, args...).ok(t, fmt.Sprintf("copied 0, skipped %d, failed 0", len(blobs)))
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
	runCLI(t, nil, "import", "azure", "--source-url", src.accountSAS(t), "--dest-url", dst.url).fails(t, 1, "failed 1", "logs/a.log")
	checkImported(t, src, dst, blobs[:len(blobs)-1], "photos", "docs", "logs")
	// The rerun no longer sees it and succeeds.
	runCLI(t, nil, "import", "azure", "--source-url", src.accountSAS(t), "--dest-url", dst.url).
		ok(t, fmt.Sprintf("copied 0, skipped %d, failed 0", len(blobs)-1))
}

func TestExportS3(t *testing.T) {
	bucket := startExportBucket(t)
	src := newMigGateway(t, nil)
	blobs := fillSource(t, src)
	args := bucket.exportArgs(src)
	runCLI(t, nil, args...).ok(t, fmt.Sprintf("copied %d, skipped 0, failed 0", len(blobs)))
	for _, b := range blobs {
		key := "gw/" + b.container + "/" + b.name
		obj, got := bucket.object(t, key)
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
	runCLI(t, nil, args...).ok(t, fmt.Sprintf("copied 0, skipped %d, failed 0", len(blobs)))
}

// exportBucket is the target of an `export s3` test: a private MinIO
// server (TestMain here is pgtest.Main, not miniotest.Main) that stops
// with the test, and a bucket on it.
type exportBucket struct {
	srv *miniotest.Server
	cfg s3.Config
}

func startExportBucket(t *testing.T) *exportBucket {
	t.Helper()
	srv, err := miniotest.StartServer()
	if err != nil {
		if errors.Is(err, miniotest.ErrNotInstalled) {
			t.Skipf("export s3 test needs MinIO: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	return &exportBucket{srv: srv, cfg: srv.NewBucket(t)}
}

// exportArgs are the arguments of `export s3` that copy src's blobs into
// the bucket under gw/.
func (e *exportBucket) exportArgs(src *migGateway) []string {
	cfg := e.cfg
	return []string{"export", "s3", "--source-url", src.url, "--endpoint", cfg.Endpoint, "--region", cfg.Region,
		"--bucket", cfg.Bucket, "--prefix", "gw/", "--access-key", cfg.AccessKey, "--secret-key", cfg.SecretKey, "--path-style"}
}

// object gets the object at key and reads its bytes.
func (e *exportBucket) object(t *testing.T, key string) (*awss3.GetObjectOutput, []byte) {
	t.Helper()
	obj, err := e.srv.Client().GetObject(context.Background(), &awss3.GetObjectInput{Bucket: &e.cfg.Bucket, Key: &key})
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	got, err := io.ReadAll(obj.Body)
	obj.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return obj, got
}

// kindsContainer holds the blobs of fillKinds.
const kindsContainer = "kinds"

// kindBlob is one source blob of fillKinds: an append blob or a block
// blob with a tier and index tags.
type kindBlob struct {
	name     string
	typ      blob.BlobType
	data     []byte
	appends  []int // an append blob's Append Block sizes, in order
	headers  blob.HTTPHeaders
	metadata map[string]*string
	tier     blob.AccessTier // "": none set (inferred)
	tags     map[string]string
}

// fillKinds writes container kinds through c (a gateway or Azurite): an
// append blob of three appends (5 MiB in all: two blocks of at most 4 MiB
// at the destination), an empty append blob, a block blob with tier Cool
// and tags, a block-list blob (4 MiB + 100) with tier Cold, and a plain
// block blob whose tier is inferred.
func fillKinds(t *testing.T, c *azblob.Client) []kindBlob {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewSource(7))
	logData := make([]byte, 1000+5<<20+7+10)
	rng.Read(logData)
	bigData := make([]byte, 4<<20+100)
	rng.Read(bigData)
	coolData := bytes.Repeat([]byte("cool "), 600)
	coolSum := md5.Sum(coolData)
	blobs := []kindBlob{
		{name: "cold-big.bin", typ: blob.BlobTypeBlockBlob, data: bigData, tier: blob.AccessTierCold,
			headers: blob.HTTPHeaders{BlobContentType: to.Ptr("application/x-cold")}},
		{name: "cool.bin", typ: blob.BlobTypeBlockBlob, data: coolData, tier: blob.AccessTierCool,
			tags:     map[string]string{"project": "x", "n": "1"},
			headers:  blob.HTTPHeaders{BlobContentType: to.Ptr("application/x-cool"), BlobContentMD5: coolSum[:]},
			metadata: map[string]*string{"owner": to.Ptr("bob")}},
		{name: "log/app.log", typ: blob.BlobTypeAppendBlob, data: logData, appends: []int{1000, 5<<20 + 7, 10},
			tags: map[string]string{"kind": "log"},
			headers: blob.HTTPHeaders{BlobContentType: to.Ptr("text/plain; charset=utf-8"), BlobCacheControl: to.Ptr("no-store"),
				BlobContentDisposition: to.Ptr("inline"), BlobContentLanguage: to.Ptr("en")},
			metadata: map[string]*string{"svc": to.Ptr("api"), "Shard": to.Ptr("3")}},
		{name: "log/empty.log", typ: blob.BlobTypeAppendBlob, data: []byte{},
			headers: blob.HTTPHeaders{BlobContentType: to.Ptr("text/plain")}},
		{name: "plain.txt", typ: blob.BlobTypeBlockBlob, data: []byte("plain\n"),
			headers: blob.HTTPHeaders{BlobContentType: to.Ptr("text/plain")}},
	}
	if _, err := c.CreateContainer(ctx, kindsContainer, &container.CreateOptions{Metadata: map[string]*string{"team": to.Ptr("t-" + kindsContainer)}}); err != nil {
		t.Fatal(err)
	}
	cc := c.ServiceClient().NewContainerClient(kindsContainer)
	for _, b := range blobs {
		h := b.headers
		var err error
		switch {
		case b.typ == blob.BlobTypeAppendBlob:
			ab := cc.NewAppendBlobClient(b.name)
			if _, err = ab.Create(ctx, &appendblob.CreateOptions{HTTPHeaders: &h, Metadata: b.metadata, Tags: b.tags}); err != nil {
				break
			}
			off := 0
			for _, n := range b.appends {
				if _, err = ab.AppendBlock(ctx, streaming.NopCloser(bytes.NewReader(b.data[off:off+n])), nil); err != nil {
					break
				}
				off += n
			}
			if err == nil && off != len(b.data) {
				t.Fatalf("%s: appends cover %d of %d bytes", b.name, off, len(b.data))
			}
		case len(b.data) > 4<<20:
			var tier *blob.AccessTier
			if b.tier != "" {
				tier = &b.tier
			}
			_, err = cc.NewBlockBlobClient(b.name).UploadStream(ctx, bytes.NewReader(b.data), &blockblob.UploadStreamOptions{
				BlockSize: 1 << 20, HTTPHeaders: &h, Metadata: b.metadata, Tags: b.tags, AccessTier: tier})
		default:
			var tier *blob.AccessTier
			if b.tier != "" {
				tier = &b.tier
			}
			_, err = cc.NewBlockBlobClient(b.name).UploadBuffer(ctx, b.data, &blockblob.UploadBufferOptions{
				HTTPHeaders: &h, Metadata: b.metadata, Tags: b.tags, AccessTier: tier})
		}
		if err != nil {
			t.Fatalf("source %s: %v", b.name, err)
		}
	}
	// The source really holds what the test means: types, tiers, tags.
	checkKinds(t, c, blobs, false)
	return blobs
}

// kindSrcBlobs are blobs as checkImported takes them.
func kindSrcBlobs(blobs []kindBlob) []srcBlob {
	var out []srcBlob
	for _, b := range blobs {
		out = append(out, srcBlob{container: kindsContainer, name: b.name, data: b.data})
	}
	return out
}

// checkKinds checks what checkImported does not: each blob's type, tier,
// index tags and, at a destination (dest), that an append blob was
// appended in blocks of at most 4 MiB.
func checkKinds(t *testing.T, c *azblob.Client, blobs []kindBlob, dest bool) {
	t.Helper()
	ctx := context.Background()
	cc := c.ServiceClient().NewContainerClient(kindsContainer)
	for _, b := range blobs {
		bc := cc.NewBlobClient(b.name)
		p, err := bc.GetProperties(ctx, nil)
		if err != nil {
			t.Fatalf("%s: %v", b.name, err)
		}
		if p.BlobType == nil || *p.BlobType != b.typ {
			t.Errorf("%s: blob type %v, want %s", b.name, p.BlobType, b.typ)
		}
		if b.tier != "" && (deref(p.AccessTier) != string(b.tier) || (p.AccessTierInferred != nil && *p.AccessTierInferred)) {
			t.Errorf("%s: tier %q (inferred %v), want %s", b.name, deref(p.AccessTier), p.AccessTierInferred, b.tier)
		}
		if b.tier == "" && b.typ == blob.BlobTypeBlockBlob && (p.AccessTierInferred == nil || !*p.AccessTierInferred) {
			t.Errorf("%s: tier %q set, want the inferred default", b.name, deref(p.AccessTier))
		}
		if got := blobTags(t, bc); !maps.Equal(got, b.tags) && (len(got) != 0 || len(b.tags) != 0) {
			t.Errorf("%s: tags %v, want %v", b.name, got, b.tags)
		}
		if dest && b.typ == blob.BlobTypeAppendBlob {
			want := (len(b.data) + appendBlockSize - 1) / appendBlockSize
			if p.BlobCommittedBlockCount == nil || int(*p.BlobCommittedBlockCount) != want {
				t.Errorf("%s: %v appended blocks, want %d (of at most 4 MiB)", b.name, p.BlobCommittedBlockCount, want)
			}
		}
	}
}

// blobTags reads a blob's index tags with Get Blob Tags.
func blobTags(t *testing.T, bc *blob.Client) map[string]string {
	t.Helper()
	r, err := bc.GetTags(context.Background(), nil)
	if err != nil {
		t.Fatalf("tags of %s: %v", bc.URL(), err)
	}
	got := map[string]string{}
	for _, tag := range r.BlobTagSet {
		got[deref(tag.Key)] = deref(tag.Value)
	}
	return got
}

// checkAppendable appends to the imported append blob name of c: it is a
// working append blob, not a copy of one. It returns the blob's bytes
// with the append.
func checkAppendable(t *testing.T, c *azblob.Client, name string, data []byte) []byte {
	t.Helper()
	ab := c.ServiceClient().NewContainerClient(kindsContainer).NewAppendBlobClient(name)
	more := []byte("appended at the destination\n")
	r, err := ab.AppendBlock(context.Background(), streaming.NopCloser(bytes.NewReader(more)), nil)
	if err != nil {
		t.Fatalf("append to the imported %s: %v", name, err)
	}
	if r.BlobAppendOffset == nil || *r.BlobAppendOffset != strconv.Itoa(len(data)) {
		t.Errorf("append to %s at offset %v, want %d", name, r.BlobAppendOffset, len(data))
	}
	want := append(slices.Clone(data), more...)
	if got := download(t, ab.BlobClient()); !bytes.Equal(got, want) {
		t.Errorf("%s after the append: %d bytes, want %d", name, len(got), len(data)+len(more))
	}
	return want
}

// countWrites wraps a gateway and counts the requests that carry blob
// bytes (Put Blob, Put Block, Put Block List, Append Block).
func countWrites(n *atomic.Int64) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			comp := r.URL.Query().Get("comp")
			if r.Method == http.MethodPut && ((comp == "" && r.Header.Get("x-ms-blob-type") != "") || comp == "block" || comp == "blocklist" || comp == "appendblock") {
				n.Add(1)
			}
			h.ServeHTTP(w, r)
		})
	}
}

func TestImportAzureAppendTierTags(t *testing.T) {
	ctx := context.Background()
	var writes atomic.Int64
	src := newMigGateway(t, nil)
	dst := newMigGateway(t, countWrites(&writes))
	kinds := fillKinds(t, src.client)
	blobs := kindSrcBlobs(kinds)
	args := []string{"import", "azure", "--source-url", src.tagsSAS(t), "--dest-url", dst.url}

	runCLI(t, nil, args...).ok(t, fmt.Sprintf("copied %d, skipped 0, failed 0", len(kinds)))
	checkImported(t, src, dst, blobs, kindsContainer)
	checkKinds(t, dst.client, kinds, true)

	runCLI(t, nil, args...).ok(t, fmt.Sprintf("copied 0, skipped %d, failed 0", len(kinds)))

	// A wrong tier at the destination and new tags at the source (Set
	// Blob Tags keeps the source's ETag) are fixed by a rerun that copies
	// no bytes.
	dc := dst.client.ServiceClient().NewContainerClient(kindsContainer)
	if _, err := dc.NewBlobClient("cool.bin").SetTier(ctx, blob.AccessTierHot, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := dc.NewBlobClient("plain.txt").SetTags(ctx, map[string]string{"stray": "1"}, nil); err != nil {
		t.Fatal(err)
	}
	sc := src.client.ServiceClient().NewContainerClient(kindsContainer)
	newTags := map[string]string{"project": "y", "n": "2", "extra": "z"}
	if _, err := sc.NewBlobClient("cool.bin").SetTags(ctx, newTags, nil); err != nil {
		t.Fatal(err)
	}
	for i := range kinds {
		if kinds[i].name == "cool.bin" {
			kinds[i].tags = newTags
		}
	}
	writes.Store(0)
	runCLI(t, nil, args...).ok(t, fmt.Sprintf("copied 0, skipped %d, failed 0", len(kinds)))
	if n := writes.Load(); n != 0 {
		t.Errorf("fixing a tier and tags sent %d byte-carrying requests, want 0", n)
	}
	checkKinds(t, dst.client, kinds, true)

	// The imported append blob takes appends; a rerun keeps the appends
	// the gateway took (an application's, after the cutover) and says so,
	// rather than putting the shorter source back over them.
	var app kindBlob
	for _, k := range kinds {
		if k.name == "log/app.log" {
			app = k
		}
	}
	appended := checkAppendable(t, dst.client, app.name, app.data)
	runCLI(t, nil, args...).ok(t, fmt.Sprintf("copied 0, skipped %d, failed 0", len(kinds)),
		kindsContainer+"/"+app.name+": the destination append blob was appended to after the import copied it")
	if got := download(t, dc.NewBlobClient(app.name)); !bytes.Equal(got, appended) {
		t.Errorf("%s after the rerun: %d bytes, want the %d with the gateway's append", app.name, len(got), len(appended))
	}
	others := slices.DeleteFunc(slices.Clone(kinds), func(k kindBlob) bool { return k.name == app.name })
	checkImported(t, src, dst, kindSrcBlobs(others), kindsContainer)
	checkKinds(t, dst.client, others, true)

	// An archived source blob cannot be read: it fails, clearly, until it
	// is rehydrated. A copied blob archived later is archived at the
	// destination too, without a copy.
	frozen := []byte("frozen bytes")
	if _, err := sc.NewBlockBlobClient("frozen.bin").UploadBuffer(ctx, frozen, &blockblob.UploadBufferOptions{
		HTTPHeaders: &blob.HTTPHeaders{BlobContentType: to.Ptr("text/plain")}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"frozen.bin", "plain.txt"} {
		if _, err := sc.NewBlobClient(name).SetTier(ctx, blob.AccessTierArchive, nil); err != nil {
			t.Fatal(err)
		}
	}
	runCLI(t, nil, args...).without("RESPONSE").
		fails(t, 1, fmt.Sprintf("copied 0, skipped %d, failed 1", len(kinds)), "kinds/frozen.bin: the source blob is in the Archive tier")
	if p, err := dc.NewBlobClient("plain.txt").GetProperties(ctx, nil); err != nil || deref(p.AccessTier) != string(blob.AccessTierArchive) {
		t.Errorf("plain.txt archived at the source: destination tier %v (%v)", p.AccessTier, err)
	}
	if _, err := sc.NewBlobClient("frozen.bin").SetTier(ctx, blob.AccessTierHot, nil); err != nil {
		t.Fatal(err)
	}
	runCLI(t, nil, args...).ok(t, fmt.Sprintf("copied 1, skipped %d, failed 0", len(kinds)))
	if p, err := dc.NewBlobClient("frozen.bin").GetProperties(ctx, nil); err != nil || deref(p.AccessTier) != string(blob.AccessTierHot) {
		t.Errorf("rehydrated frozen.bin: destination tier %v (%v)", p.AccessTier, err)
	}
}

func TestImportAzureReplacesWrongType(t *testing.T) {
	ctx := context.Background()
	src := newMigGateway(t, nil)
	dst := newMigGateway(t, nil)
	kinds := fillKinds(t, src.client)
	sc := src.client.ServiceClient().NewContainerClient(kindsContainer)
	if _, err := dst.client.CreateContainer(ctx, kindsContainer, nil); err != nil {
		t.Fatal(err)
	}
	dc := dst.client.ServiceClient().NewContainerClient(kindsContainer)
	marker := func(name string) map[string]*string {
		p, err := sc.NewBlobClient(name).GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		return map[string]*string{importETagKey: to.Ptr(strings.Trim(string(*p.ETag), `"`))}
	}
	for _, k := range kinds {
		switch k.name {
		case "log/app.log":
			// What the importer used to make of an append blob: a block
			// blob with the same bytes, MD5 and source ETag. Only the type
			// tells it apart.
			sum := md5.Sum(k.data)
			if _, err := dc.NewBlockBlobClient(k.name).UploadBuffer(ctx, k.data, &blockblob.UploadBufferOptions{
				HTTPHeaders: &blob.HTTPHeaders{BlobContentMD5: sum[:]}, Metadata: marker(k.name)}); err != nil {
				t.Fatal(err)
			}
		case "log/empty.log":
			// An append blob with every byte (none) and the marker but no
			// Content-MD5 yet: a copy interrupted before its last step.
			if _, err := dc.NewAppendBlobClient(k.name).Create(ctx, &appendblob.CreateOptions{Metadata: marker(k.name)}); err != nil {
				t.Fatal(err)
			}
		case "cold-big.bin", "cool.bin":
			// Append blobs where block blobs belong (the first is a block
			// list at the source, and Put Block refuses an append blob).
			ab := dc.NewAppendBlobClient(k.name)
			if _, err := ab.Create(ctx, &appendblob.CreateOptions{Metadata: marker(k.name)}); err != nil {
				t.Fatal(err)
			}
			if _, err := ab.AppendBlock(ctx, streaming.NopCloser(bytes.NewReader(k.data[:10])), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	args := []string{"import", "azure", "--source-url", src.tagsSAS(t), "--dest-url", dst.url}
	runCLI(t, nil, args...).ok(t, fmt.Sprintf("copied %d, skipped 0, failed 0", len(kinds)))
	checkImported(t, src, dst, kindSrcBlobs(kinds))
	checkKinds(t, dst.client, kinds, true)
	runCLI(t, nil, args...).ok(t, fmt.Sprintf("copied 0, skipped %d, failed 0", len(kinds)))
}

func TestImportAzureAppendInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The destination cancels the import once the first block of the
	// append blob is in: the run stops with a partial append blob, which
	// (unlike a block blob before its commit) is visible.
	src := newMigGateway(t, nil)
	dst := newMigGateway(t, cancelAfter(cancel, func(r *http.Request) bool {
		return r.Method == http.MethodPut && r.URL.Query().Get("comp") == "appendblock" && strings.HasSuffix(r.URL.Path, "/log/app.log")
	}))
	kinds := fillKinds(t, src.client)
	args := []string{"import", "azure", "--source-url", src.tagsSAS(t), "--dest-url", dst.url, "--parallel", "1"}
	out := runInterrupted(t, ctx, args...)
	p, err := dst.client.ServiceClient().NewContainerClient(kindsContainer).NewBlobClient("log/app.log").GetProperties(context.Background(), nil)
	if err != nil {
		t.Fatalf("no partial append blob after the interruption: %v\n%s", err, out)
	}
	if p.ContentMD5 != nil || deref64(p.ContentLength) != appendBlockSize {
		t.Fatalf("partial append blob: %d bytes, Content-MD5 %x; want %d bytes and none", deref64(p.ContentLength), p.ContentMD5, appendBlockSize)
	}
	t.Logf("interrupted run:\n%s", out)
	runCLI(t, nil, args...).ok(t, "failed 0", "copied 3,")
	checkImported(t, src, dst, kindSrcBlobs(kinds), kindsContainer)
	checkKinds(t, dst.client, kinds, true)
	runCLI(t, nil, args...).ok(t, fmt.Sprintf("copied 0, skipped %d, failed 0", len(kinds)))
}

// refuseTagListing answers List Blobs with include=tags as Azure does for
// a SAS without the t permission: 403 AuthorizationPermissionMismatch.
// (The gateway now refuses it so too; Azurite lists tags to any SAS that
// may list.)
func refuseTagListing(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("comp") == "list" && q.Get("restype") == "container" && strings.Contains(q.Get("include"), "tags") &&
			q.Get("sig") != "" && !strings.Contains(q.Get("sp"), "t") {
			w.Header().Set("Content-Type", "application/xml")
			w.Header().Set("x-ms-error-code", "AuthorizationPermissionMismatch")
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `<?xml version="1.0" encoding="utf-8"?><Error><Code>AuthorizationPermissionMismatch</Code><Message>This request is not authorized to perform this operation using this permission.</Message></Error>`)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func TestImportAzureTagsRefused(t *testing.T) {
	src := newMigGateway(t, refuseTagListing)
	dst := newMigGateway(t, nil)
	kinds := fillKinds(t, src.client)
	blobs := append(fillSource(t, src), kindSrcBlobs(kinds)...)
	out := runCLI(t, nil, "import", "azure", "--source-url", src.accountSAS(t), "--dest-url", dst.url).
		ok(t, fmt.Sprintf("copied %d, skipped 0, failed 0", len(blobs)))
	const note = "the source refuses to list blob index tags (403 AuthorizationPermissionMismatch"
	if n := strings.Count(out, note); n != 1 {
		t.Errorf("the note on tags appears %d times, want once (4 containers):\n%s", n, out)
	}
	checkImported(t, src, dst, blobs, "photos", "docs", "logs", kindsContainer)
	noTags := slices.Clone(kinds)
	for i := range noTags {
		noTags[i].tags = nil
	}
	checkKinds(t, dst.client, noTags, true)

	// With a SAS that may read tags, a rerun adds them without copying.
	sasT := devAccountSASWith(t, src.url, sas.AccountPermissions{Read: true, List: true, Tag: true})
	runCLI(t, nil, "import", "azure", "--source-url", sasT, "--dest-url", dst.url).without("tags").
		ok(t, fmt.Sprintf("copied 0, skipped %d, failed 0", len(blobs)))
	checkKinds(t, dst.client, kinds, true)
}

// TestImportAzureSealed: a sealed append blob arrives sealed; one sealed at
// the source after it was copied (Seal keeps the ETag, so the rerun skips
// it) is sealed at the destination by the rerun, without copying bytes.
func TestImportAzureSealed(t *testing.T) {
	ctx := context.Background()
	var writes atomic.Int64
	src := newMigGateway(t, nil)
	dst := newMigGateway(t, countWrites(&writes))
	if _, err := src.client.CreateContainer(ctx, "seals", nil); err != nil {
		t.Fatal(err)
	}
	sc := src.client.ServiceClient().NewContainerClient("seals")
	for _, name := range []string{"sealed.log", "later.log"} {
		ab := sc.NewAppendBlobClient(name)
		if _, err := ab.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		for _, part := range []string{"one ", "two"} {
			if _, err := ab.AppendBlock(ctx, streaming.NopCloser(strings.NewReader(name+":"+part)), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := sc.NewAppendBlobClient("sealed.log").Seal(ctx, nil); err != nil {
		t.Fatal(err)
	}
	args := []string{"import", "azure", "--source-url", src.accountSAS(t), "--dest-url", dst.url}
	sealed := func(name string) bool {
		t.Helper()
		p, err := dst.client.ServiceClient().NewContainerClient("seals").NewAppendBlobClient(name).GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if p.BlobType == nil || *p.BlobType != blob.BlobTypeAppendBlob {
			t.Fatalf("%s arrived as %v", name, p.BlobType)
		}
		return p.IsSealed != nil && *p.IsSealed
	}
	runCLI(t, nil, args...).ok(t, "copied 2, skipped 0, failed 0")
	if !sealed("sealed.log") || sealed("later.log") {
		t.Fatalf("after the import: sealed.log sealed %v, later.log sealed %v", sealed("sealed.log"), sealed("later.log"))
	}
	_, err := dst.client.ServiceClient().NewContainerClient("seals").NewAppendBlobClient("sealed.log").
		AppendBlock(ctx, streaming.NopCloser(strings.NewReader("more")), nil)
	if !bloberror.HasCode(err, bloberror.Code("BlobIsSealed")) {
		t.Fatalf("append to the imported sealed blob: %v", err)
	}

	if _, err := sc.NewAppendBlobClient("later.log").Seal(ctx, nil); err != nil {
		t.Fatal(err)
	}
	writes.Store(0)
	runCLI(t, nil, args...).ok(t, "copied 0, skipped 2, failed 0")
	if !sealed("later.log") {
		t.Fatal("the rerun left later.log unsealed")
	}
	if n := writes.Load(); n != 0 {
		t.Errorf("sealing on the rerun sent %d byte-carrying requests, want 0", n)
	}
}
