package gateway_test

import (
	"context"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/pageblob"
)

const gib = int64(1) << 30

// listTiers lists a container flat and returns each blob's AccessTier
// ("" when the listing has none) and whether AccessTierInferred was sent.
func listTiers(t *testing.T, c *azblob.Client, cont string) (tiers map[string]string, inferred map[string]bool) {
	t.Helper()
	tiers, inferred = map[string]string{}, map[string]bool{}
	pager := c.NewListBlobsFlatPager(cont, nil)
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Segment.BlobItems {
			tiers[*it.Name] = ""
			if it.Properties.AccessTier != nil {
				tiers[*it.Name] = string(*it.Properties.AccessTier)
			}
			inferred[*it.Name] = it.Properties.AccessTierInferred != nil && *it.Properties.AccessTierInferred
		}
	}
	return tiers, inferred
}

// wantPageTier asserts Get Blob Properties' x-ms-access-tier (nil for "") and
// that an explicit tier is reported as not inferred.
func wantPageTier(t *testing.T, pb *pageblob.Client, want string) {
	t.Helper()
	p, err := pb.GetProperties(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case want == "" && p.AccessTier != nil:
		t.Fatalf("%s: tier %q, want none", pb.URL(), *p.AccessTier)
	case want == "":
	case p.AccessTier == nil || *p.AccessTier != want:
		t.Fatalf("%s: tier %v, want %s", pb.URL(), p.AccessTier, want)
	case p.AccessTierInferred == nil || *p.AccessTierInferred:
		t.Fatalf("%s: x-ms-access-tier-inferred %v, want false", pb.URL(), p.AccessTierInferred)
	}
}

