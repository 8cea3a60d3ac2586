package gateway_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"reflect"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
)

func ifTags(expr string) *blob.AccessConditions {
	return &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfTags: to.Ptr(expr)}}
}

func tagMap(set []*blob.Tags) map[string]string {
	m := map[string]string{}
	for _, t := range set {
		m[*t.Key] = *t.Value
	}
	return m
}

func getTags(t *testing.T, bc *blockblob.Client) map[string]string {
	t.Helper()
	resp, err := bc.GetTags(context.Background(), nil)
	if err != nil {
		t.Fatalf("GetTags: %v", err)
	}
	return tagMap(resp.BlobTagSet)
}

func getProps(t *testing.T, bc *blockblob.Client) blob.GetPropertiesResponse {
	t.Helper()
	p, err := bc.GetProperties(context.Background(), nil)
	if err != nil {
		t.Fatalf("GetProperties: %v", err)
	}
	return p
}

func wantTier(t *testing.T, p blob.GetPropertiesResponse, tier string, inferred bool) {
	t.Helper()
	if p.AccessTier == nil || *p.AccessTier != tier {
		t.Fatalf("access tier = %v, want %s", p.AccessTier, tier)
	}
	if got := p.AccessTierInferred != nil && *p.AccessTierInferred; got != inferred {
		t.Fatalf("access tier inferred = %v, want %v", got, inferred)
	}
}

func wantTagCount(t *testing.T, p blob.GetPropertiesResponse, n int64) {
	t.Helper()
	var got int64
	if p.TagCount != nil {
		got = *p.TagCount
	}
	if got != n {
		t.Fatalf("tag count = %d, want %d", got, n)
	}
}

