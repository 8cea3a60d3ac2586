package gateway_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/appendblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/google/uuid"
)

func appendClient(c *azblob.Client, cont, name string) *appendblob.Client {
	return c.ServiceClient().NewContainerClient(cont).NewAppendBlobClient(name)
}

// TestSealAppendBlob: Append Blob Seal makes an append blob refuse appends
// (409 BlobIsSealed, also From URL) and keeps its ETag; it is idempotent,
// checks the lease, If-* and appendpos under the row lock, is refused for
// block blobs and missing blobs; the flag shows on Get Blob Properties,
// List Blobs and snapshots, survives metadata and tag changes, travels
// with a copy unless x-ms-seal-blob says otherwise, and an overwrite
// starts unsealed.
func TestSealAppendBlob(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		c := b.client
		createContainers(t, c, "seal")
		ab := appendClient(c, "seal", "log")
		if _, err := ab.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := ab.AppendBlock(ctx, nopSeeker("abc"), nil); err != nil {
			t.Fatal(err)
		}
		before, err := ab.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if before.IsSealed != nil && *before.IsSealed {
			t.Fatal("a new append blob reports sealed")
		}

		// Conditions first: a stale If-Match and a wrong appendpos refuse.
		stale := azcore.ETag(`"0x8D000000000DEAD"`)
		_, err = ab.Seal(ctx, &appendblob.SealOptions{AccessConditions: &blob.AccessConditions{
			ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &stale}}})
		wantErr(t, err, 412, "ConditionNotMet")
		_, err = ab.Seal(ctx, &appendblob.SealOptions{AppendPositionAccessConditions: &appendblob.AppendPositionAccessConditions{AppendPosition: to.Ptr(int64(2))}})
		wantErr(t, err, 412, "AppendPositionConditionNotMet")

		resp, err := ab.Seal(ctx, &appendblob.SealOptions{
			AccessConditions:               &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: before.ETag}},
			AppendPositionAccessConditions: &appendblob.AppendPositionAccessConditions{AppendPosition: to.Ptr(int64(3))}})
		if err != nil {
			t.Fatal(err)
		}
		if resp.IsSealed == nil || !*resp.IsSealed || *resp.ETag != *before.ETag || !resp.LastModified.Equal(*before.LastModified) {
			t.Fatalf("seal answered sealed %v, ETag %v (was %v), Last-Modified %v (was %v)",
				resp.IsSealed, *resp.ETag, *before.ETag, resp.LastModified, before.LastModified)
		}
		if _, err := ab.Seal(ctx, nil); err != nil {
			t.Fatalf("sealing again: %v", err)
		}
		p, err := ab.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if p.IsSealed == nil || !*p.IsSealed || *p.ETag != *before.ETag {
			t.Fatalf("properties after seal: sealed %v, ETag %v", p.IsSealed, *p.ETag)
		}
		_, err = ab.AppendBlock(ctx, nopSeeker("def"), nil)
		wantErr(t, err, 409, "BlobIsSealed")
		_, err = ab.AppendBlockFromURL(ctx, blockClient(c, "seal", "log").URL(), nil)
		wantErr(t, err, 409, "BlobIsSealed")
		if got := download(t, c, "seal", "log"); string(got) != "abc" {
			t.Fatalf("sealed blob holds %q", got)
		}

		// Metadata and tags still change; the seal stays.
		if _, err := ab.SetMetadata(ctx, map[string]*string{"k": to.Ptr("v")}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := ab.SetTags(ctx, map[string]string{"t": "1"}, nil); err != nil {
			t.Fatal(err)
		}
		if p, err := ab.GetProperties(ctx, nil); err != nil || p.IsSealed == nil || !*p.IsSealed {
			t.Fatalf("after metadata and tags: %v, %v", p.IsSealed, err)
		}

		// A snapshot keeps the flag; List Blobs reports it.
		snap, err := ab.CreateSnapshot(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := ab.WithSnapshot(*snap.Snapshot)
		if err != nil {
			t.Fatal(err)
		}
		if p, err := sc.GetProperties(ctx, nil); err != nil || p.IsSealed == nil || !*p.IsSealed {
			t.Fatalf("snapshot: sealed %v, %v", p.IsSealed, err)
		}
		if _, err := c.UploadBuffer(ctx, "seal", "block", []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
		listed := map[string]string{}
		pager := c.NewListBlobsFlatPager("seal", &container.ListBlobsFlatOptions{Include: container.ListBlobsInclude{Snapshots: true}})
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range page.Segment.BlobItems {
				name := *it.Name
				if it.Snapshot != nil && *it.Snapshot != "" {
					name += "@snapshot"
				}
				listed[name] = fmt.Sprint(it.Properties.IsSealed != nil && *it.Properties.IsSealed)
			}
		}
		if want := map[string]string{"log": "true", "log@snapshot": "true", "block": "false"}; fmt.Sprint(listed) != fmt.Sprint(want) {
			t.Fatalf("listed sealed flags %v, want %v", listed, want)
		}

		// Not for block blobs or missing blobs.
		_, err = appendClient(c, "seal", "block").Seal(ctx, nil)
		wantErr(t, err, 409, "InvalidBlobType")
		_, err = appendClient(c, "seal", "missing").Seal(ctx, nil)
		wantErr(t, err, 404, "BlobNotFound")

		// Copies: the flag travels unless x-ms-seal-blob says otherwise.
		src := ab.URL()
		for _, tc := range []struct {
			name string
			seal *bool
			want bool
		}{{"copy-default", nil, true}, {"copy-unsealed", to.Ptr(false), false}} {
			if _, err := appendClient(c, "seal", tc.name).StartCopyFromURL(ctx, src, &blob.StartCopyFromURLOptions{SealBlob: tc.seal}); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			p, err := appendClient(c, "seal", tc.name).GetProperties(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.IsSealed != nil && *p.IsSealed; got != tc.want {
				t.Fatalf("%s: sealed %v, want %v", tc.name, got, tc.want)
			}
		}
		// x-ms-seal-blob seals a copy of an unsealed append blob.
		if _, err := appendClient(c, "seal", "open").Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := appendClient(c, "seal", "copy-sealed").StartCopyFromURL(ctx, appendClient(c, "seal", "open").URL(),
			&blob.StartCopyFromURLOptions{SealBlob: to.Ptr(true)}); err != nil {
			t.Fatal(err)
		}
		if p, err := appendClient(c, "seal", "copy-sealed").GetProperties(ctx, nil); err != nil || p.IsSealed == nil || !*p.IsSealed {
			t.Fatalf("copy with x-ms-seal-blob: true: sealed %v, %v", p.IsSealed, err)
		}

		// An overwrite starts unsealed.
		if _, err := ab.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := ab.AppendBlock(ctx, nopSeeker("new"), nil); err != nil {
			t.Fatalf("append after overwrite: %v", err)
		}

		// A leased blob needs the lease id to be sealed.
		id := uuid.NewString()
		lc, err := lease.NewBlobClient(ab, &lease.BlobClientOptions{LeaseID: &id})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lc.AcquireLease(ctx, -1, nil); err != nil {
			t.Fatal(err)
		}
		_, err = ab.Seal(ctx, nil)
		wantErr(t, err, 412, "LeaseIdMissing")
		if _, err := ab.Seal(ctx, &appendblob.SealOptions{AccessConditions: withLease(id)}); err != nil {
			t.Fatalf("seal with the lease id: %v", err)
		}
		if _, err := lc.ReleaseLease(ctx, nil); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSealRacesAppends: appends racing a seal over three replicas either
// land before it (and are in the blob, once each) or are refused with 409
// BlobIsSealed; none lands after the seal.
func TestSealRacesAppends(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind, setupOpts{replicas: 3})
		ctx := context.Background()
		createContainers(t, b.client, "sealrace")
		if _, err := appendClient(b.client, "sealrace", "log").Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		clients := []*azblob.Client{b.clientFor(t, 0), b.clientFor(t, 1), b.clientFor(t, 2)}
		const writers = 12
		landed := make([]int, writers)
		var wg sync.WaitGroup
		start := make(chan struct{})
		// Writers stop at the seal; if the test ends before it, they are
		// canceled, and waited for.
		wctx, cancel := context.WithCancel(ctx)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				ac := appendClient(clients[w%3], "sealrace", "log")
				for i := 0; ; i++ {
					_, err := ac.AppendBlock(wctx, nopSeeker(fmt.Sprintf("[%02d-%03d]", w, i)), nil)
					if err != nil {
						if codeOf(err) != "BlobIsSealed" && wctx.Err() == nil {
							t.Errorf("writer %d: %v", w, err)
						}
						return
					}
					landed[w]++
				}
			}()
		}
		writing := make(chan struct{})
		go func() { wg.Wait(); close(writing) }()
		defer func() { cancel(); <-writing }()
		close(start)
		// Seal once some appends are in (or every writer has stopped,
		// which only an error does: the test then fails on it).
	wait:
		for {
			select {
			case <-writing:
				t.Fatal("every writer stopped before the seal")
			default:
			}
			p, err := appendClient(clients[1], "sealrace", "log").GetProperties(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if *p.ContentLength >= 40*8 {
				break wait
			}
		}
		if _, err := appendClient(clients[2], "sealrace", "log").Seal(ctx, nil); err != nil {
			t.Fatal(err)
		}
		atSeal, err := appendClient(clients[0], "sealrace", "log").GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		got := string(download(t, b.client, "sealrace", "log"))
		if int64(len(got)) != *atSeal.ContentLength {
			t.Fatalf("the blob grew from %d to %d bytes after the seal", *atSeal.ContentLength, len(got))
		}
		total := 0
		for w, n := range landed {
			total += n
			for i := range n {
				if c := strings.Count(got, fmt.Sprintf("[%02d-%03d]", w, i)); c != 1 {
					t.Fatalf("writer %d block %d is in the blob %d times", w, i, c)
				}
			}
		}
		if len(got) != total*8 {
			t.Fatalf("blob holds %d bytes; %d appends of 8 bytes succeeded", len(got), total)
		}
	})
}