// TestPremiumPageTiers: a premium page blob tier (P4 ... P80, any letter
// case) is stored on a page blob as a premium account stores it: by Put
// Blob, Set Blob Tier and Copy Blob, reported canonical by Get Blob, Get
// Blob Properties (x-ms-access-tier-inferred false) and List Blobs; a
// page blob without a tier reports none. A premium tier on a block or
// append blob is not a tier (400 InvalidHeaderValue); Hot etc. on a page
// blob stay 409 InvalidBlobType; Set Blob Tier does not change the ETag.
func TestPremiumPageTiers(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		c := b.client
		createContainers(t, c, "tiers")
		// Put Blob with a tier, in any letter case.
		if _, err := pageClient(c, "tiers", "p4").Create(ctx, 512, &pageblob.CreateOptions{Tier: to.Ptr(pageblob.PremiumPageBlobAccessTierP4)}); err != nil {
			t.Fatal(err)
		}
		if _, err := pageClient(c, "tiers", "p80").Create(ctx, 4096, &pageblob.CreateOptions{Tier: to.Ptr(pageblob.PremiumPageBlobAccessTier("p80"))}); err != nil {
			t.Fatal(err)
		}
		wantPageTier(t, pageClient(c, "tiers", "p4"), "P4")
		wantPageTier(t, pageClient(c, "tiers", "p80"), "P80")

		// Set Blob Tier on a page blob without a tier, then again.
		pb := pageClient(c, "tiers", "disk")
		if _, err := pb.Create(ctx, 4096, nil); err != nil {
			t.Fatal(err)
		}
		wantPageTier(t, pb, "")
		before, err := pb.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pb.SetTier(ctx, blob.AccessTier("p30"), nil); err != nil {
			t.Fatal(err)
		}
		wantPageTier(t, pb, "P30")
		if _, err := pb.SetTier(ctx, blob.AccessTierP10, nil); err != nil {
			t.Fatal(err)
		}
		wantPageTier(t, pb, "P10")
		after, err := pb.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *after.ETag != *before.ETag {
			t.Fatalf("Set Blob Tier changed the ETag: %s -> %s", *before.ETag, *after.ETag)
		}
		// Get Blob reports it too.
		resp, _ := b.do(t, "GET", "tiers/disk", "", nil)
		if got, inf := resp.Header.Get("x-ms-access-tier"), resp.Header.Get("x-ms-access-tier-inferred"); resp.StatusCode != 200 || got != "P10" || inf != "false" {
			t.Fatalf("Get Blob: %d, x-ms-access-tier %q, inferred %q", resp.StatusCode, got, inf)
		}

		// Copy Blob of a page blob with a tier stores it on the copy;
		// without one the copy has none (the source's is not copied).
		if _, err := pageClient(c, "tiers", "copy").StartCopyFromURL(ctx, pb.URL(), &blob.StartCopyFromURLOptions{Tier: to.Ptr(blob.AccessTier("P15"))}); err != nil {
			t.Fatal(err)
		}
		wantPageTier(t, pageClient(c, "tiers", "copy"), "P15")
		if _, err := pageClient(c, "tiers", "plain").StartCopyFromURL(ctx, pb.URL(), nil); err != nil {
			t.Fatal(err)
		}
		wantPageTier(t, pageClient(c, "tiers", "plain"), "")

		// Refusals, each leaving everything as it was.
		_, err = pb.SetTier(ctx, blob.AccessTierHot, nil)
		wantErr(t, err, 409, "InvalidBlobType")
		_, err = pageClient(c, "tiers", "hot").Create(ctx, 512, &pageblob.CreateOptions{Tier: to.Ptr(pageblob.PremiumPageBlobAccessTier("Hot"))})
		wantErr(t, err, 400, "InvalidHeaderValue")
		_, err = pageClient(c, "tiers", "missing").SetTier(ctx, blob.AccessTierP10, nil)
		wantErr(t, err, 404, "BlobNotFound")
		bb := blockClient(c, "tiers", "block")
		if _, err := bb.Upload(ctx, nopSeeker("x"), nil); err != nil {
			t.Fatal(err)
		}
		_, err = bb.SetTier(ctx, blob.AccessTierP10, nil)
		wantErr(t, err, 400, "InvalidHeaderValue")
		ab := appendClient(c, "tiers", "append")
		if _, err := ab.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		// The append blob client refuses SetTier itself: the plain
		// blob client sends it.
		_, err = c.ServiceClient().NewContainerClient("tiers").NewBlobClient("append").SetTier(ctx, blob.AccessTierP10, nil)
		wantErr(t, err, 400, "InvalidHeaderValue")
		// Put Page, Put Page From URL and Incremental Copy Blob carry
		// no tier: x-ms-access-tier there is refused, not dropped.
		page := strings.Repeat("z", 512)
		for _, hdr := range []map[string]string{
			{"x-ms-page-write": "update", "x-ms-range": "bytes=0-511"},
			{"x-ms-page-write": "update", "x-ms-range": "bytes=0-511", "x-ms-copy-source": pb.URL(), "x-ms-source-range": "bytes=0-511"},
		} {
			hdr["x-ms-access-tier"] = "P20"
			body := page
			if hdr["x-ms-copy-source"] != "" {
				body = ""
			}
			resp, _ := b.do(t, "PUT", "tiers/disk?comp=page", body, hdr)
			if resp.StatusCode != 400 || resp.Header.Get("x-ms-error-code") != "UnsupportedHeader" {
				t.Fatalf("Put Page %v: %d %s", hdr, resp.StatusCode, resp.Header.Get("x-ms-error-code"))
			}
		}
		snap, err := pb.CreateSnapshot(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, _ = b.do(t, "PUT", "tiers/incr?comp=incrementalcopy", "", map[string]string{
			"x-ms-copy-source": pb.URL() + "?snapshot=" + *snap.Snapshot, "x-ms-access-tier": "P20"})
		if resp.StatusCode != 400 || resp.Header.Get("x-ms-error-code") != "UnsupportedHeader" {
			t.Fatalf("Incremental Copy Blob with a tier: %d %s", resp.StatusCode, resp.Header.Get("x-ms-error-code"))
		}
		wantPageTier(t, pb, "P10")
		if p, err := pb.GetProperties(ctx, nil); err != nil || *p.ETag != *after.ETag {
			t.Fatalf("a refused page write changed the blob: %v", err)
		}

		tiers, inferred := listTiers(t, c, "tiers")
		want := map[string]string{"p4": "P4", "p80": "P80", "disk": "P10", "copy": "P15", "plain": "", "block": "Hot", "append": ""}
		if len(tiers) != len(want) {
			t.Fatalf("listing %v, want %v", tiers, want)
		}
		for name, tier := range want {
			if got, ok := tiers[name]; !ok || got != tier {
				t.Fatalf("List Blobs %s: AccessTier %q, want %q (all: %v)", name, got, tier, tiers)
			}
			if inferred[name] != (name == "block") {
				t.Fatalf("List Blobs %s: AccessTierInferred %v", name, inferred[name])
			}
		}
	})
}