func TestAccessTier(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		c := b.client
		createContainers(t, c, "tiers")
		// Uploaded with a tier: reported as set, not inferred.
		if _, err := c.UploadBuffer(ctx, "tiers", "cool", []byte("cool data"), &azblob.UploadBufferOptions{AccessTier: to.Ptr(blob.AccessTierCool)}); err != nil {
			t.Fatal(err)
		}
		bc := blockClient(c, "tiers", "cool")
		p := getProps(t, bc)
		wantTier(t, p, "Cool", false)
		// Without a tier: Hot, inferred.
		if _, err := c.UploadBuffer(ctx, "tiers", "plain", []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
		wantTier(t, getProps(t, blockClient(c, "tiers", "plain")), "Hot", true)

		// Set Blob Tier: stored, reported, ETag and Last-Modified kept.
		if _, err := bc.SetTier(ctx, blob.AccessTierCold, nil); err != nil {
			t.Fatal(err)
		}
		p2 := getProps(t, bc)
		wantTier(t, p2, "Cold", false)
		if *p2.ETag != *p.ETag || !p2.LastModified.Equal(*p.LastModified) {
			t.Fatalf("Set Blob Tier changed ETag/Last-Modified: %v %v -> %v %v", *p.ETag, *p.LastModified, *p2.ETag, *p2.LastModified)
		}
		// Tier names are case-insensitive in, canonical out.
		if _, err := bc.SetTier(ctx, blob.AccessTier("hOT"), nil); err != nil {
			t.Fatal(err)
		}
		wantTier(t, getProps(t, bc), "Hot", false)
		_, err := bc.SetTier(ctx, blob.AccessTier("P10"), nil)
		wantErr(t, err, 400, "InvalidHeaderValue")
		_, err = c.UploadBuffer(ctx, "tiers", "bad", []byte("x"), &azblob.UploadBufferOptions{AccessTier: to.Ptr(blob.AccessTier("Lukewarm"))})
		wantErr(t, err, 400, "InvalidHeaderValue")
		_, err = blockClient(c, "tiers", "missing").SetTier(ctx, blob.AccessTierCool, nil)
		wantErr(t, err, 404, "BlobNotFound")

		// Archive: stored and reported; the bytes cannot be read until the
		// tier changes (no rehydration: the change is immediate).
		if _, err := bc.SetTier(ctx, blob.AccessTierArchive, nil); err != nil {
			t.Fatal(err)
		}
		wantTier(t, getProps(t, bc), "Archive", false)
		_, err = c.DownloadStream(ctx, "tiers", "cool", nil)
		wantErr(t, err, 409, "BlobArchived")
		if _, err := bc.SetTier(ctx, blob.AccessTierHot, nil); err != nil {
			t.Fatal(err)
		}
		if got := string(download(t, c, "tiers", "cool")); got != "cool data" {
			t.Fatalf("after leaving Archive: %q", got)
		}
		// Uploading straight to Archive.
		if _, err := c.UploadBuffer(ctx, "tiers", "cold-storage", []byte("x"), &azblob.UploadBufferOptions{AccessTier: to.Ptr(blob.AccessTierArchive)}); err != nil {
			t.Fatal(err)
		}
		_, err = c.DownloadStream(ctx, "tiers", "cold-storage", nil)
		wantErr(t, err, 409, "BlobArchived")

		// An overwrite without a tier starts over at Hot (inferred).
		if _, err := c.UploadBuffer(ctx, "tiers", "cold-storage", []byte("y"), nil); err != nil {
			t.Fatal(err)
		}
		wantTier(t, getProps(t, blockClient(c, "tiers", "cold-storage")), "Hot", true)

		// Put Block List carries the tier (and tags) too.
		bl := blockClient(c, "tiers", "blocks")
		id := base64.StdEncoding.EncodeToString([]byte("block-0"))
		if _, err := bl.StageBlock(ctx, id, nopSeeker("abc"), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := bl.CommitBlockList(ctx, []string{id}, &blockblob.CommitBlockListOptions{
			Tier: to.Ptr(blob.AccessTierCold), Tags: map[string]string{"via": "blocklist"}}); err != nil {
			t.Fatal(err)
		}
		p = getProps(t, bl)
		wantTier(t, p, "Cold", false)
		wantTagCount(t, p, 1)

		// Lease: Set Blob Tier checks the lease read-style — no id is
		// fine, a wrong id is not.
		leaseID := "11111111-2222-3333-4444-555555555555"
		if _, err := blobLease(t, bc, leaseID).AcquireLease(ctx, -1, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := bc.SetTier(ctx, blob.AccessTierCool, nil); err != nil {
			t.Fatalf("Set Blob Tier without a lease id on a leased blob: %v", err)
		}
		_, err = bc.SetTier(ctx, blob.AccessTierCool, &blob.SetTierOptions{AccessConditions: withLease("99999999-2222-3333-4444-555555555555")})
		wantErr(t, err, 412, "LeaseIdMismatchWithBlobOperation")

		// Append blobs have no tier.
		ac := c.ServiceClient().NewContainerClient("tiers").NewAppendBlobClient("log")
		if _, err := ac.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		ap, err := ac.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ap.AccessTier != nil {
			t.Fatalf("append blob reports tier %q", *ap.AccessTier)
		}
		// (The SDK refuses Set Blob Tier on an append blob client-side.)
		resp, _ := b.do(t, http.MethodPut, "tiers/log?comp=tier", "", map[string]string{"x-ms-access-tier": "Cool"})
		wantStatus(t, resp, 409, "InvalidBlobType", "Set Blob Tier on an append blob")

		// Listing reports the tiers.
		tiers := map[string]string{}
		pager := c.NewListBlobsFlatPager("tiers", nil)
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range page.Segment.BlobItems {
				tier := "-"
				if it.Properties.AccessTier != nil {
					tier = string(*it.Properties.AccessTier)
					if it.Properties.AccessTierInferred != nil && *it.Properties.AccessTierInferred {
						tier += " (inferred)"
					}
				}
				tiers[*it.Name] = tier
			}
		}
		want := map[string]string{"blocks": "Cold", "cold-storage": "Hot (inferred)", "cool": "Cool", "log": "-", "plain": "Hot (inferred)"}
		if !reflect.DeepEqual(tiers, want) {
			t.Fatalf("listed tiers = %v, want %v", tiers, want)
		}
	})
}

