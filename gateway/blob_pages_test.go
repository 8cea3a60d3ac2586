package gateway_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"fmt"
	"math/rand"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/pageblob"
	"github.com/blobgw/blobgw/gateway"
	"github.com/blobgw/blobgw/internal/config"
	"github.com/blobgw/blobgw/leasedb"
)

func pageClient(c *azblob.Client, cont, name string) *pageblob.Client {
	return c.ServiceClient().NewContainerClient(cont).NewPageBlobClient(name)
}

func rangeOf(off, n int64) blob.HTTPRange { return blob.HTTPRange{Offset: off, Count: n} }

// downloadRange reads [off, off+n) of a blob (n 0: to the end) through pb.
func downloadRange(t *testing.T, pb *pageblob.Client, off, n int64) []byte {
	t.Helper()
	_, data := getBlob(t, pb.BlobClient(), &blob.DownloadStreamOptions{Range: rangeOf(off, n)}, fmt.Sprintf("%d+%d", off, n))
	return data
}

// pageRanges lists a page blob's written ranges as [start, end] pairs
// (inclusive ends, as on the wire), all pages of the pager.
func pageRanges(t *testing.T, pb *pageblob.Client, o *pageblob.GetPageRangesOptions) [][2]int64 {
	t.Helper()
	var out [][2]int64
	p := pb.NewGetPageRangesPager(o)
	for p.More() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("get page ranges: %v", err)
		}
		for _, r := range page.PageRange {
			out = append(out, [2]int64{*r.Start, *r.End})
		}
	}
	return out
}

// modelRanges is what Get Page Ranges must say of a model in which written
// marks the written pages: maximal runs of written pages.
func modelRanges(written []bool) [][2]int64 {
	var out [][2]int64
	for i := 0; i < len(written); i++ {
		if !written[i] {
			continue
		}
		j := i
		for j+1 < len(written) && written[j+1] {
			j++
		}
		out = append(out, [2]int64{int64(i) * 512, int64(j+1)*512 - 1})
		i = j
	}
	return out
}

