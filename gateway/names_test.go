package gateway_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/blobgw/blobgw/backends"
)

// TestPathTricksInNames: blob names are only names. Dot segments, encoded
// dots and backslashes never escape the backend's root or reach another
// container or account: bytes live under generated keys, and a name is
// compared as a whole string. NUL is refused.
func TestPathTricksInNames(t *testing.T) {
	const otherKey = "b3RoZXJrZXlvdGhlcmtleW90aGVya2V5b3RoZXJrZXlvdGhlcmtleQ=="
	forKinds(t, []string{"sqlite+disk", "postgres+s3"}, func(t *testing.T, kind string) {
		b := setup(t, kind, setupOpts{accounts: map[string]string{"other": otherKey}})
		ctx := context.Background()
		createContainers(t, b.client, "mine")
		cred, _ := azblob.NewSharedKeyCredential("other", otherKey)
		other, err := azblob.NewClientWithSharedKeyCredential(b.servers[0].URL+"/other/", cred, nil)
		if err != nil {
			t.Fatal(err)
		}
		createContainers(t, other, "theirs")
		if _, err := other.UploadBuffer(ctx, "theirs", "secret.txt", []byte("secret"), nil); err != nil {
			t.Fatal(err)
		}
		names := []string{
			"../../../../etc/passwd",
			"../theirs/secret.txt",
			"../../other/theirs/secret.txt",
			"%2e%2e/%2e%2e/x",
			"a/./b/../c",
			`..\..\windows`,
			"/leading/slash",
		}
		for _, n := range names {
			if _, err := b.client.UploadBuffer(ctx, "mine", n, []byte("name:"+n), nil); err != nil {
				t.Fatalf("upload %q: %v", n, err)
			}
		}
		// The other account's blob is untouched and unreachable from here.
		if got := string(download(t, other, "theirs", "secret.txt")); got != "secret" {
			t.Fatalf("other account's blob changed: %q", got)
		}
		_, err = b.client.DownloadStream(ctx, "theirs", "secret.txt", nil)
		wantErr(t, err, 404, "ContainerNotFound")
		// Every name reads back its own bytes.
		listed := flatNames(t, b.client, "mine")
		// Stored names are the names sent ("\\" read as "/", as Azure
		// does), and each holds its own bytes.
		want := map[string]string{}
		for _, n := range names {
			want[strings.ReplaceAll(n, `\`, "/")] = "name:" + n
		}
		if len(listed) != len(want) {
			t.Fatalf("listed %q, want the %d names sent", listed, len(want))
		}
		for _, n := range listed {
			body, ok := want[n]
			if !ok {
				t.Fatalf("listed name %q was never sent (sent %q)", n, names)
			}
			if got := string(download(t, b.client, "mine", n)); got != body {
				t.Fatalf("blob %q holds %q, want %q", n, got, body)
			}
		}
		// NUL in a name is refused.
		resp, _ := b.do(t, "PUT", "mine/a%00b", "x", map[string]string{"x-ms-blob-type": "BlockBlob"})
		if resp.StatusCode != 400 {
			t.Fatalf("NUL in a blob name: %d", resp.StatusCode)
		}
		// Every stored object has a generated key; nothing was written
		// outside the backend.
		keyRE := regexp.MustCompile(`^b/[0-9a-f]{2}/[0-9a-f]{2}/[0-9a-f]{32}$`)
		if err := b.backend.List(ctx, "", func(o backends.ObjectInfo) error {
			if !keyRE.MatchString(o.Key) {
				t.Errorf("object key %q is not a generated key", o.Key)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(kind, "+disk") {
			entries, _ := os.ReadDir(b.dataDir)
			for _, e := range entries {
				if e.Name() != "blobs" {
					t.Errorf("unexpected entry %q in the data directory", e.Name())
				}
			}
			if _, err := os.Stat(filepath.Join(b.dataDir, "..", "etc")); err == nil {
				t.Error("a name escaped the data directory")
			}
		}
	})
}

// flatNames lists the names of a container's blobs, every page.
func flatNames(t *testing.T, c *azblob.Client, cont string) []string {
	t.Helper()
	var names []string
	pager := c.NewListBlobsFlatPager(cont, nil)
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
