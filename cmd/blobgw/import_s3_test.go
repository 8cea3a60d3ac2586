package main

import (
	"bytes"
	"context"
	"crypto/md5"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/blobgw/blobgw/backends/s3"
	"github.com/blobgw/blobgw/backends/s3/miniotest"
	"github.com/blobgw/blobgw/gateway"
	"github.com/blobgw/blobgw/internal/config"
	"github.com/blobgw/blobgw/internal/gwtest"
	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/dbopen"
)

type s3Obj struct {
	name, contentType string
	data              []byte
	meta              map[string]string
	multipart         bool
}

// adoptEnv is a gateway on an s3 backend (a fresh MinIO bucket, gateway
// prefix gw/) and a SQLite metadata store, with the environment that points
// the CLI at the same store and bucket.
type adoptEnv struct {
	cfg   s3.Config
	st    *s3.Store
	store leasedb.Store
	az    *azblob.Client
	env   map[string]string
	log   *slog.Logger
}

func newAdoptEnv(t *testing.T) *adoptEnv {
	t.Helper()
	ctx := context.Background()
	e := &adoptEnv{cfg: miniotest.NewBucket(t), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	e.cfg.Prefix = "gw/"
	var err error
	if e.st, err = s3.New(ctx, e.cfg); err != nil {
		t.Fatal(err)
	}
	metaPath := filepath.Join(t.TempDir(), "meta.db")
	if e.store, err = dbopen.Open(ctx, metaPath); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.store.Close() })
	srv := httptest.NewServer(gateway.New(&leasedb.DB{Store: e.store}, e.st, gwtest.DevAccounts(t), e.log, gateway.Options{}))
	t.Cleanup(srv.Close)
	cred, err := azblob.NewSharedKeyCredential(config.DevAccountName, config.DevAccountKey)
	if err != nil {
		t.Fatal(err)
	}
	if e.az, err = azblob.NewClientWithSharedKeyCredential(srv.URL+"/"+config.DevAccountName+"/", cred, nil); err != nil {
		t.Fatal(err)
	}
	e.env = map[string]string{
		"BLOBGW_DATA_DIR": t.TempDir(), "BLOBGW_METADATA": metaPath, "BLOBGW_BACKEND": "s3",
		"BLOBGW_S3_ENDPOINT": e.cfg.Endpoint, "BLOBGW_S3_REGION": e.cfg.Region, "BLOBGW_S3_BUCKET": e.cfg.Bucket,
		"BLOBGW_S3_PREFIX": e.cfg.Prefix, "BLOBGW_S3_ACCESS_KEY": e.cfg.AccessKey, "BLOBGW_S3_SECRET_KEY": e.cfg.SecretKey,
		"BLOBGW_S3_PATH_STYLE": "true",
	}
	return e
}