// TestPageBlobs: Put Blob creates a page blob of zeros with its sequence
// number; Put Page writes (MD5 checked) and clears; Get Page Ranges (with
// Range, on a snapshot, and the diff form with ClearRange); Get Blob
// streams runs and zeros, with Range; Get Properties and List Blobs report
// the type and sequence number; resize and the sequence number actions;
// snapshots keep their pages whatever the base does.
func TestPageBlobs(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		c := b.client
		createContainers(t, c, "pages")
		pb := pageClient(c, "pages", "disk.vhd")
		const size = 16 << 10
		if _, err := pb.Create(ctx, size, &pageblob.CreateOptions{SequenceNumber: to.Ptr(int64(3)),
			HTTPHeaders: &blob.HTTPHeaders{BlobContentType: to.Ptr("application/x-vhd")},
			Metadata:    map[string]*string{"vm": to.Ptr("one")}}); err != nil {
			t.Fatal(err)
		}
		props, err := pb.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *props.BlobType != blob.BlobTypePageBlob || *props.ContentLength != size || props.BlobSequenceNumber == nil || *props.BlobSequenceNumber != 3 ||
			*props.ContentType != "application/x-vhd" || *props.Metadata["Vm"] != "one" {
			t.Fatalf("properties of a new page blob: type %v length %v seq %v type %v meta %v",
				*props.BlobType, *props.ContentLength, props.BlobSequenceNumber, *props.ContentType, props.Metadata)
		}
		model := make([]byte, size)
		if got := download(t, c, "pages", "disk.vhd"); !bytes.Equal(got, model) {
			t.Fatalf("a new page blob reads %d bytes, not %d zeros", len(got), size)
		}

		data := randBytes(3072, 1)
		up, err := pb.UploadPages(ctx, rsc{bytes.NewReader(data)}, rangeOf(1024, 3072),
			&pageblob.UploadPagesOptions{TransactionalValidation: blob.TransferValidationTypeMD5(md5Of(data))})
		if err != nil {
			t.Fatal(err)
		}
		copy(model[1024:], data)
		if up.BlobSequenceNumber == nil || *up.BlobSequenceNumber != 3 || up.ContentMD5 == nil || !bytes.Equal(up.ContentMD5, md5Of(data)) {
			t.Fatalf("Put Page answered seq %v, MD5 %x", up.BlobSequenceNumber, up.ContentMD5)
		}
		// A second write across the first one's end and a hole.
		data2 := randBytes(2048, 2)
		if _, err := pb.UploadPages(ctx, rsc{bytes.NewReader(data2)}, rangeOf(3584, 2048), nil); err != nil {
			t.Fatal(err)
		}
		copy(model[3584:], data2)
		if _, err := pb.ClearPages(ctx, rangeOf(1536, 512), nil); err != nil {
			t.Fatal(err)
		}
		clear(model[1536:2048])
		if got := download(t, c, "pages", "disk.vhd"); !bytes.Equal(got, model) {
			t.Fatal("the page blob does not read back as written")
		}
		for _, w := range [][2]int64{{0, 1024}, {1000, 700}, {2040, 2000}, {5000, 0}, {16383, 1}} {
			want := model[w[0]:]
			if w[1] > 0 {
				want = model[w[0] : w[0]+w[1]]
			}
			if got := downloadRange(t, pb, w[0], w[1]); !bytes.Equal(got, want) {
				t.Fatalf("range %d+%d reads wrong bytes", w[0], w[1])
			}
		}
		want := [][2]int64{{1024, 1535}, {2048, 5631}}
		if got := pageRanges(t, pb, nil); !slices.Equal(got, want) {
			t.Fatalf("page ranges = %v, want %v", got, want)
		}
		if got, want := pageRanges(t, pb, &pageblob.GetPageRangesOptions{Range: rangeOf(1024, 2048)}), [][2]int64{{1024, 1535}, {2048, 3071}}; !slices.Equal(got, want) {
			t.Fatalf("page ranges in 1024+2048 = %v, want %v", got, want)
		}
		// maxresults pages through the ranges.
		if got := pageRanges(t, pb, &pageblob.GetPageRangesOptions{MaxResults: to.Ptr(int32(1))}); !slices.Equal(got, [][2]int64{{1024, 1535}, {2048, 5631}}) {
			t.Fatalf("paged page ranges = %v", got)
		}

		// A snapshot keeps its pages; the base goes on.
		snap, err := pb.CreateSnapshot(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		snapModel := slices.Clone(model)
		data3 := randBytes(512, 3)
		if _, err := pb.UploadPages(ctx, rsc{bytes.NewReader(data3)}, rangeOf(8192, 512), nil); err != nil {
			t.Fatal(err)
		}
		copy(model[8192:], data3)
		if _, err := pb.ClearPages(ctx, rangeOf(1024, 512), nil); err != nil {
			t.Fatal(err)
		}
		clear(model[1024:1536])
		sc, err := pb.WithSnapshot(*snap.Snapshot)
		if err != nil {
			t.Fatal(err)
		}
		if got := downloadRange(t, sc, 0, 0); !bytes.Equal(got, snapModel) {
			t.Fatal("the snapshot changed with its base blob")
		}
		if got := download(t, c, "pages", "disk.vhd"); !bytes.Equal(got, model) {
			t.Fatal("the base blob does not read back as written after a snapshot")
		}
		if got, want := pageRanges(t, sc, nil), [][2]int64{{1024, 1535}, {2048, 5631}}; !slices.Equal(got, want) {
			t.Fatalf("snapshot page ranges = %v, want %v", got, want)
		}
		// The diff form: written since the snapshot, and cleared since.
		dp := pb.NewGetPageRangesDiffPager(&pageblob.GetPageRangesDiffOptions{PrevSnapshot: snap.Snapshot})
		var changed, cleared [][2]int64
		for dp.More() {
			page, err := dp.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range page.PageRange {
				changed = append(changed, [2]int64{*r.Start, *r.End})
			}
			for _, r := range page.ClearRange {
				cleared = append(cleared, [2]int64{*r.Start, *r.End})
			}
		}
		if !slices.Equal(changed, [][2]int64{{8192, 8703}}) || !slices.Equal(cleared, [][2]int64{{1024, 1535}}) {
			t.Fatalf("diff since the snapshot: changed %v cleared %v", changed, cleared)
		}
		_, err = pb.NewGetPageRangesDiffPager(&pageblob.GetPageRangesDiffOptions{PrevSnapshot: to.Ptr("2001-01-01T00:00:00.0000000Z")}).NextPage(ctx)
		wantErr(t, err, 409, "PreviousSnapshotNotFound")
		// x-ms-previous-snapshot-url naming a snapshot of this blob is
		// prevsnapshot (TestPageRangesPrevSnapshotURL has the rest).
		urlDiff, err := pb.NewGetPageRangesDiffPager(&pageblob.GetPageRangesDiffOptions{PrevSnapshotURL: to.Ptr(sc.URL())}).NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(urlDiff.PageRange) != 1 || *urlDiff.PageRange[0].Start != 8192 || len(urlDiff.ClearRange) != 1 || *urlDiff.ClearRange[0].Start != 1024 {
			t.Fatalf("diff since the snapshot's URL: %d changed %d cleared", len(urlDiff.PageRange), len(urlDiff.ClearRange))
		}

		// Resize: a shrink drops the pages past the end, a grow reads zeros.
		if _, err := pb.Resize(ctx, 4096, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := pb.Resize(ctx, size, nil); err != nil {
			t.Fatal(err)
		}
		clear(model[4096:])
		if got := download(t, c, "pages", "disk.vhd"); !bytes.Equal(got, model) {
			t.Fatal("the page blob does not read back as written after a shrink and a grow")
		}
		props, err = pb.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *props.ContentLength != size || *props.ContentType != "application/x-vhd" {
			t.Fatalf("after resizes: length %d, content type %q (a resize keeps the content properties)", *props.ContentLength, *props.ContentType)
		}
		if got, want := pageRanges(t, pb, nil), [][2]int64{{2048, 4095}}; !slices.Equal(got, want) {
			t.Fatalf("page ranges after resizes = %v, want %v", got, want)
		}
		_, err = pb.Resize(ctx, 1000, nil)
		wantErr(t, err, 400, "InvalidHeaderValue")

		// Sequence numbers: max, update, increment.
		seq := func(action pageblob.SequenceNumberActionType, n *int64) int64 {
			t.Helper()
			resp, err := pb.UpdateSequenceNumber(ctx, &pageblob.UpdateSequenceNumberOptions{ActionType: &action, SequenceNumber: n})
			if err != nil {
				t.Fatalf("sequence number %s: %v", action, err)
			}
			return *resp.BlobSequenceNumber
		}
		if got := seq(pageblob.SequenceNumberActionTypeMax, to.Ptr(int64(2))); got != 3 {
			t.Fatalf("max(3, 2) = %d", got)
		}
		if got := seq(pageblob.SequenceNumberActionTypeMax, to.Ptr(int64(10))); got != 10 {
			t.Fatalf("max(3, 10) = %d", got)
		}
		if got := seq(pageblob.SequenceNumberActionTypeUpdate, to.Ptr(int64(7))); got != 7 {
			t.Fatalf("update to 7 = %d", got)
		}
		if got := seq(pageblob.SequenceNumberActionTypeIncrement, nil); got != 8 {
			t.Fatalf("increment of 7 = %d", got)
		}
		// Sequence number conditions on Put Page.
		one := randBytes(512, 4)
		for _, sc := range []struct {
			cond pageblob.SequenceNumberAccessConditions
			ok   bool
		}{
			{pageblob.SequenceNumberAccessConditions{IfSequenceNumberEqualTo: to.Ptr(int64(8))}, true},
			{pageblob.SequenceNumberAccessConditions{IfSequenceNumberEqualTo: to.Ptr(int64(7))}, false},
			{pageblob.SequenceNumberAccessConditions{IfSequenceNumberLessThan: to.Ptr(int64(9))}, true},
			{pageblob.SequenceNumberAccessConditions{IfSequenceNumberLessThan: to.Ptr(int64(8))}, false},
			{pageblob.SequenceNumberAccessConditions{IfSequenceNumberLessThanOrEqualTo: to.Ptr(int64(8))}, true},
			{pageblob.SequenceNumberAccessConditions{IfSequenceNumberLessThanOrEqualTo: to.Ptr(int64(7))}, false},
		} {
			_, err := pb.UploadPages(ctx, rsc{bytes.NewReader(one)}, rangeOf(0, 512), &pageblob.UploadPagesOptions{SequenceNumberAccessConditions: &sc.cond})
			if sc.ok && err != nil {
				t.Fatalf("Put Page with a met sequence number condition: %v", err)
			}
			if !sc.ok {
				wantErr(t, err, 412, "SequenceNumberConditionNotMet")
			}
			_, err = pb.ClearPages(ctx, rangeOf(512, 512), &pageblob.ClearPagesOptions{SequenceNumberAccessConditions: &sc.cond})
			if !sc.ok {
				wantErr(t, err, 412, "SequenceNumberConditionNotMet")
			}
		}
		copy(model[0:], one)
		clear(model[512:1024])

		// List Blobs shows the type and the sequence number.
		lp := c.ServiceClient().NewContainerClient("pages").NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Include: container.ListBlobsInclude{Snapshots: true}})
		page, err := lp.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Segment.BlobItems) != 2 {
			t.Fatalf("listed %d entries, want the snapshot and the blob", len(page.Segment.BlobItems))
		}
		for i, wantSeq := range []int64{3, 8} {
			p := page.Segment.BlobItems[i].Properties
			if *p.BlobType != blob.BlobTypePageBlob || p.BlobSequenceNumber == nil || *p.BlobSequenceNumber != wantSeq || *p.ContentLength != size {
				t.Fatalf("entry %d: type %v seq %v length %v", i, *p.BlobType, p.BlobSequenceNumber, *p.ContentLength)
			}
		}
		if got := download(t, c, "pages", "disk.vhd"); !bytes.Equal(got, model) {
			t.Fatal("the page blob does not read back as written at the end")
		}
		b.checkNoLeak(t)
	})
}