func TestBlobTags(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		c := b.client
		createContainers(t, c, "tagged")
		tags := map[string]string{"project": "blobgw", "env": "prod", "path": "a/b c+d=e:f_g.h-i", "empty": ""}
		if _, err := c.UploadBuffer(ctx, "tagged", "a", []byte("data"), &azblob.UploadBufferOptions{Tags: tags}); err != nil {
			t.Fatal(err)
		}
		bc := blockClient(c, "tagged", "a")
		p := getProps(t, bc)
		wantTagCount(t, p, 4)
		if got := getTags(t, bc); !reflect.DeepEqual(got, tags) {
			t.Fatalf("tags = %v, want %v", got, tags)
		}
		dl, err := bc.DownloadStream(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		dl.Body.Close()
		if dl.TagCount == nil || *dl.TagCount != 4 {
			t.Fatalf("Get Blob x-ms-tag-count = %v", dl.TagCount)
		}
		// A blob without tags has no tag count and an empty tag set.
		if _, err := c.UploadBuffer(ctx, "tagged", "untagged", []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
		wantTagCount(t, getProps(t, blockClient(c, "tagged", "untagged")), 0)
		if got := getTags(t, blockClient(c, "tagged", "untagged")); len(got) != 0 {
			t.Fatalf("untagged blob has tags %v", got)
		}

		// Set Blob Tags replaces the set; ETag and Last-Modified stay.
		newTags := map[string]string{"project": "other", "k": "v"}
		if _, err := bc.SetTags(ctx, newTags, nil); err != nil {
			t.Fatal(err)
		}
		p2 := getProps(t, bc)
		if *p2.ETag != *p.ETag || !p2.LastModified.Equal(*p.LastModified) {
			t.Fatalf("Set Blob Tags changed ETag/Last-Modified")
		}
		wantTagCount(t, p2, 2)
		if got := getTags(t, bc); !reflect.DeepEqual(got, newTags) {
			t.Fatalf("tags after set = %v, want %v", got, newTags)
		}
		// An empty set clears them.
		if _, err := bc.SetTags(ctx, map[string]string{}, nil); err != nil {
			t.Fatal(err)
		}
		wantTagCount(t, getProps(t, bc), 0)
		if _, err := bc.SetTags(ctx, newTags, nil); err != nil {
			t.Fatal(err)
		}

		// Invalid tags: 400 InvalidTag, on Set Blob Tags and on upload.
		eleven := map[string]string{}
		for i := 0; i < 11; i++ {
			eleven[fmt.Sprintf("k%d", i)] = "v"
		}
		long := string(make([]byte, 129))
		for _, bad := range []map[string]string{
			{"bad*key": "v"},
			{"k": "semi;colon"},
			{"ключ": "v"},
			eleven,
			{long: "v"},
		} {
			_, err := bc.SetTags(ctx, bad, nil)
			wantErr(t, err, 400, "InvalidTag")
			_, err = c.UploadBuffer(ctx, "tagged", "bad", []byte("x"), &azblob.UploadBufferOptions{Tags: bad})
			wantErr(t, err, 400, "InvalidTag")
		}
		if got := getTags(t, bc); !reflect.DeepEqual(got, newTags) {
			t.Fatalf("a refused Set Blob Tags changed the tags: %v", got)
		}
		_, err = blockClient(c, "tagged", "missing").SetTags(ctx, newTags, nil)
		wantErr(t, err, 404, "BlobNotFound")
		_, err = blockClient(c, "tagged", "missing").GetTags(ctx, nil)
		wantErr(t, err, 404, "BlobNotFound")
		_, err = blockClient(c, "no-such-container", "a").GetTags(ctx, nil)
		wantErr(t, err, 404, "ContainerNotFound")

		// Overwriting the blob without x-ms-tags drops the tags.
		if _, err := c.UploadBuffer(ctx, "tagged", "untagged", []byte("y"), &azblob.UploadBufferOptions{Tags: map[string]string{"t": "1"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.UploadBuffer(ctx, "tagged", "untagged", []byte("z"), nil); err != nil {
			t.Fatal(err)
		}
		if got := getTags(t, blockClient(c, "tagged", "untagged")); len(got) != 0 {
			t.Fatalf("overwrite kept tags %v", got)
		}
		// Set Metadata keeps them.
		if _, err := bc.SetMetadata(ctx, map[string]*string{"m": to.Ptr("1")}, nil); err != nil {
			t.Fatal(err)
		}
		if got := getTags(t, bc); !reflect.DeepEqual(got, newTags) {
			t.Fatalf("Set Metadata changed tags: %v", got)
		}

		// Leases: Set Blob Tags is a write (412 LeaseIdMissing without
		// the id), Get Blob Tags a read.
		leaseID := "11111111-2222-3333-4444-555555555555"
		lc := blobLease(t, bc, leaseID)
		if _, err := lc.AcquireLease(ctx, -1, nil); err != nil {
			t.Fatal(err)
		}
		_, err = bc.SetTags(ctx, map[string]string{"x": "1"}, nil)
		wantErr(t, err, 412, "LeaseIdMissing")
		if _, err := bc.SetTags(ctx, newTags, &blob.SetTagsOptions{AccessConditions: withLease(leaseID)}); err != nil {
			t.Fatal(err)
		}
		getTags(t, bc)
		_, err = bc.GetTags(ctx, &blob.GetTagsOptions{BlobAccessConditions: withLease("99999999-2222-3333-4444-555555555555")})
		wantErr(t, err, 412, "LeaseIdMismatchWithBlobOperation")
		if _, err := lc.ReleaseLease(ctx, nil); err != nil {
			t.Fatal(err)
		}

		// Listing with include=tags.
		got := map[string]map[string]string{}
		counts := map[string]int32{}
		pager := c.NewListBlobsFlatPager("tagged", &azblob.ListBlobsFlatOptions{Include: azblob.ListBlobsInclude{Tags: true}})
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range page.Segment.BlobItems {
				if it.BlobTags != nil {
					got[*it.Name] = tagMap(it.BlobTags.BlobTagSet)
				}
				if it.Properties.TagCount != nil {
					counts[*it.Name] = *it.Properties.TagCount
				}
			}
		}
		if want := map[string]map[string]string{"a": newTags}; !reflect.DeepEqual(got, want) {
			t.Fatalf("listed tags = %v, want %v", got, want)
		}
		if want := map[string]int32{"a": 2}; !reflect.DeepEqual(counts, want) {
			t.Fatalf("listed tag counts = %v, want %v", counts, want)
		}
		// Without include=tags: counts, but no tag sets.
		page, err := c.NewListBlobsFlatPager("tagged", nil).NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Segment.BlobItems {
			if it.BlobTags != nil {
				t.Fatalf("tags listed without include=tags: %s", *it.Name)
			}
		}
	})
}

func TestIfTags(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		c := b.client
		createContainers(t, c, "cond")
		tags := map[string]string{"state": "ready", "version": "0007"}
		if _, err := c.UploadBuffer(ctx, "cond", "b", []byte("v1"), &azblob.UploadBufferOptions{Tags: tags}); err != nil {
			t.Fatal(err)
		}
		bc := blockClient(c, "cond", "b")
		yes := `"state" = 'ready' AND "version" >= '0005'`
		no := `"state" = 'ready' AND "version" > '0007'`

		// Writes: evaluated with the other conditions in the commit.
		if _, err := bc.SetMetadata(ctx, map[string]*string{"m": to.Ptr("1")}, &blob.SetMetadataOptions{AccessConditions: ifTags(yes)}); err != nil {
			t.Fatalf("Set Metadata with a true x-ms-if-tags: %v", err)
		}
		_, err := bc.SetMetadata(ctx, nil, &blob.SetMetadataOptions{AccessConditions: ifTags(no)})
		wantErr(t, err, 412, "ConditionNotMet")
		_, err = bc.SetHTTPHeaders(ctx, blob.HTTPHeaders{}, &blob.SetHTTPHeadersOptions{AccessConditions: ifTags(no)})
		wantErr(t, err, 412, "ConditionNotMet")
		_, err = c.UploadBuffer(ctx, "cond", "b", []byte("v2"), &azblob.UploadBufferOptions{AccessConditions: ifTags(no), Tags: tags})
		wantErr(t, err, 412, "ConditionNotMet")
		_, err = bc.Delete(ctx, &blob.DeleteOptions{AccessConditions: ifTags(no)})
		wantErr(t, err, 412, "ConditionNotMet")
		_, err = bc.SetTags(ctx, map[string]string{"state": "done"}, &blob.SetTagsOptions{AccessConditions: ifTags(no)})
		wantErr(t, err, 412, "ConditionNotMet")
		_, err = bc.SetTier(ctx, blob.AccessTierCool, &blob.SetTierOptions{AccessConditions: ifTags(no)})
		wantErr(t, err, 412, "ConditionNotMet")
		_, err = blobLease(t, bc, "11111111-2222-3333-4444-555555555555").AcquireLease(ctx, 15,
			&lease.BlobAcquireOptions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfTags: to.Ptr(no)}})
		wantErr(t, err, 412, "ConditionNotMet")
		if got := string(download(t, c, "cond", "b")); got != "v1" {
			t.Fatalf("a refused write changed the blob: %q", got)
		}
		// OR, parentheses, <>: the condition grammar.
		if _, err := bc.SetTags(ctx, map[string]string{"state": "done", "version": "0008"},
			&blob.SetTagsOptions{AccessConditions: ifTags(`("state" = 'gone' OR "state" <> 'done') AND "version" = '0007'`)}); err != nil {
			t.Fatalf("Set Blob Tags with a true x-ms-if-tags: %v", err)
		}
		// A compare-and-swap on tags: the second identical request fails.
		swap := &blob.SetTagsOptions{AccessConditions: ifTags(`"version" = '0008'`)}
		if _, err := bc.SetTags(ctx, map[string]string{"state": "done", "version": "0009"}, swap); err != nil {
			t.Fatal(err)
		}
		_, err = bc.SetTags(ctx, map[string]string{"state": "done", "version": "0009"}, swap)
		wantErr(t, err, 412, "ConditionNotMet")
		// A missing blob cannot satisfy x-ms-if-tags: even a create fails.
		_, err = c.UploadBuffer(ctx, "cond", "new", []byte("x"), &azblob.UploadBufferOptions{AccessConditions: ifTags(`"a" = 'b'`)})
		wantErr(t, err, 412, "ConditionNotMet")
		_, err = blockClient(c, "cond", "new").Delete(ctx, &blob.DeleteOptions{AccessConditions: ifTags(`"a" = 'b'`)})
		wantErr(t, err, 412, "ConditionNotMet")

		// Reads.
		now := `"version" = '0009'`
		if _, err := bc.GetProperties(ctx, &blob.GetPropertiesOptions{AccessConditions: ifTags(now)}); err != nil {
			t.Fatal(err)
		}
		_, err = bc.GetProperties(ctx, &blob.GetPropertiesOptions{AccessConditions: ifTags(no)})
		wantErr(t, err, 412, "ConditionNotMet")
		dl, err := bc.DownloadStream(ctx, &blob.DownloadStreamOptions{AccessConditions: ifTags(now)})
		if err != nil {
			t.Fatal(err)
		}
		dl.Body.Close()
		_, err = bc.DownloadStream(ctx, &blob.DownloadStreamOptions{AccessConditions: ifTags(no)})
		wantErr(t, err, 412, "ConditionNotMet")
		if _, err := bc.GetTags(ctx, &blob.GetTagsOptions{BlobAccessConditions: ifTags(now)}); err != nil {
			t.Fatal(err)
		}
		_, err = bc.GetTags(ctx, &blob.GetTagsOptions{BlobAccessConditions: ifTags(no)})
		wantErr(t, err, 412, "ConditionNotMet")
		_, err = bc.GetBlockList(ctx, blockblob.BlockListTypeAll, &blockblob.GetBlockListOptions{AccessConditions: ifTags(no)})
		wantErr(t, err, 412, "ConditionNotMet")
		if _, err := bc.GetBlockList(ctx, blockblob.BlockListTypeAll, &blockblob.GetBlockListOptions{AccessConditions: ifTags(now)}); err != nil {
			t.Fatal(err)
		}

		// Syntax errors are 400 InvalidHeaderValue naming the header.
		for _, bad := range []string{`"state" = ready`, `"state" == 'x'`, `("state" = 'x'`, `@container = 'cond'`} {
			_, err = bc.GetProperties(ctx, &blob.GetPropertiesOptions{AccessConditions: ifTags(bad)})
			wantErr(t, err, 400, "InvalidHeaderValue")
			_, err = bc.SetMetadata(ctx, nil, &blob.SetMetadataOptions{AccessConditions: ifTags(bad)})
			wantErr(t, err, 400, "InvalidHeaderValue")
		}
		resp, _ := b.do(t, http.MethodHead, "cond/b", "", map[string]string{"x-ms-if-tags": `"state" = `})
		wantStatus(t, resp, 400, "InvalidHeaderValue", "raw bad x-ms-if-tags")
	})
}

