package s3_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/blobgw/blobgw/backends"
	"github.com/blobgw/blobgw/backends/s3"
	"github.com/blobgw/blobgw/backends/s3/miniotest"
)

func TestAdoptedKeyRoundTrip(t *testing.T) {
	names := []string{
		"a", "ab", "abc", "cat.jpg", "dir/sub/dog.png", "with space & ümlaut?#%", "/leading", "trailing/",
		"..", "x/y", "b/00/11/0011", strings.Repeat("z", 149), strings.Repeat("z", 150), strings.Repeat("z", 151),
		strings.Repeat("é", 127), strings.Repeat("q", s3.MaxAdoptedName), "\x00\xff binary",
	}
	for _, n := range names {
		k := s3.AdoptedKey(n)
		if !strings.HasPrefix(k, "x/") || !backends.ValidKey(k) {
			t.Fatalf("AdoptedKey(%q) = %q: not a valid x/ key", n, k)
		}
		for _, seg := range strings.Split(k, "/") {
			if len(seg) > 200 {
				t.Fatalf("AdoptedKey(%q) = %q: segment of %d bytes", n, k, len(seg))
			}
		}
		got, ok := s3.AdoptedName(k)
		if !ok || got != n {
			t.Fatalf("AdoptedName(AdoptedKey(%q)) = %q, %v", n, got, ok)
		}
	}
	// Ordinary keys, including x/ keys that are no canonical encoding, are
	// not adopted keys.
	for _, k := range []string{"k", "x", "x/y", "x/.../y", "x/.hidden", "x/YQ==", "x/YR", "x/YQ/", "x/Y/Q", "b/00/11/0011", "y/YQ"} {
		if n, ok := s3.AdoptedName(k); ok {
			t.Errorf("AdoptedName(%q) = %q, true; want false", k, n)
		}
	}
}

func TestAdoptedObjects(t *testing.T) {
	cfg := miniotest.NewBucket(t)
	cfg.Prefix = "gw/"
	s := newStore(t, cfg)
	ctx := context.Background()
	put := func(name, body string) {
		t.Helper()
		if _, err := s.Client().PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String(s.Bucket()), Key: aws.String(name), Body: strings.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	exists := func(name string) bool {
		t.Helper()
		_, err := s.Client().HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String(s.Bucket()), Key: aws.String(name)})
		return err == nil
	}
	put("photos/cat.jpg", "meow meow")
	put("docs/a b.txt", "hello")
	put("other", "x")
	// The gateway's own object under the prefix, reached as "k".
	if err := s.Put(ctx, "k", bytes.NewReader([]byte("own")), 3); err != nil {
		t.Fatal(err)
	}

	cat := s3.AdoptedKey("photos/cat.jpg")
	if got := string(readAll(t, s, cat)); got != "meow meow" {
		t.Fatalf("Open(adopted cat) = %q", got)
	}
	rc, err := s.Open(ctx, cat, 5, 4)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	buf.ReadFrom(rc)
	rc.Close()
	if buf.String() != "meow" {
		t.Fatalf("ranged Open = %q", buf.String())
	}
	if info, err := s.Stat(ctx, cat); err != nil || info.Size != 9 || info.Key != cat {
		t.Fatalf("Stat(adopted) = %+v, %v", info, err)
	}
	if _, err := s.Stat(ctx, s3.AdoptedKey("missing")); !errors.Is(err, backends.ErrNotFound) {
		t.Fatalf("Stat(missing adopted) = %v", err)
	}
	// Put never writes an adopted key (nor over the user's object).
	if err := s.Put(ctx, s3.AdoptedKey("new"), bytes.NewReader([]byte("n")), 1); err == nil {
		t.Fatal("Put(adopted key) succeeded")
	}
	if exists("new") || exists("gw/"+s3.AdoptedKey("new")) {
		t.Fatal("Put(adopted key) left an object")
	}
	// List reports only the Store's own key space.
	if got := listKeys(t, s, ""); !slices.Equal(got, []string{"k"}) {
		t.Fatalf("List = %q", got)
	}

	if err := s.Delete(ctx, cat); err != nil {
		t.Fatal(err)
	}
	if exists("photos/cat.jpg") {
		t.Fatal("Delete(adopted) left the object")
	}
	if err := s.DeleteMany(ctx, []string{s3.AdoptedKey("docs/a b.txt"), "k", s3.AdoptedKey("gone")}); err != nil {
		t.Fatal(err)
	}
	if exists("docs/a b.txt") || exists("gw/k") {
		t.Fatal("DeleteMany left objects")
	}
	if !exists("other") {
		t.Fatal("an unrelated object was deleted")
	}
}