// TestPageBlobRefusals: what Put Page, Put Blob and Get Page Ranges refuse
// (misaligned and out-of-blob ranges, wrong lengths, the wrong blob type,
// stale If-*, a lease not named), and that a refused write changes
// nothing.
func TestPageBlobRefusals(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		c := b.client
		createContainers(t, c, "prr")
		pb := pageClient(c, "prr", "p")
		if _, err := pb.Create(ctx, 4096, nil); err != nil {
			t.Fatal(err)
		}
		before, err := pb.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		page := strings.Repeat("x", 512)
		put := func(hdr map[string]string, body string) *http.Response {
			h := map[string]string{"x-ms-page-write": "update"}
			for k, v := range hdr {
				h[k] = v
			}
			resp, _ := b.do(t, http.MethodPut, "prr/p?comp=page", body, h)
			return resp
		}
		wantStatus(t, put(map[string]string{"x-ms-range": "bytes=1-512"}, page), 416, "InvalidPageRange", "misaligned start")
		wantStatus(t, put(map[string]string{"x-ms-range": "bytes=0-510"}, strings.Repeat("x", 511)), 416, "InvalidPageRange", "misaligned end")
		wantStatus(t, put(map[string]string{"x-ms-range": "bytes=4096-4607"}, page), 416, "InvalidPageRange", "past the end")
		wantStatus(t, put(map[string]string{"x-ms-range": "bytes=0-1023"}, page), 400, "InvalidHeaderValue", "body shorter than the range")
		wantStatus(t, put(nil, page), 400, "MissingRequiredHeader", "no range")
		wantStatus(t, put(map[string]string{"x-ms-range": "bytes=0-511", "x-ms-page-write": "append"}, page), 400, "InvalidHeaderValue", "x-ms-page-write")
		wantStatus(t, put(map[string]string{"x-ms-range": "bytes=0-511", "x-ms-page-write": "clear"}, page), 400, "InvalidHeaderValue", "clear with a body")
		wantStatus(t, put(map[string]string{"x-ms-range": "bytes=0-511", "Content-MD5": base64.StdEncoding.EncodeToString(md5Of([]byte("other")))}, page), 400, "Md5Mismatch", "Content-MD5")
		wantStatus(t, put(map[string]string{"x-ms-range": "bytes=0-511", "x-ms-if-sequence-number-eq": "-1"}, page), 400, "InvalidHeaderValue", "negative sequence number")
		wantStatus(t, put(map[string]string{"Range": "bytes=0-" + strconv.Itoa(4<<20+511)}, strings.Repeat("y", 4<<20+512)), 413, "RequestBodyTooLarge", "more than 4 MiB")

		// Put Blob of a page blob.
		create := func(hdr map[string]string, body string) *http.Response {
			h := map[string]string{"x-ms-blob-type": "PageBlob"}
			for k, v := range hdr {
				h[k] = v
			}
			resp, _ := b.do(t, http.MethodPut, "prr/new", body, h)
			return resp
		}
		wantStatus(t, create(nil, ""), 400, "MissingRequiredHeader", "no x-ms-blob-content-length")
		wantStatus(t, create(map[string]string{"x-ms-blob-content-length": "1000"}, ""), 400, "InvalidHeaderValue", "length not a multiple of 512")
		wantStatus(t, create(map[string]string{"x-ms-blob-content-length": strconv.FormatInt(8<<40+512, 10)}, ""), 400, "InvalidHeaderValue", "more than 8 TiB")
		wantStatus(t, create(map[string]string{"x-ms-blob-content-length": "512"}, "abc"), 400, "InvalidHeaderValue", "a body")
		wantStatus(t, create(map[string]string{"x-ms-blob-content-length": "512", "x-ms-blob-sequence-number": "x"}, ""), 400, "InvalidHeaderValue", "bad sequence number")
		// Premium tiers are stored (TestPremiumPageTiers); a block blob
		// tier is not one, and a premium tier must hold the length.
		_, err = pageClient(c, "prr", "new").Create(ctx, 512, &pageblob.CreateOptions{Tier: to.Ptr(pageblob.PremiumPageBlobAccessTier("Cool"))})
		wantErr(t, err, 400, "InvalidHeaderValue")
		_, err = pageClient(c, "prr", "new").Create(ctx, 64<<30, &pageblob.CreateOptions{Tier: to.Ptr(pageblob.PremiumPageBlobAccessTierP4)})
		wantErr(t, err, 409, "BlobTierInadequateForContentLength")
		_, err = c.ServiceClient().NewContainerClient("prr").NewBlobClient("new").CopyFromURL(ctx, pb.URL(), nil)
		wantErr(t, err, 409, "CannotVerifyCopySource")
		if _, err := c.ServiceClient().NewContainerClient("prr").NewBlobClient("new").GetProperties(ctx, nil); statusOf(err) != 404 {
			t.Fatalf("a refused page blob create left a blob (status %d)", statusOf(err))
		}

		// Blob types: pages only on page blobs, blocks and appends never.
		bb := c.ServiceClient().NewContainerClient("prr").NewBlockBlobClient("block")
		if _, err := bb.Upload(ctx, nopSeeker("hello"), nil); err != nil {
			t.Fatal(err)
		}
		_, err = pageClient(c, "prr", "block").UploadPages(ctx, nopSeeker(page), rangeOf(0, 512), nil)
		wantErr(t, err, 409, "InvalidBlobType")
		_, err = pageClient(c, "prr", "block").Resize(ctx, 512, nil)
		wantErr(t, err, 409, "InvalidBlobType")
		_, err = pageClient(c, "prr", "block").NewGetPageRangesPager(nil).NextPage(ctx)
		wantErr(t, err, 409, "InvalidBlobType")
		_, err = appendClient(c, "prr", "p").AppendBlock(ctx, nopSeeker("abc"), nil)
		wantErr(t, err, 409, "InvalidBlobType")
		_, err = c.ServiceClient().NewContainerClient("prr").NewBlockBlobClient("p").StageBlock(ctx, "YmxrMQ==", nopSeeker("abc"), nil)
		wantErr(t, err, 409, "InvalidBlobType")
		_, err = pageClient(c, "prr", "missing").UploadPages(ctx, nopSeeker(page), rangeOf(0, 512), nil)
		wantErr(t, err, 404, "BlobNotFound")

		// If-* and leases apply as to every write.
		stale := azcore.ETag(`"0x8D000000000DEAD"`)
		_, err = pb.UploadPages(ctx, nopSeeker(page), rangeOf(0, 512), &pageblob.UploadPagesOptions{
			AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &stale}}})
		wantErr(t, err, 412, "ConditionNotMet")
		_, err = pb.ClearPages(ctx, rangeOf(0, 512), &pageblob.ClearPagesOptions{
			AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &stale}}})
		wantErr(t, err, 412, "ConditionNotMet")
		after, err := pb.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *after.ETag != *before.ETag {
			t.Fatal("a refused Put Page changed the blob's ETag")
		}
		if got := pageRanges(t, pb, nil); len(got) != 0 {
			t.Fatalf("refused writes left page ranges %v", got)
		}
		lc, err := lease.NewBlobClient(pb, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lc.AcquireLease(ctx, -1, nil); err != nil {
			t.Fatal(err)
		}
		_, err = pb.UploadPages(ctx, nopSeeker(page), rangeOf(0, 512), nil)
		wantErr(t, err, 412, "LeaseIdMissing")
		_, err = pb.ClearPages(ctx, rangeOf(0, 512), nil)
		wantErr(t, err, 412, "LeaseIdMissing")
		_, err = pb.Resize(ctx, 512, nil)
		wantErr(t, err, 412, "LeaseIdMissing")
		withLease := &blob.AccessConditions{LeaseAccessConditions: &blob.LeaseAccessConditions{LeaseID: lc.LeaseID()}}
		if _, err := pb.UploadPages(ctx, nopSeeker(page), rangeOf(0, 512), &pageblob.UploadPagesOptions{AccessConditions: withLease}); err != nil {
			t.Fatalf("Put Page under the lease: %v", err)
		}
		if _, err := pb.Resize(ctx, 1024, &pageblob.ResizeOptions{AccessConditions: withLease}); err != nil {
			t.Fatalf("resize under the lease: %v", err)
		}
		if got := downloadRange(t, pb, 0, 0); string(got) != page+strings.Repeat("\x00", 512) {
			t.Fatalf("after the leased write and resize the blob reads %q", got)
		}
		b.checkNoLeak(t)
	})
}

