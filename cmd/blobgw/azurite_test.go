package main

// `blobgw import azure` from a real Azurite: the emulator is the closest
// thing to Azure a test can run, and it differs from a second blobgw in the
// details an importer trips over (ETag forms in listings and conditions,
// what a block-list blob reports as Content-MD5, how names are escaped).
//
// Azurite is the npm package pinned in testdata/azurite; scripts/test
// installs it (npm ci). Without it the test skips, or fails when CI is set.

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
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/pageblob"
	"github.com/blobgw/blobgw/internal/config"
)

// azuriteBin is Azurite's blob-only entry point as npm ci installs it.
const azuriteBin = "testdata/azurite/node_modules/.bin/azurite-blob"

// azurite is one Azurite blob service started by startAzurite.
type azurite struct {
	url    string // service URL with trailing slash
	client *azblob.Client
	pid    int // the node process (BenchmarkSmallOps reads its CPU time)
}

// inCI reports whether a missing tool must fail the test rather than skip
// it (the rule of backends/s3/miniotest).
func inCI() bool {
	v := strings.TrimSpace(strings.ToLower(os.Getenv("CI")))
	return v != "" && v != "false" && v != "0"
}

// startAzurite starts Azurite's blob service on a free 127.0.0.1 port with
// its data in a temporary directory, waits until it answers, and stops it
// (that process only) when the test ends.
func startAzurite(t testing.TB) *azurite {
	t.Helper()
	bin, err := filepath.Abs(azuriteBin)
	if err != nil {
		t.Fatal(err)
	}
	_, binErr := os.Stat(bin)
	_, nodeErr := exec.LookPath("node")
	if err := errors.Join(binErr, nodeErr); err != nil {
		if inCI() {
			t.Fatalf("Azurite is not installed (%v); CI is set, so this fails: scripts/test installs it (npm ci in cmd/blobgw/testdata/azurite)", err)
		}
		t.Skipf("Azurite is not installed (%v); run scripts/test or npm ci in cmd/blobgw/testdata/azurite (with CI=true this fails)", err)
	}
	dir := t.TempDir()
	var lastErr error
	for range 5 {
		a, retry, err := tryStartAzurite(t, bin, dir)
		if err == nil {
			return a
		}
		lastErr = err
		if !retry {
			break
		}
	}
	t.Fatal(lastErr)
	return nil
}

// tryStartAzurite is one start attempt; retry reports that the port was
// taken before Azurite bound it.
func tryStartAzurite(t testing.TB, bin, dir string) (a *azurite, retry bool, err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, false, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	logPath := filepath.Join(dir, "azurite.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, false, err
	}
	defer logf.Close() // the child has its own descriptor
	cmd := exec.Command(bin,
		"--blobHost", "127.0.0.1", "--blobPort", strconv.Itoa(port),
		"--location", filepath.Join(dir, "data"),
		// The Go SDK sends an x-ms-version newer than this Azurite knows.
		"--skipApiVersionCheck",
		// Azurite phones home by default; tests reach nothing but loopback.
		"--disableTelemetry",
		"--silent")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	// A test binary killed outright must not leave Azurite behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, false, fmt.Errorf("start azurite: %w", err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	stop := func() { terminate(cmd.Process, done, 5*time.Second) }

	svcURL := "http://127.0.0.1:" + strconv.Itoa(port) + "/" + config.DevAccountName + "/"
	hc := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-done:
			log, _ := os.ReadFile(logPath)
			return nil, bytes.Contains(log, []byte("EADDRINUSE")), fmt.Errorf("azurite exited during start-up (%v):\n%s", cmd.ProcessState, log)
		default:
		}
		// Any HTTP answer (an unsigned listing is 403) means it listens.
		resp, err := hc.Get(svcURL + "?comp=list")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			stop()
			log, _ := os.ReadFile(logPath)
			return nil, false, fmt.Errorf("azurite not answering after 30s: %v\n%s", err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Cleanup(stop)
	cred, err := azblob.NewSharedKeyCredential(config.DevAccountName, config.DevAccountKey)
	if err != nil {
		return nil, false, err
	}
	// Without decompression, as the importer reads (rawHTTP).
	client, err := azblob.NewClientWithSharedKeyCredential(svcURL, cred, &azblob.ClientOptions{ClientOptions: azureClientOptions()})
	if err != nil {
		return nil, false, err
	}
	return &azurite{url: svcURL, client: client, pid: cmd.Process.Pid}, false, nil
}

