package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
)

// TestCopySharesObjects: Copy Blob of a whole blob of this gateway (to
// another name, container or chain of copies) writes no byte: the new row
// shares the source's backend objects, and an object is collected only
// when the last blob name referencing it is gone: overwriting or deleting
// the source, deleting its container, or deleting one copy leaves every
// other copy readable; when all are gone, so are the objects.
func TestCopySharesObjects(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "share-a", "share-b")
		data := randBytes(600_000, 71)
		putBlocks(t, b.client, "share-a", "src", data, 200_000)
		objects := b.countObjects(t)

		copyTo := func(cont, name, from string) {
			t.Helper()
			resp, err := blockClient(b.client, cont, name).StartCopyFromURL(ctx, from, nil)
			if err != nil {
				t.Fatal(err)
			}
			if *resp.CopyStatus != blob.CopyStatusTypeSuccess {
				t.Fatalf("copy status %v", *resp.CopyStatus)
			}
		}
		src := blockClient(b.client, "share-a", "src")
		copyTo("share-a", "same-container", src.URL())
		copyTo("share-b", "other-container", src.URL())
		copyTo("share-b", "copy-of-copy", blockClient(b.client, "share-b", "other-container").URL())
		b.wantObjects(t, objects, "after three copies (more than before: bytes were copied)")
		check := func(cont, name string) {
			t.Helper()
			if got := download(t, b.client, cont, name); !bytes.Equal(got, data) {
				t.Fatalf("%s/%s: %d bytes, not the copied ones", cont, name, len(got))
			}
		}
		// The source goes (overwritten, then deleted with its container):
		// every copy stays readable once collection has run.
		if _, err := b.client.UploadBuffer(ctx, "share-a", "src", []byte("new"), nil); err != nil {
			t.Fatal(err)
		}
		b.collectAll(t)
		check("share-a", "same-container")
		if _, err := b.client.DeleteContainer(ctx, "share-a", nil); err != nil {
			t.Fatal(err)
		}
		b.collectAll(t)
		check("share-b", "other-container")
		check("share-b", "copy-of-copy")
		if _, err := blockClient(b.client, "share-b", "other-container").Delete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		b.collectAll(t)
		check("share-b", "copy-of-copy")
		b.checkNoLeak(t)
		// The last name goes: the objects are collected.
		if _, err := blockClient(b.client, "share-b", "copy-of-copy").Delete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		b.collectAll(t)
		b.wantObjects(t, 0, "left after every blob was deleted")
	})
}

// TestCopyShareRace: copies of a blob race with overwrites and deletes of
// it over three replicas. Each copy holds one whole version of the source
// (the bytes of the one it read), no copy loses bytes to collection, and a
// copy that fails does so only because the source was deleted at that
// moment (404 BlobNotFound).
//
// A delete commits without writing bytes, so it can win every race of a
// round against uploads that are still sending theirs (over MinIO on a
// busy machine the source can be absent for the whole round). Rounds
// repeat, each with new copy names, until some copies succeeded, so the
// checks below always check something.
func TestCopyShareRace(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind, setupOpts{replicas: 3})
		ctx := context.Background()
		createContainers(t, b.client, "race")
		versions := map[string]bool{}
		version := func(i int) []byte {
			return []byte(fmt.Sprintf("version %03d ", i) + string(randBytes(50_000, int64(i))))
		}
		for i := range 20 {
			versions[string(version(i))] = true
		}
		clients := []*azblob.Client{b.clientFor(t, 0), b.clientFor(t, 1), b.clientFor(t, 2)}
		const rounds, wantCopies = 10, 5
		var copies []string
		for round := 0; round < rounds && len(copies) < wantCopies; round++ {
			if _, err := b.client.UploadBuffer(ctx, "race", "src", version(0), nil); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			errs := make([]error, 20)
			for i := range 20 {
				wg.Add(2)
				go func() {
					defer wg.Done()
					// The source URL names the replica the copy is sent
					// to, so every source is local (read from the shared
					// store).
					c := clients[i%3]
					srcURL := blockClient(c, "race", "src").URL()
					_, errs[i] = blockClient(c, "race", fmt.Sprintf("copy-%d-%02d", round, i)).StartCopyFromURL(ctx, srcURL, nil)
				}()
				go func() {
					defer wg.Done()
					c := clients[(i+1)%3]
					if i%10 == 9 {
						_, err := blockClient(c, "race", "src").Delete(ctx, &blob.DeleteOptions{DeleteSnapshots: to.Ptr(blob.DeleteSnapshotsOptionTypeInclude)})
						if err != nil && codeOf(err) != "BlobNotFound" {
							t.Errorf("delete src: %v", err)
						}
						return
					}
					if _, err := c.UploadBuffer(ctx, "race", "src", version(i+1), nil); err != nil {
						t.Errorf("upload src: %v", err)
					}
				}()
			}
			wg.Wait()
			for i, err := range errs {
				switch {
				case err == nil:
					copies = append(copies, fmt.Sprintf("copy-%d-%02d", round, i))
				case statusOf(err) == 404 && codeOf(err) == "BlobNotFound":
					// The source was gone at that moment.
				default:
					t.Fatalf("copy-%d-%02d: %v", round, i, err)
				}
			}
			b.collectAll(t)
		}
		if len(copies) < wantCopies {
			t.Fatalf("%d copies succeeded in %d rounds; want at least %d", len(copies), rounds, wantCopies)
		}
		for _, name := range copies {
			if got := download(t, b.client, "race", name); !versions[string(got)] {
				t.Fatalf("%s holds %d bytes that are no whole version of the source", name, len(got))
			}
		}
		b.checkNoLeak(t)
	})
}