// TestPageRangeOverflow: a Put Page range whose end is the largest int64
// ("bytes=0-9223372036854775807": the last byte plus one overflows) is
// past the end of every page blob, 416 InvalidPageRange, for an update
// and a clear alike; it never reads as an empty range that a clear
// "applies" with a new ETag.
func TestPageRangeOverflow(t *testing.T) {
	forKinds(t, []string{"sqlite", "postgres"}, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "povf")
		pb := pageClient(b.client, "povf", "p")
		if _, err := pb.Create(ctx, 4096, nil); err != nil {
			t.Fatal(err)
		}
		page := strings.Repeat("x", 512)
		if _, err := pb.UploadPages(ctx, nopSeeker(page), rangeOf(0, 512), nil); err != nil {
			t.Fatal(err)
		}
		before, err := pb.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, rng := range []string{"bytes=0-9223372036854775807", "bytes=9223372036854775296-9223372036854775807"} {
			resp, _ := b.do(t, http.MethodPut, "povf/p?comp=page", "", map[string]string{"x-ms-page-write": "clear", "x-ms-range": rng})
			wantStatus(t, resp, 416, "InvalidPageRange", "clear "+rng)
			resp, _ = b.do(t, http.MethodPut, "povf/p?comp=page", page, map[string]string{"x-ms-page-write": "update", "x-ms-range": rng})
			wantStatus(t, resp, 416, "InvalidPageRange", "update "+rng)
		}
		after, err := pb.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *after.ETag != *before.ETag {
			t.Fatal("a refused Put Page changed the blob's ETag")
		}
		if got := downloadRange(t, pb, 0, 512); string(got) != page {
			t.Fatalf("the written page reads %q", got)
		}
	})
}