// accountSAS returns the service URL with a read/list account SAS.
func (a *azurite) accountSAS(t *testing.T) string { return devAccountSAS(t, a.url) }

// connectionString is the dev account's connection string for a.
func (a *azurite) connectionString() string {
	return "DefaultEndpointsProtocol=http;AccountName=" + config.DevAccountName + ";AccountKey=" + config.DevAccountKey +
		";BlobEndpoint=" + strings.TrimSuffix(a.url, "/") + ";"
}

// azBlob is one blob the test writes into Azurite.
type azBlob struct {
	container, name string
	data            []byte
	headers         blob.HTTPHeaders
	metadata        map[string]*string
	// blockSize > 0 uploads with UploadStream in blocks of that size (a
	// block-list blob); otherwise one Put Blob.
	blockSize int64
}

// azuriteContainers are the source containers and their metadata; "quiet"
// stays empty.
var azuriteContainers = map[string]map[string]*string{
	"photos": {"team": to.Ptr("pics"), "Region": to.Ptr("eu-west")},
	"docs":   {"team": to.Ptr("writers")},
	"quiet":  {"purpose": to.Ptr("an empty container is copied too")},
}

func fillAzurite(t *testing.T, a *azurite) []azBlob {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewSource(3))
	big := make([]byte, 6<<20+12345)
	rng.Read(big)
	mid := make([]byte, 3<<20+1)
	rng.Read(mid)
	md5Of := func(b []byte) []byte { s := md5.Sum(b); return s[:] }
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(bytes.Repeat([]byte(`{"compressed": true}`), 100))
	zw.Close()
	blobs := []azBlob{
		{container: "photos", name: "cat.jpg", data: []byte("meow meow"),
			headers: blob.HTTPHeaders{BlobContentType: to.Ptr("image/jpeg"), BlobCacheControl: to.Ptr("max-age=3600"),
				BlobContentDisposition: to.Ptr(`attachment; filename="cat.jpg"`), BlobContentMD5: md5Of([]byte("meow meow"))},
			metadata: map[string]*string{"owner": to.Ptr("alice"), "Camera": to.Ptr("pinhole")}},
		{container: "photos", name: "2024/summer holiday/beach ☀ día.png", data: bytes.Repeat([]byte("sand"), 3000),
			headers:  blob.HTTPHeaders{BlobContentType: to.Ptr("image/png"), BlobContentLanguage: to.Ptr("es-ES")},
			metadata: map[string]*string{"place": to.Ptr("Cadiz")}},
		{container: "photos", name: "empty", data: []byte{},
			headers: blob.HTTPHeaders{BlobContentType: to.Ptr("application/octet-stream"), BlobContentMD5: md5Of(nil)}},
		{container: "docs", name: "readme.txt", data: []byte("hello, world\n"),
			headers: blob.HTTPHeaders{BlobContentType: to.Ptr("text/plain; charset=utf-8"), BlobContentEncoding: to.Ptr("identity"),
				BlobContentLanguage: to.Ptr("en-GB"), BlobContentDisposition: to.Ptr("inline"), BlobCacheControl: to.Ptr("no-cache"),
				BlobContentMD5: md5Of([]byte("hello, world\n"))}},
		{container: "docs", name: "日本語/ファイル 名.txt", data: []byte("こんにちは\n"),
			headers: blob.HTTPHeaders{BlobContentType: to.Ptr("text/plain; charset=utf-8"), BlobContentLanguage: to.Ptr("ja")}},
		{container: "docs", name: "odd/a+b=c&d;e@f 100%.txt", data: []byte("odd name"),
			headers: blob.HTTPHeaders{BlobContentType: to.Ptr("text/plain")}, metadata: map[string]*string{"odd": to.Ptr("yes")}},
		// Stored compressed: copied as stored, not inflated on the way.
		{container: "docs", name: "data.json", data: gz.Bytes(),
			headers: blob.HTTPHeaders{BlobContentType: to.Ptr("application/json"), BlobContentEncoding: to.Ptr("gzip")}},
		// Block-list blobs (7 and 4 blocks): the first committed without a
		// Content-MD5, the second with one.
		{container: "docs", name: "big/multi block.bin", data: big, blockSize: 1 << 20,
			headers:  blob.HTTPHeaders{BlobContentType: to.Ptr("application/x-big"), BlobCacheControl: to.Ptr("private")},
			metadata: map[string]*string{"kind": to.Ptr("large"), "blocks": to.Ptr("7")}},
		{container: "docs", name: "big/a with md5.bin", data: mid, blockSize: 1 << 20,
			headers: blob.HTTPHeaders{BlobContentType: to.Ptr("application/x-mid"), BlobContentMD5: md5Of(mid)}},
	}
	for name, md := range azuriteContainers {
		if _, err := a.client.CreateContainer(ctx, name, &container.CreateOptions{Metadata: md}); err != nil {
			t.Fatalf("create container %s in Azurite: %v", name, err)
		}
	}
	for _, b := range blobs {
		bb := a.client.ServiceClient().NewContainerClient(b.container).NewBlockBlobClient(b.name)
		h := b.headers
		var err error
		if b.blockSize > 0 {
			_, err = bb.UploadStream(ctx, bytes.NewReader(b.data), &blockblob.UploadStreamOptions{BlockSize: b.blockSize, Concurrency: 2, HTTPHeaders: &h, Metadata: b.metadata})
		} else {
			_, err = bb.UploadBuffer(ctx, b.data, &blockblob.UploadBufferOptions{HTTPHeaders: &h, Metadata: b.metadata})
		}
		if err != nil {
			t.Fatalf("upload %s/%s to Azurite: %v", b.container, b.name, err)
		}
	}
	// The block-list blobs really are block lists, and the one committed
	// without Content-MD5 has none (the importer computes it).
	for _, b := range blobs {
		if b.blockSize == 0 {
			continue
		}
		bb := a.client.ServiceClient().NewContainerClient(b.container).NewBlockBlobClient(b.name)
		bl, err := bb.GetBlockList(ctx, blockblob.BlockListTypeCommitted, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := (int64(len(b.data)) + b.blockSize - 1) / b.blockSize; int64(len(bl.CommittedBlocks)) != want {
			t.Fatalf("%s/%s: %d committed blocks in Azurite, want %d", b.container, b.name, len(bl.CommittedBlocks), want)
		}
		p, err := bb.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if (p.ContentMD5 == nil) != (b.headers.BlobContentMD5 == nil) {
			t.Fatalf("%s/%s: Azurite reports Content-MD5 %x, the commit sent %x", b.container, b.name, p.ContentMD5, b.headers.BlobContentMD5)
		}
	}
	return blobs
}