// TestRehydratePriority: Set Blob Tier takes x-ms-rehydrate-priority
// Standard or High (leaving Archive is immediate, which meets either) and
// refuses any other value with 400, changing nothing.
func TestRehydratePriority(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "rehydrate")
	if _, err := b.client.UploadBuffer(ctx, "rehydrate", "x", []byte("x"), &azblob.UploadBufferOptions{AccessTier: to.Ptr(blob.AccessTierArchive)}); err != nil {
		t.Fatal(err)
	}
	resp, _ := b.do(t, "PUT", "rehydrate/x?comp=tier", "", map[string]string{"x-ms-access-tier": "Hot", "x-ms-rehydrate-priority": "Urgent"})
	wantStatus(t, resp, http.StatusBadRequest, "InvalidHeaderValue", "rehydrate priority Urgent")
	p, err := blockClient(b.client, "rehydrate", "x").GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.AccessTier == nil || *p.AccessTier != string(blob.AccessTierArchive) {
		t.Fatalf("tier %v after a refused Set Blob Tier, want Archive", p.AccessTier)
	}
	resp, _ = b.do(t, "PUT", "rehydrate/x?comp=tier", "", map[string]string{"x-ms-access-tier": "Hot", "x-ms-rehydrate-priority": "High"})
	wantStatus(t, resp, http.StatusOK, "", "rehydrate priority High")
}