// TestPremiumPageTierSizes: a premium tier bounds its page blob's length
// (P4 32 GiB ... P80 32767 GiB): Put Blob, Copy Blob and Set Blob Tier of
// a blob longer than the tier allows, and a resize past it, are 409
// BlobTierInadequateForContentLength and change nothing; exactly the
// limit is taken. The blobs are sparse: no byte is written.
func TestPremiumPageTierSizes(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		c := b.client
		createContainers(t, c, "sizes")
		_, err := pageClient(c, "sizes", "big").Create(ctx, 32*gib+512, &pageblob.CreateOptions{Tier: to.Ptr(pageblob.PremiumPageBlobAccessTierP4)})
		wantErr(t, err, 409, "BlobTierInadequateForContentLength")
		if _, err := pageClient(c, "sizes", "big").GetProperties(ctx, nil); statusOf(err) != 404 {
			t.Fatalf("a refused Put Blob left a blob (status %d)", statusOf(err))
		}
		p4 := pageClient(c, "sizes", "p4")
		if _, err := p4.Create(ctx, 32*gib, &pageblob.CreateOptions{Tier: to.Ptr(pageblob.PremiumPageBlobAccessTierP4)}); err != nil {
			t.Fatal(err)
		}
		_, err = p4.Resize(ctx, 32*gib+512, nil)
		wantErr(t, err, 409, "BlobTierInadequateForContentLength")
		if p, err := p4.GetProperties(ctx, nil); err != nil || *p.ContentLength != 32*gib {
			t.Fatalf("after a refused resize: %v, %v", p, err)
		}
		// A larger tier lets it grow; a smaller one than its length is
		// refused.
		if _, err := p4.SetTier(ctx, blob.AccessTierP6, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := p4.Resize(ctx, 64*gib, nil); err != nil {
			t.Fatal(err)
		}
		_, err = p4.SetTier(ctx, blob.AccessTierP4, nil)
		wantErr(t, err, 409, "BlobTierInadequateForContentLength")
		wantPageTier(t, p4, "P6")
		_, err = pageClient(c, "sizes", "copy").StartCopyFromURL(ctx, p4.URL(), &blob.StartCopyFromURLOptions{Tier: to.Ptr(blob.AccessTierP4)})
		wantErr(t, err, 409, "BlobTierInadequateForContentLength")
		if _, err := pageClient(c, "sizes", "copy").GetProperties(ctx, nil); statusOf(err) != 404 {
			t.Fatalf("a refused Copy Blob left a blob (status %d)", statusOf(err))
		}
		// Without a tier, a page blob has no such limit.
		free := pageClient(c, "sizes", "free")
		if _, err := free.Create(ctx, 512, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := free.Resize(ctx, 40*gib, nil); err != nil {
			t.Fatal(err)
		}
		_, err = free.SetTier(ctx, blob.AccessTierP4, nil)
		wantErr(t, err, 409, "BlobTierInadequateForContentLength")
		wantPageTier(t, free, "")
		if _, err := free.SetTier(ctx, blob.AccessTierP80, nil); err != nil {
			t.Fatal(err)
		}
		wantPageTier(t, free, "P80")
	})
}