// TestPageBlobModel writes and clears random page ranges (against an
// in-memory model) and compares the whole blob, random ranges of it and
// its page ranges byte for byte; then the objects of replaced runs are
// queued for collection exactly when no run of the blob or of a snapshot
// reads them.
func TestPageBlobModel(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		c := b.client
		createContainers(t, c, "model")
		const pages = 48
		pb := pageClient(c, "model", "m")
		if _, err := pb.Create(ctx, pages*512, nil); err != nil {
			t.Fatal(err)
		}
		model := make([]byte, pages*512)
		written := make([]bool, pages)
		rng := rand.New(rand.NewSource(7))
		for i := 0; i < 40; i++ {
			p := rng.Intn(pages)
			n := 1 + rng.Intn(6)
			if p+n > pages {
				n = pages - p
			}
			off, ln := int64(p*512), int64(n*512)
			if rng.Intn(3) == 0 {
				if _, err := pb.ClearPages(ctx, rangeOf(off, ln), nil); err != nil {
					t.Fatalf("step %d: clear: %v", i, err)
				}
				clear(model[off : off+ln])
				for k := p; k < p+n; k++ {
					written[k] = false
				}
			} else {
				data := randBytes(int(ln), int64(100+i))
				if _, err := pb.UploadPages(ctx, rsc{bytes.NewReader(data)}, rangeOf(off, ln), nil); err != nil {
					t.Fatalf("step %d: write: %v", i, err)
				}
				copy(model[off:], data)
				for k := p; k < p+n; k++ {
					written[k] = true
				}
			}
			if i%8 == 7 {
				if got := downloadRange(t, pb, 0, 0); !bytes.Equal(got, model) {
					t.Fatalf("step %d: the blob differs from the model", i)
				}
				if got, want := pageRanges(t, pb, nil), modelRanges(written); !slices.Equal(got, want) {
					t.Fatalf("step %d: page ranges %v, want %v", i, got, want)
				}
			}
			a := rng.Int63n(pages * 512)
			ln = 1 + rng.Int63n(pages*512-a)
			if got := downloadRange(t, pb, a, ln); !bytes.Equal(got, model[a:a+ln]) {
				t.Fatalf("step %d: range %d+%d differs from the model", i, a, ln)
			}
		}

		// Collection: a run's object goes to the queue when the last run
		// naming it goes, unless a snapshot still names it.
		runsOf := func() []leasedb.Extent {
			var row *leasedb.Blob
			if err := b.db.Store.View(ctx, func(tx leasedb.Tx) error {
				var err error
				row, err = tx.Blob(ctx, config.DevAccountName, "model", "m", leasedb.LockNone)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			return row.Extents
		}
		queued := func(key string) bool {
			keys, err := b.db.Store.CollectionKeys(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return slices.Contains(keys, key)
		}
		whole := randBytes(pages*512, 9)
		if _, err := pb.UploadPages(ctx, rsc{bytes.NewReader(whole[:4<<10])}, rangeOf(0, 4<<10), nil); err != nil {
			t.Fatal(err)
		}
		first := runsOf()[0].Key
		snap, err := pb.CreateSnapshot(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		// Half of the run rewritten: the object is still read.
		if _, err := pb.UploadPages(ctx, rsc{bytes.NewReader(whole[:2048])}, rangeOf(0, 2048), nil); err != nil {
			t.Fatal(err)
		}
		if queued(first) {
			t.Fatal("an object half of whose run is still read was queued for collection")
		}
		// All of it cleared: the snapshot still reads it.
		if _, err := pb.ClearPages(ctx, rangeOf(0, 4<<10), nil); err != nil {
			t.Fatal(err)
		}
		clear(model[:4<<10])
		if queued(first) {
			t.Fatal("an object a snapshot reads was queued for collection")
		}
		sb, err := c.ServiceClient().NewContainerClient("model").NewBlobClient("m").WithSnapshot(*snap.Snapshot)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sb.Delete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if !queued(first) {
			t.Fatal("an object no run reads any more was not queued for collection")
		}
		if _, err := b.gws[0].Collect(ctx); err != nil {
			t.Fatal(err)
		}
		if got := downloadRange(t, pb, 0, 0); !bytes.Equal(got, model) {
			t.Fatal("after collection the blob differs from the model")
		}
		b.checkNoLeak(t)
	})
}

func md5Of(p []byte) []byte {
	s := md5.Sum(p)
	return s[:]
}

// TestPutPageFromURL: pages written from ranges of a block blob in the
// gateway, of a remote object and of another page blob (whose holes are
// zeros); the ranges must be aligned, of one length, inside the blob.
func TestPutPageFromURL(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		c := b.client
		createContainers(t, c, "pfu")
		data := randBytes(8<<10, 21)
		src := c.ServiceClient().NewContainerClient("pfu").NewBlockBlobClient("src")
		if _, err := src.Upload(ctx, rsc{bytes.NewReader(data)}, nil); err != nil {
			t.Fatal(err)
		}
		web := serveBytes(t, data)
		pb := pageClient(c, "pfu", "dst")
		if _, err := pb.Create(ctx, 8<<10, nil); err != nil {
			t.Fatal(err)
		}
		model := make([]byte, 8<<10)
		resp, err := pb.UploadPagesFromURL(ctx, src.URL(), 1000, 512, 1024, nil)
		if err != nil {
			t.Fatal(err)
		}
		copy(model[512:], data[1000:2024])
		if sum := md5Of(data[1000:2024]); !bytes.Equal(resp.ContentMD5, sum) {
			t.Fatalf("Put Page From URL answered Content-MD5 %x", resp.ContentMD5)
		}
		if _, err := pb.UploadPagesFromURL(ctx, web.URL+"/f", 10, 4096, 2048, nil); err != nil {
			t.Fatal(err)
		}
		copy(model[4096:], data[10:2058])
		if got := downloadRange(t, pb, 0, 0); !bytes.Equal(got, model) {
			t.Fatal("pages from URL do not read back as the sources' ranges")
		}
		// A page blob as the source: its hole reads as zeros, its run as written.
		pb2 := pageClient(c, "pfu", "dst2")
		if _, err := pb2.Create(ctx, 4096, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := pb2.UploadPagesFromURL(ctx, pb.URL(), 0, 0, 2048, nil); err != nil {
			t.Fatal(err)
		}
		if got := downloadRange(t, pb2, 0, 2048); !bytes.Equal(got, model[:2048]) {
			t.Fatal("a page blob source does not copy its zeros and pages")
		}

		_, err = pb.UploadPagesFromURL(ctx, src.URL(), 0, 100, 512, nil)
		wantErr(t, err, 416, "InvalidPageRange")
		_, err = pb.UploadPagesFromURL(ctx, src.URL(), 0, 8<<10, 512, nil)
		wantErr(t, err, 416, "InvalidPageRange")
		_, err = pageClient(c, "pfu", "src").UploadPagesFromURL(ctx, web.URL+"/f", 0, 0, 512, nil)
		wantErr(t, err, 409, "InvalidBlobType")
		resp2, body := b.do(t, http.MethodPut, "pfu/dst?comp=page", "", map[string]string{"x-ms-copy-source": src.URL(),
			"x-ms-page-write": "update", "x-ms-range": "bytes=0-511", "x-ms-source-range": "bytes=0-1023"})
		if d := statusDiff(resp2, 400, "InvalidHeaderValue"); d != "" {
			t.Fatalf("source range of another length: %s\n%s", d, body)
		}
		resp2, body = b.do(t, http.MethodPut, "pfu/dst?comp=page", "", map[string]string{"x-ms-copy-source": src.URL(),
			"x-ms-page-write": "update", "x-ms-range": "bytes=0-511"})
		if d := statusDiff(resp2, 400, "MissingRequiredHeader"); d != "" {
			t.Fatalf("no source range: %s\n%s", d, body)
		}
		if got := downloadRange(t, pb, 0, 0); !bytes.Equal(got, model) {
			t.Fatal("a refused Put Page From URL changed the blob")
		}
		b.checkNoLeak(t)
	})
}

// TestPageWritesRace: Put Pages of distinct pages racing over two replicas
// all land: each commit merges its run into the map it finds under the
// row lock, so no write undoes another.
func TestPageWritesRace(t *testing.T) {
	forKinds(t, []string{"sqlite+disk", "postgres+s3"}, func(t *testing.T, kind string) {
		b := setup(t, kind, setupOpts{replicas: 2})
		ctx := context.Background()
		createContainers(t, b.client, "race")
		const pages = 16
		if _, err := pageClient(b.client, "race", "r").Create(ctx, pages*512, nil); err != nil {
			t.Fatal(err)
		}
		clients := []*azblob.Client{b.clientFor(t, 0), b.clientFor(t, 1)}
		want := randBytes(pages*512, 31)
		errs := make(chan error, pages)
		for i := 0; i < pages; i++ {
			go func(i int) {
				pb := pageClient(clients[i%2], "race", "r")
				_, err := pb.UploadPages(ctx, rsc{bytes.NewReader(want[i*512 : (i+1)*512])}, rangeOf(int64(i*512), 512), nil)
				errs <- err
			}(i)
		}
		for i := 0; i < pages; i++ {
			if err := <-errs; err != nil {
				t.Fatalf("racing Put Page: %v", err)
			}
		}
		pb := pageClient(b.client, "race", "r")
		if got := downloadRange(t, pb, 0, 0); !bytes.Equal(got, want) {
			t.Fatal("a racing Put Page was lost")
		}
		if got := pageRanges(t, pb, nil); !slices.Equal(got, [][2]int64{{0, pages*512 - 1}}) {
			t.Fatalf("page ranges after the race: %v", got)
		}
		b.checkNoLeak(t)
	})
}

// TestCopyPageBlob: Copy Blob of a page blob (or of its snapshot) shares
// its runs: the copy reads the same bytes, reports the same page ranges,
// length and sequence number, and stays as it was when the source is
// written to or deleted; a snapshot copied onto its base restores it.
func TestCopyPageBlob(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		c := b.client
		createContainers(t, c, "srcc", "dstc")
		src := pageClient(c, "srcc", "disk")
		if _, err := src.Create(ctx, 8<<10, &pageblob.CreateOptions{SequenceNumber: to.Ptr(int64(42))}); err != nil {
			t.Fatal(err)
		}
		model := make([]byte, 8<<10)
		data := randBytes(2048, 41)
		if _, err := src.UploadPages(ctx, rsc{bytes.NewReader(data)}, rangeOf(1024, 2048), nil); err != nil {
			t.Fatal(err)
		}
		copy(model[1024:], data)
		snap, err := src.CreateSnapshot(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		dst := pageClient(c, "dstc", "copy")
		if _, err := dst.StartCopyFromURL(ctx, src.URL(), nil); err != nil {
			t.Fatal(err)
		}
		empty := pageClient(c, "srcc", "empty")
		if _, err := empty.Create(ctx, 4096, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := pageClient(c, "dstc", "empty").StartCopyFromURL(ctx, empty.URL(), nil); err != nil {
			t.Fatal(err)
		}
		if got := pageRanges(t, pageClient(c, "dstc", "empty"), nil); len(got) != 0 {
			t.Fatalf("the copy of an unwritten page blob has page ranges %v", got)
		}
		// The source changes and goes; the copy does not.
		if _, err := src.ClearPages(ctx, rangeOf(0, 8<<10), nil); err != nil {
			t.Fatal(err)
		}
		props, err := dst.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *props.BlobType != blob.BlobTypePageBlob || *props.ContentLength != 8<<10 || *props.BlobSequenceNumber != 42 {
			t.Fatalf("copy: type %v length %v seq %v", *props.BlobType, *props.ContentLength, *props.BlobSequenceNumber)
		}
		if got := pageRanges(t, dst, nil); !slices.Equal(got, [][2]int64{{1024, 3071}}) {
			t.Fatalf("copy page ranges = %v", got)
		}
		// Restore the source from its snapshot.
		if _, err := src.StartCopyFromURL(ctx, src.URL()+"?snapshot="+*snap.Snapshot, nil); err != nil {
			t.Fatal(err)
		}
		if got := downloadRange(t, src, 0, 0); !bytes.Equal(got, model) {
			t.Fatal("a page blob restored from its snapshot differs")
		}
		if _, err := src.Delete(ctx, &blob.DeleteOptions{DeleteSnapshots: to.Ptr(blob.DeleteSnapshotsOptionTypeInclude)}); err != nil {
			t.Fatal(err)
		}
		// Collection (no grace here) deletes what no name reads any more.
		if _, err := b.gws[0].Collect(ctx); err != nil {
			t.Fatal(err)
		}
		if got := downloadRange(t, dst, 0, 0); !bytes.Equal(got, model) {
			t.Fatal("the copy changed with its deleted source")
		}
		// Writing the copy releases only its own share of the objects.
		if _, err := dst.ClearPages(ctx, rangeOf(0, 8<<10), nil); err != nil {
			t.Fatal(err)
		}
		b.checkNoLeak(t)
	})
}

// TestPageBlobCompaction: a fragmented page map is rewritten into one run
// per written range (the bytes, page ranges, ETag and snapshots unchanged,
// the replaced objects collected); a compaction whose map changed under
// it loses to the write; past Options.PageCompactRuns a Put Page starts
// one in the background.
func TestPageBlobCompaction(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind, setupOpts{options: gateway.Options{PageCompactRuns: 4}})
		ctx := context.Background()
		c := b.client
		createContainers(t, c, "compact")
		ref := leasedb.BlobRef{Account: config.DevAccountName, Container: "compact", Name: "d"}
		runsOf := func() []leasedb.Extent {
			var row *leasedb.Blob
			if err := b.db.Store.View(ctx, func(tx leasedb.Tx) error {
				var err error
				row, err = tx.Blob(ctx, ref.Account, ref.Container, ref.Name, leasedb.LockNone)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			return row.Extents
		}
		pb := pageClient(c, "compact", "d")
		if _, err := pb.Create(ctx, 16<<10, nil); err != nil {
			t.Fatal(err)
		}
		model := make([]byte, 16<<10)
		write := func(page int) {
			t.Helper()
			data := randBytes(512, int64(200+page))
			if _, err := pb.UploadPages(ctx, rsc{bytes.NewReader(data)}, rangeOf(int64(page*512), 512), nil); err != nil {
				t.Fatal(err)
			}
			copy(model[page*512:], data)
			if err := b.gws[0].WaitCompactions(ctx); err != nil {
				t.Fatal(err)
			}
		}
		// Four runs: no compaction yet; the fifth starts one.
		for _, p := range []int{0, 1, 2, 3} {
			write(p)
		}
		if n := len(runsOf()); n != 4 {
			t.Fatalf("%d runs before the threshold, want 4", n)
		}
		snap, err := pb.CreateSnapshot(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		before, err := pb.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		old := runsOf()
		write(4)
		runs := runsOf()
		if len(runs) != 1 || runs[0].At != 0 || runs[0].Size != 5*512 {
			t.Fatalf("after the threshold the map is %+v, want one run of 5 pages", runs)
		}
		after, err := pb.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *after.ETag == *before.ETag {
			t.Fatal("the Put Page did not change the ETag")
		}
		if got := downloadRange(t, pb, 0, 0); !bytes.Equal(got, model) {
			t.Fatal("the compacted blob reads other bytes")
		}
		etag := *after.ETag

		// By hand: three scattered runs of two ranges become two runs.
		write(9)
		write(10)
		write(20)
		if n := len(runsOf()); n != 4 {
			t.Fatalf("%d runs before compacting by hand, want 4", n)
		}
		done, err := b.gws[0].CompactPageBlob(ctx, ref)
		if err != nil || !done {
			t.Fatalf("compaction: %v, %v", done, err)
		}
		compacted := runsOf()
		if len(compacted) != 3 || compacted[0].Key != compacted[1].Key || compacted[1].Key != compacted[2].Key {
			t.Fatalf("compacted map %+v, want 3 runs of one object", compacted)
		}
		if done, err := b.gws[0].CompactPageBlob(ctx, ref); err != nil || done {
			t.Fatalf("a second compaction: %v, %v (nothing to gain)", done, err)
		}
		props, err := pb.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *props.ETag == etag {
			t.Fatal("writes after the first compaction did not change the ETag")
		}
		if got := downloadRange(t, pb, 0, 0); !bytes.Equal(got, model) {
			t.Fatal("the compacted blob reads other bytes")
		}
		if got, want := pageRanges(t, pb, nil), [][2]int64{{0, 5*512 - 1}, {9 * 512, 11*512 - 1}, {20 * 512, 21*512 - 1}}; !slices.Equal(got, want) {
			t.Fatalf("page ranges after compaction %v, want %v", got, want)
		}

		// A compaction of a map a write changed since loses.
		if err := b.db.Store.Update(ctx, func(tx leasedb.Tx) error { return tx.AddIntent(ctx, "compaction-loses", time.Now().Add(time.Hour)) }); err != nil {
			t.Fatal(err)
		}
		if done, err := b.db.CompactPages(ctx, ref, old, "compaction-loses"); err != nil || done {
			t.Fatalf("a compaction of a changed map: %v, %v", done, err)
		}
		if got := runsOf(); !slices.EqualFunc(got, compacted, leasedb.Extent.Equal) {
			t.Fatalf("a lost compaction changed the map to %+v", got)
		}
		if _, err := b.db.Store.Forget(ctx, []string{"compaction-loses"}); err != nil {
			t.Fatal(err)
		}

		// The snapshot kept its objects; collection deletes only the replaced ones.
		if _, err := b.gws[0].Collect(ctx); err != nil {
			t.Fatal(err)
		}
		sc, err := pb.WithSnapshot(*snap.Snapshot)
		if err != nil {
			t.Fatal(err)
		}
		if got := downloadRange(t, sc, 0, 4*512); !bytes.Equal(got, model[:4*512]) {
			t.Fatal("the snapshot reads other bytes after compaction and collection")
		}
		if got := downloadRange(t, pb, 0, 0); !bytes.Equal(got, model) {
			t.Fatal("the compacted blob reads other bytes after collection")
		}
		b.checkNoLeak(t)
	})
}