func TestImportS3(t *testing.T) {
	ctx := context.Background()
	e := newAdoptEnv(t)
	cfg, st, store, az, env, log := e.cfg, e.st, e.store, e.az, e.env, e.log
	bucket := cfg.Bucket
	cl := st.Client()
	rng := rand.New(rand.NewSource(2))
	big := make([]byte, 11<<20+7)
	rng.Read(big)
	objs := []s3Obj{
		{name: "photos/cat.jpg", contentType: "image/jpeg", data: []byte("meow meow"), meta: map[string]string{"Owner": "alice"}},
		{name: "docs/readme.txt", contentType: "text/plain; charset=utf-8", data: []byte("hello, world\n"), meta: map[string]string{"kind": "doc", "n": "1"}},
		{name: "dir/sub/deep/name with space.bin", contentType: "application/x-thing", data: bytes.Repeat([]byte("z"), 5000)},
		{name: "empty", contentType: "application/octet-stream", data: []byte{}},
		{name: "big.bin", contentType: "application/x-big", data: big, meta: map[string]string{"size": "big"}, multipart: true},
	}
	up := manager.NewUploader(cl, func(u *manager.Uploader) { u.PartSize = 5 << 20 })
	putObj := func(key string, o s3Obj) {
		t.Helper()
		in := &awss3.PutObjectInput{Bucket: &bucket, Key: aws.String(key), Body: bytes.NewReader(o.data), ContentType: aws.String(o.contentType), Metadata: o.meta}
		if o.multipart {
			if _, err := up.Upload(ctx, in); err != nil {
				t.Fatal(err)
			}
			return
		}
		if _, err := cl.PutObject(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range objs {
		putObj("data/"+o.name, o)
	}
	longName := "data/" + strings.Repeat("l", s3.MaxAdoptedName)
	putObj(longName, s3Obj{data: []byte("long"), contentType: "text/plain"})
	putObj("data/conflict.txt", s3Obj{data: []byte("mine"), contentType: "text/plain"})
	putObj("elsewhere/not-mine.txt", s3Obj{data: []byte("x"), contentType: "text/plain"})
	objExists := func(name string) bool {
		t.Helper()
		_, err := cl.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &bucket, Key: &name})
		return err == nil
	}

	// A blob of the gateway's own (under gw/) at a name an object maps to:
	// adoption must not replace it.
	if _, err := az.CreateContainer(ctx, "adopted", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := az.UploadBuffer(ctx, "adopted", "conflict.txt", []byte("the gateway's"), nil); err != nil {
		t.Fatal(err)
	}

	args := []string{"import", "s3", "--bucket", bucket, "--prefix", "data/", "--container", "adopted"}

	// Wrong bucket and wrong backend are refused up front.
	runCLI(t, env, "import", "s3", "--bucket", "other", "--container", "adopted").fails(t, 2, "not the configured s3 bucket")
	runCLI(t, map[string]string{"BLOBGW_DATA_DIR": t.TempDir()}, args...).fails(t, 2, "backend: s3")

	// First run: the long name and the name taken by another blob fail.
	first := runCLI(t, env, args...)
	t.Logf("first run:\n%s", first.out)
	// The summary, the progress line and the per-object errors.
	first.fails(t, 1, fmt.Sprintf("adopted %d, skipped 0, failed 2", len(objs)), fmt.Sprintf("%d/%d objects", len(objs), len(objs)+2),
		"at most 255 can be adopted", "adopted/conflict.txt: ", "different blob exists")
	if got := readBlob(t, az, "adopted", "conflict.txt"); string(got) != "the gateway's" {
		t.Fatalf("conflicting blob replaced: %q", got)
	}

	check := func(o s3Obj) {
		t.Helper()
		bc := az.ServiceClient().NewContainerClient("adopted").NewBlobClient(o.name)
		props, err := bc.GetProperties(ctx, nil)
		if err != nil {
			t.Fatalf("%s: %v", o.name, err)
		}
		if got := readBlob(t, az, "adopted", o.name); !bytes.Equal(got, o.data) {
			t.Errorf("%s: %d bytes differ from the object's %d", o.name, len(got), len(o.data))
		}
		if deref(props.ContentType) != o.contentType {
			t.Errorf("%s: content type %q, want %q", o.name, deref(props.ContentType), o.contentType)
		}
		if props.ContentLength == nil || *props.ContentLength != int64(len(o.data)) {
			t.Errorf("%s: size %v", o.name, props.ContentLength)
		}
		if len(props.Metadata) != len(o.meta) {
			t.Errorf("%s: metadata %v, want %v", o.name, props.Metadata, o.meta)
		}
		for k, v := range o.meta {
			if metaValue(props.Metadata, k) != v {
				t.Errorf("%s: metadata %s = %q, want %q", o.name, k, metaValue(props.Metadata, k), v)
			}
		}
		sum := md5.Sum(o.data)
		switch {
		case o.multipart && props.ContentMD5 != nil:
			t.Errorf("%s: multipart object got Content-MD5 %x", o.name, props.ContentMD5)
		case !o.multipart && !bytes.Equal(props.ContentMD5, sum[:]):
			t.Errorf("%s: Content-MD5 %x, want %x", o.name, props.ContentMD5, sum)
		}
	}
	for _, o := range objs {
		check(o)
	}
	// Nothing was copied: the bucket holds only the gateway's conflict.txt
	// under its prefix.
	n := 0
	p := awss3.NewListObjectsV2Paginator(cl, &awss3.ListObjectsV2Input{Bucket: &bucket, Prefix: aws.String(cfg.Prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n += len(page.Contents)
	}
	if n != 1 {
		t.Errorf("%d objects under the gateway's prefix, want 1", n)
	}

	// Rerun without the failing objects: all skipped.
	for _, k := range []string{longName, "data/conflict.txt"} {
		if _, err := cl.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &bucket, Key: aws.String(k)}); err != nil {
			t.Fatal(err)
		}
	}
	runCLI(t, env, args...).ok(t, fmt.Sprintf("adopted 0, skipped %d, failed 0", len(objs)))

	// Overwrite one adopted blob: after a collection pass its object is gone.
	if _, err := az.UploadBuffer(ctx, "adopted", "photos/cat.jpg", []byte("new cat"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := gateway.Collect(ctx, store, st, log); err != nil {
		t.Fatal(err)
	}
	if objExists("data/photos/cat.jpg") {
		t.Error("overwritten adopted object still exists after collection")
	}
	if got := readBlob(t, az, "adopted", "photos/cat.jpg"); string(got) != "new cat" {
		t.Errorf("overwritten blob reads %q", got)
	}

	// Delete another: an import before the collection pass refuses to adopt
	// the queued object again; after the pass the object is gone.
	if _, err := az.DeleteBlob(ctx, "adopted", "docs/readme.txt", nil); err != nil {
		t.Fatal(err)
	}
	runCLI(t, env, args...).fails(t, 1, "skipped 3, failed 1", "queued for collection")
	if _, err := gateway.Collect(ctx, store, st, log); err != nil {
		t.Fatal(err)
	}
	if objExists("data/docs/readme.txt") {
		t.Error("deleted adopted object still exists after collection")
	}
	for _, o := range objs[2:] {
		if !objExists("data/" + o.name) {
			t.Errorf("object %s vanished", o.name)
		}
		check(o)
	}
	if !objExists("elsewhere/not-mine.txt") {
		t.Error("object outside --prefix vanished")
	}
	runCLI(t, env, args...).ok(t, "adopted 0, skipped 3, failed 0")

	// Without --prefix the whole bucket is listed, except the gateway's own
	// objects under its prefix (conflict.txt's and the new cat's bytes).
	// The three data/ objects already back blobs of "adopted": refused.
	out := runCLI(t, env, "import", "s3", "--bucket", bucket, "--container", "whole").
		fails(t, 1, "skipped 2 objects of the gateway's own", "adopted 1, skipped 0, failed 3")
	if n := strings.Count(out, "already adopted as another blob"); n != 3 {
		t.Fatalf("whole bucket: %d refusals as already adopted, want 3:\n%s", n, out)
	}
	if got := readBlob(t, az, "whole", "elsewhere/not-mine.txt"); string(got) != "x" {
		t.Errorf("whole/elsewhere/not-mine.txt reads %q", got)
	}
	for _, o := range objs[2:] {
		if _, err := az.ServiceClient().NewContainerClient("whole").NewBlobClient("data/"+o.name).GetProperties(ctx, nil); err == nil {
			t.Errorf("whole/data/%s exists: the object backs adopted/%s already", o.name, o.name)
		}
	}
}

// TestImportS3TwoContainers: importing the same objects into a second
// container is refused object by object (the run goes on and exits 1),
// because deleting either blob would delete the object the other still
// serves. Once the first blob is gone and its object collected, an object
// put back under the same name can be adopted by the second container.
func TestImportS3TwoContainers(t *testing.T) {
	ctx := context.Background()
	e := newAdoptEnv(t)
	bucket, cl := e.cfg.Bucket, e.st.Client()
	put := func(key, body string) {
		t.Helper()
		if _, err := cl.PutObject(ctx, &awss3.PutObjectInput{Bucket: &bucket, Key: aws.String(key), Body: strings.NewReader(body), ContentType: aws.String("text/plain")}); err != nil {
			t.Fatal(err)
		}
	}
	put("shared/a.txt", "first a")
	put("shared/b.txt", "first b")
	importInto := func(cont string) cliRun {
		t.Helper()
		return runCLI(t, e.env, "import", "s3", "--bucket", bucket, "--prefix", "shared/", "--container", cont)
	}
	names := func(cont string) []string {
		t.Helper()
		c := e.az.ServiceClient().NewContainerClient(cont)
		if _, err := c.GetProperties(ctx, nil); err != nil {
			t.Fatalf("container %s: %v", cont, err)
		}
		return listNames(t, c)
	}

	importInto("first").ok(t, "adopted 2, skipped 0, failed 0")
	second := importInto("second")
	t.Logf("import into second:\n%s", second.out)
	// The summary and a refusal per object.
	want := []string{"adopted 0, skipped 0, failed 2"}
	for _, n := range []string{"a.txt", "b.txt"} {
		want = append(want, fmt.Sprintf("second/%s: adopt %s/second/%s: leasedb: the object is already adopted as another blob (%s/first/%s)",
			n, config.DevAccountName, n, config.DevAccountName, n))
	}
	second.fails(t, 1, want...)
	if got := names("second"); len(got) != 0 {
		t.Fatalf("second holds %q after the refused import", got)
	}

	// Deleting first/a.txt deletes the object once collected; first/b.txt
	// is untouched.
	if _, err := e.az.DeleteBlob(ctx, "first", "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := gateway.Collect(ctx, e.store, e.st, e.log); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &bucket, Key: aws.String("shared/a.txt")}); err == nil {
		t.Fatal("shared/a.txt survived the collection of its only blob")
	}
	if got := readBlob(t, e.az, "first", "b.txt"); string(got) != "first b" {
		t.Fatalf("first/b.txt reads %q", got)
	}

	// Put back, a.txt is free: second adopts it, b.txt is still first's.
	put("shared/a.txt", "second a")
	importInto("second").fails(t, 1, "adopted 1, skipped 0, failed 1", "(devstoreaccount1/first/b.txt)")
	if got := readBlob(t, e.az, "second", "a.txt"); string(got) != "second a" {
		t.Fatalf("second/a.txt reads %q", got)
	}
	// And now first may not take a.txt back.
	importInto("first").fails(t, 1, "adopted 0, skipped 1, failed 1", "(devstoreaccount1/second/a.txt)")
	if got := names("first"); !slices.Equal(got, []string{"b.txt"}) {
		t.Fatalf("first holds %q", got)
	}
}

func readBlob(t *testing.T, az *azblob.Client, cont, name string) []byte {
	t.Helper()
	dl, err := az.DownloadStream(context.Background(), cont, name, nil)
	if err != nil {
		t.Fatalf("%s/%s: %v", cont, name, err)
	}
	defer dl.Body.Close()
	b, err := io.ReadAll(dl.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