// lowerMeta lower-cases metadata keys (they are case-insensitive) and drops
// the import marker.
func lowerMeta(md map[string]*string) map[string]string {
	out := map[string]string{}
	for k, v := range md {
		if !strings.EqualFold(k, importETagKey) {
			out[strings.ToLower(k)] = deref(v)
		}
	}
	return out
}

func download(t *testing.T, bc *blob.Client) []byte {
	t.Helper()
	dl, err := bc.DownloadStream(context.Background(), nil)
	if err != nil {
		t.Fatalf("download %s: %v", bc.URL(), err)
	}
	defer dl.Body.Close()
	got, err := io.ReadAll(dl.Body)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// checkFromAzurite compares the destination with what Azurite holds, blob by
// blob, through both services' APIs: the same containers with the same
// metadata, the same blob names, and for each blob the same bytes, content
// headers, metadata, and a Content-MD5 that is the source's or, where
// Azurite keeps none, the MD5 of the bytes, and the same blob type. wrote
// is what the test put into
// Azurite; the bytes Azurite serves must be those too. conts limits the
// comparison to some containers (nil: all).
func checkFromAzurite(t *testing.T, src *azurite, dst *migGateway, wrote []azBlob, conts []string) {
	t.Helper()
	ctx := context.Background()
	want := map[string][]byte{}
	for _, b := range wrote {
		want[b.container+"/"+b.name] = b.data
	}
	if conts == nil {
		for c := range azuriteContainers {
			conts = append(conts, c)
		}
		slices.Sort(conts)
	}
	seen := 0
	for _, cont := range conts {
		sc := src.client.ServiceClient().NewContainerClient(cont)
		dc := dst.client.ServiceClient().NewContainerClient(cont)
		sp, err := sc.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		dp, err := dc.GetProperties(ctx, nil)
		if err != nil {
			t.Fatalf("container %s at the destination: %v", cont, err)
		}
		if s, d := lowerMeta(sp.Metadata), lowerMeta(dp.Metadata); !mapsEqual(s, d) {
			t.Errorf("container %s: metadata %v, Azurite has %v", cont, d, s)
		}
		srcNames, dstNames := listNames(t, sc), listNames(t, dc)
		if !slices.Equal(srcNames, dstNames) {
			t.Errorf("container %s: blobs %q, Azurite has %q", cont, dstNames, srcNames)
		}
		for _, name := range srcNames {
			seen++
			sb, db := sc.NewBlobClient(name), dc.NewBlobClient(name)
			what := cont + "/" + name
			s, err := sb.GetProperties(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			d, err := db.GetProperties(ctx, nil)
			if err != nil {
				t.Errorf("%s at the destination: %v", what, err)
				continue
			}
			srcData, dstData := download(t, sb), download(t, db)
			if w, ok := want[what]; !ok || !bytes.Equal(srcData, w) {
				t.Fatalf("%s: Azurite serves %d bytes that the test did not write (%v)", what, len(srcData), ok)
			}
			if !bytes.Equal(dstData, srcData) {
				t.Errorf("%s: the destination's %d bytes differ from Azurite's %d", what, len(dstData), len(srcData))
			}
			if deref64(d.ContentLength) != deref64(s.ContentLength) || deref64(d.ContentLength) != int64(len(srcData)) {
				t.Errorf("%s: Content-Length %d, Azurite %d, bytes %d", what, deref64(d.ContentLength), deref64(s.ContentLength), len(srcData))
			}
			for _, p := range []struct {
				name     string
				src, dst *string
			}{
				{"Content-Type", s.ContentType, d.ContentType},
				{"Content-Encoding", s.ContentEncoding, d.ContentEncoding},
				{"Content-Language", s.ContentLanguage, d.ContentLanguage},
				{"Content-Disposition", s.ContentDisposition, d.ContentDisposition},
				{"Cache-Control", s.CacheControl, d.CacheControl},
			} {
				if deref(p.src) != deref(p.dst) {
					t.Errorf("%s: %s %q, Azurite %q", what, p.name, deref(p.dst), deref(p.src))
				}
			}
			sum := md5.Sum(srcData)
			if s.ContentMD5 != nil && !bytes.Equal(s.ContentMD5, sum[:]) {
				t.Fatalf("%s: Azurite's Content-MD5 %x is not the MD5 of its bytes", what, s.ContentMD5)
			}
			if !bytes.Equal(d.ContentMD5, sum[:]) {
				t.Errorf("%s: Content-MD5 %x, want %x (Azurite's: %x)", what, d.ContentMD5, sum, s.ContentMD5)
			}
			if sm, dm := lowerMeta(s.Metadata), lowerMeta(d.Metadata); !mapsEqual(sm, dm) {
				t.Errorf("%s: metadata %v, Azurite has %v", what, dm, sm)
			}
			if got := metaValue(d.Metadata, importETagKey); got != strings.Trim(string(*s.ETag), `"`) {
				t.Errorf("%s: import marker %q, Azurite's ETag %s", what, got, *s.ETag)
			}
			// Every blob keeps its type.
			wantType := blob.BlobTypeBlockBlob
			if s.BlobType != nil && (*s.BlobType == blob.BlobTypeAppendBlob || *s.BlobType == blob.BlobTypePageBlob) {
				wantType = *s.BlobType
			}
			if d.BlobType == nil || *d.BlobType != wantType {
				t.Errorf("%s: blob type %v, want %s (Azurite's: %v)", what, d.BlobType, wantType, s.BlobType)
			}
		}
	}
	if seen == 0 {
		t.Fatal("compared no blobs")
	}
}

func listNames(t *testing.T, c *container.Client) []string {
	t.Helper()
	var names []string
	pager := c.NewListBlobsFlatPager(nil)
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Segment.BlobItems {
			names = append(names, *it.Name)
		}
	}
	return names
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func deref64(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}

func TestImportAzurite(t *testing.T) {
	src := startAzurite(t)
	blobs := fillAzurite(t, src)
	ctx := context.Background()

	t.Run("SAS", func(t *testing.T) {
		dst := newMigGateway(t, nil)
		args := []string{"import", "azure", "--source-url", src.accountSAS(t), "--dest-url", dst.url}
		runCLI(t, nil, args...).ok(t, fmt.Sprintf("copied %d, skipped 0, failed 0", len(blobs)))
		checkFromAzurite(t, src, dst, blobs, nil)

		// A rerun finds everything copied.
		runCLI(t, nil, args...).ok(t, fmt.Sprintf("copied 0, skipped %d, failed 0", len(blobs)))
		// A blob changed in Azurite is copied again, the others skipped.
		changed := []byte("line 1\nline 2\n")
		if _, err := src.client.UploadBuffer(ctx, "docs", "readme.txt", changed, &blockblob.UploadBufferOptions{
			HTTPHeaders: &blob.HTTPHeaders{BlobContentType: to.Ptr("text/markdown")},
			Metadata:    map[string]*string{"rev": to.Ptr("2")},
		}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			// Later subtests expect the original.
			b := blobs[slices.IndexFunc(blobs, func(b azBlob) bool { return b.name == "readme.txt" })]
			h := b.headers
			if _, err := src.client.UploadBuffer(ctx, "docs", "readme.txt", b.data, &blockblob.UploadBufferOptions{HTTPHeaders: &h}); err != nil {
				t.Error(err)
			}
		})
		wrote := slices.Clone(blobs)
		for i := range wrote {
			if wrote[i].name == "readme.txt" {
				wrote[i].data = changed
			}
		}
		runCLI(t, nil, args...).ok(t, fmt.Sprintf("copied 1, skipped %d, failed 0", len(blobs)-1))
		checkFromAzurite(t, src, dst, wrote, nil)
	})

	t.Run("ConnectionStringOneContainer", func(t *testing.T) {
		dst := newMigGateway(t, nil)
		runCLI(t, nil, "import", "azure", "--source-connection-string", src.connectionString(), "--dest-url", dst.url, "--container", "photos").
			ok(t, "copied 3, skipped 0, failed 0")
		checkFromAzurite(t, src, dst, blobs, []string{"photos"})
		for _, other := range []string{"docs", "quiet"} {
			if _, err := dst.client.ServiceClient().NewContainerClient(other).GetProperties(ctx, nil); err == nil {
				t.Errorf("--container photos also created %s", other)
			}
		}
	})

	t.Run("InterruptedAndResumed", func(t *testing.T) {
		ictx, cancel := context.WithCancel(ctx)
		defer cancel()
		// The destination cancels the import when the first block of the
		// 6 MiB blob arrives (blocks of migrateBlockSize): the run stops in
		// the middle of that blob, with the one before it in the listing
		// (big/a with md5.bin, one Put Blob) copied.
		dst := newMigGateway(t, cancelAfter(cancel, func(r *http.Request) bool {
			return r.Method == http.MethodPut && r.URL.Query().Get("comp") == "block" && strings.HasSuffix(r.URL.Path, "/big/multi block.bin")
		}))
		args := []string{"import", "azure", "--source-url", src.accountSAS(t), "--dest-url", dst.url, "--parallel", "1"}
		out := runInterrupted(t, ictx, args...)
		if _, err := dst.client.ServiceClient().NewContainerClient("docs").NewBlobClient("big/multi block.bin").GetProperties(ctx, nil); err == nil {
			t.Fatalf("the interrupted blob is visible at the destination:\n%s", out)
		}
		t.Logf("interrupted run:\n%s", out)
		out = runCLI(t, nil, args...).ok(t, fmt.Sprintf("copied %d, skipped 1, failed 0", len(blobs)-1))
		t.Logf("resumed run:\n%s", out)
		checkFromAzurite(t, src, dst, blobs, nil)
		runCLI(t, nil, args...).ok(t, fmt.Sprintf("copied 0, skipped %d, failed 0", len(blobs)))
	})
}

// TestImportAzuriteKinds imports what Azurite holds besides plain block
// blobs: append blobs, page blobs, access tiers (Azurite 3.35 keeps Hot,
// Cool, Cold and Archive and answers Get Blob on an archived blob with 409
// BlobArchived) and blob index tags (which it lists with include=tags to a
// SAS without the t permission, as the gateway does; Azure refuses that,
// see TestImportAzureTagsRefused).
func TestImportAzuriteKinds(t *testing.T) {
	ctx := context.Background()
	src := startAzurite(t)
	kinds := fillKinds(t, src.client)
	sc := src.client.ServiceClient().NewContainerClient(kindsContainer)

	// A sparse page blob: 8 KiB with two written ranges; Get Blob serves
	// zeros for the rest. It arrives as a page blob with the same two
	// ranges (the holes stay holes) and sequence number.
	disk := make([]byte, 8<<10)
	rand.New(rand.NewSource(11)).Read(disk[1024:3072])
	copy(disk[7680:], bytes.Repeat([]byte("END!"), 128))
	pb := sc.NewPageBlobClient("disk.vhd")
	if _, err := pb.Create(ctx, int64(len(disk)), &pageblob.CreateOptions{
		HTTPHeaders: &blob.HTTPHeaders{BlobContentType: to.Ptr("application/x-vhd")}, SequenceNumber: to.Ptr(int64(9)),
		Metadata: map[string]*string{"vm": to.Ptr("test")}, Tags: map[string]string{"disk": "os"}}); err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]int{{1024, 3072}, {7680, 8192}} {
		if _, err := pb.UploadPages(ctx, streaming.NopCloser(bytes.NewReader(disk[r[0]:r[1]])), blob.HTTPRange{Offset: int64(r[0]), Count: int64(r[1] - r[0])}, nil); err != nil {
			t.Fatal(err)
		}
	}
	var wrote []azBlob
	for _, k := range kinds {
		wrote = append(wrote, azBlob{container: kindsContainer, name: k.name, data: k.data})
	}
	wrote = append(wrote, azBlob{container: kindsContainer, name: "disk.vhd", data: disk})
	n := len(wrote)

	dst := newMigGateway(t, nil)
	args := []string{"import", "azure", "--source-url", src.accountSAS(t), "--dest-url", dst.url, "--container", kindsContainer}
	// No note on the page blob.
	runCLI(t, nil, args...).without("page blob").ok(t, fmt.Sprintf("copied %d, skipped 0, failed 0", n))
	checkPageBlob(t, dst.client.ServiceClient().NewContainerClient(kindsContainer).NewPageBlobClient("disk.vhd"), 9, [][2]int64{{1024, 3071}, {7680, 8191}})
	checkFromAzurite(t, src, dst, wrote, []string{kindsContainer})
	checkKinds(t, dst.client, kinds, true)
	diskTags := blobTags(t, dst.client.ServiceClient().NewContainerClient(kindsContainer).NewBlobClient("disk.vhd"))
	if !maps.Equal(diskTags, map[string]string{"disk": "os"}) {
		t.Errorf("disk.vhd: tags %v", diskTags)
	}

	runCLI(t, nil, args...).without("page blob").ok(t, fmt.Sprintf("copied 0, skipped %d, failed 0", n))

	// The imported append blob takes appends; the rerun keeps them (an
	// application's, at the gateway after the cutover) and says so, rather
	// than putting the shorter source back over them.
	var appended []byte
	for _, k := range kinds {
		if k.name == "log/app.log" {
			appended = checkAppendable(t, dst.client, k.name, k.data)
		}
	}
	runCLI(t, nil, args...).ok(t, fmt.Sprintf("copied 0, skipped %d, failed 0", n),
		kindsContainer+"/log/app.log: the destination append blob was appended to after the import copied it")
	dcont := dst.client.ServiceClient().NewContainerClient(kindsContainer)
	for _, b := range wrote {
		want := b.data
		if b.name == "log/app.log" {
			want = appended
		}
		if got := download(t, dcont.NewBlobClient(b.name)); !bytes.Equal(got, want) {
			t.Errorf("%s after the rerun: %d bytes at the destination, want %d", b.name, len(got), len(want))
		}
	}
	// Deleted at the destination, as the note says, it is copied again.
	if _, err := dcont.NewBlobClient("log/app.log").Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}
	runCLI(t, nil, args...).ok(t, fmt.Sprintf("copied 1, skipped %d, failed 0", n-1))
	checkFromAzurite(t, src, dst, wrote, []string{kindsContainer})

	// An archived blob fails with a clear message until it is rehydrated
	// (Azurite: at once).
	frozen := []byte("frozen in Azurite")
	if _, err := sc.NewBlockBlobClient("frozen.bin").UploadBuffer(ctx, frozen, &blockblob.UploadBufferOptions{
		AccessTier: to.Ptr(blob.AccessTierArchive)}); err != nil {
		t.Fatal(err)
	}
	runCLI(t, nil, args...).fails(t, 1, fmt.Sprintf("copied 0, skipped %d, failed 1", n),
		"kinds/frozen.bin: the source blob is in the Archive tier")
	if _, err := sc.NewBlobClient("frozen.bin").SetTier(ctx, blob.AccessTierHot, nil); err != nil {
		t.Fatal(err)
	}
	runCLI(t, nil, args...).ok(t, fmt.Sprintf("copied 1, skipped %d, failed 0", n))
	checkFromAzurite(t, src, dst, append(wrote, azBlob{container: kindsContainer, name: "frozen.bin", data: frozen}), []string{kindsContainer})
}

// checkPageBlob asserts that pb is a page blob with sequence number seq
// and exactly the written ranges want ([start, end], inclusive ends).
func checkPageBlob(t *testing.T, pb *pageblob.Client, seq int64, want [][2]int64) {
	t.Helper()
	ctx := context.Background()
	props, err := pb.GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if props.BlobType == nil || *props.BlobType != blob.BlobTypePageBlob || props.BlobSequenceNumber == nil || *props.BlobSequenceNumber != seq {
		t.Fatalf("imported page blob: type %v sequence number %v", props.BlobType, props.BlobSequenceNumber)
	}
	var got [][2]int64
	pager := pb.NewGetPageRangesPager(nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.PageRange {
			got = append(got, [2]int64{*r.Start, *r.End})
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("imported page blob ranges %v, want %v (holes kept)", got, want)
	}
}
