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
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/blobgw/blobgw/backends/s3"
	"github.com/blobgw/blobgw/backends/s3/miniotest"
	"github.com/blobgw/blobgw/gateway"
	"github.com/blobgw/blobgw/gateway/auth"
	"github.com/blobgw/blobgw/internal/config"
	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/dbopen"
)

type s3Obj struct {
	name, contentType string
	data              []byte
	meta              map[string]string
	multipart         bool
}

func TestImportS3(t *testing.T) {
	ctx := context.Background()
	cfg := miniotest.NewBucket(t)
	cfg.Prefix = "gw/"
	st, err := s3.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
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

	// The gateway on the same metadata store and bucket/prefix.
	metaPath := filepath.Join(t.TempDir(), "meta.db")
	store, err := dbopen.Open(ctx, metaPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	acct, err := auth.NewAccount(config.DevAccountName, config.DevAccountKey)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := httptest.NewServer(gateway.New(&leasedb.DB{Store: store}, st, auth.MapAccounts{config.DevAccountName: acct}, log, gateway.Options{}))
	t.Cleanup(srv.Close)
	cred, err := azblob.NewSharedKeyCredential(config.DevAccountName, config.DevAccountKey)
	if err != nil {
		t.Fatal(err)
	}
	az, err := azblob.NewClientWithSharedKeyCredential(srv.URL+"/"+config.DevAccountName+"/", cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A blob of the gateway's own (under gw/) at a name an object maps to:
	// adoption must not replace it.
	if _, err := az.CreateContainer(ctx, "adopted", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := az.UploadBuffer(ctx, "adopted", "conflict.txt", []byte("the gateway's"), nil); err != nil {
		t.Fatal(err)
	}

	env := map[string]string{
		"BLOBGW_DATA_DIR": t.TempDir(), "BLOBGW_METADATA": metaPath, "BLOBGW_BACKEND": "s3",
		"BLOBGW_S3_ENDPOINT": cfg.Endpoint, "BLOBGW_S3_REGION": cfg.Region, "BLOBGW_S3_BUCKET": bucket,
		"BLOBGW_S3_PREFIX": cfg.Prefix, "BLOBGW_S3_ACCESS_KEY": cfg.AccessKey, "BLOBGW_S3_SECRET_KEY": cfg.SecretKey,
		"BLOBGW_S3_PATH_STYLE": "true",
	}
	args := []string{"import", "s3", "--bucket", bucket, "--prefix", "data/", "--container", "adopted"}

	// Wrong bucket and wrong backend are refused up front.
	if out, code := runApp(t, env, "import", "s3", "--bucket", "other", "--container", "adopted"); code != 2 || !strings.Contains(out, "not the configured s3 bucket") {
		t.Fatalf("wrong bucket (%d):\n%s", code, out)
	}
	if out, code := runApp(t, map[string]string{"BLOBGW_DATA_DIR": t.TempDir()}, args...); code != 2 || !strings.Contains(out, "backend: s3") {
		t.Fatalf("disk backend (%d):\n%s", code, out)
	}

	// First run: the long name and the name taken by another blob fail.
	out, code := runApp(t, env, args...)
	t.Logf("first run:\n%s", out)
	if code != 1 || !strings.Contains(out, fmt.Sprintf("adopted %d, skipped 0, failed 2", len(objs))) {
		t.Fatalf("first run (%d):\n%s", code, out)
	}
	if !strings.Contains(out, fmt.Sprintf("%d/%d objects", len(objs), len(objs)+2)) {
		t.Errorf("no progress line:\n%s", out)
	}
	if !strings.Contains(out, "at most 255 can be adopted") || !strings.Contains(out, "adopted/conflict.txt: ") || !strings.Contains(out, "different blob exists") {
		t.Errorf("per-object errors missing:\n%s", out)
	}
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
	out, code = runApp(t, env, args...)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("adopted 0, skipped %d, failed 0", len(objs))) {
		t.Fatalf("rerun (%d):\n%s", code, out)
	}

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
	out, code = runApp(t, env, args...)
	if code != 1 || !strings.Contains(out, "skipped 3, failed 1") || !strings.Contains(out, "queued for collection") {
		t.Fatalf("import of a queued object (%d):\n%s", code, out)
	}
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
	out, code = runApp(t, env, args...)
	if code != 0 || !strings.Contains(out, "adopted 0, skipped 3, failed 0") {
		t.Fatalf("final rerun (%d):\n%s", code, out)
	}

	// Without --prefix the whole bucket is listed, except the gateway's own
	// objects under its prefix (conflict.txt's and the new cat's bytes).
	out, code = runApp(t, env, "import", "s3", "--bucket", bucket, "--container", "whole")
	if code != 0 || !strings.Contains(out, "skipping 2 objects of the gateway's own") || !strings.Contains(out, "adopted 4, skipped 0, failed 0") {
		t.Fatalf("whole bucket (%d):\n%s", code, out)
	}
	if got := readBlob(t, az, "whole", "elsewhere/not-mine.txt"); string(got) != "x" {
		t.Errorf("whole/elsewhere/not-mine.txt reads %q", got)
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
