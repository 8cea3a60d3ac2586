package gateway_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
)

func randBytes(n int, seed int64) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

func download(t *testing.T, c *azblob.Client, cont, name string) []byte {
	t.Helper()
	_, data := getBlob(t, c.ServiceClient().NewContainerClient(cont).NewBlobClient(name), nil, cont+"/"+name)
	return data
}

// getBlob reads a blob whole through c with Get Blob (o: nil, or its range
// and conditions) and returns the response with the body read; what names
// the read in a failure. The download helpers are made of it.
func getBlob(t *testing.T, c *blob.Client, o *blob.DownloadStreamOptions, what string) (blob.DownloadStreamResponse, []byte) {
	t.Helper()
	resp, err := c.DownloadStream(context.Background(), o)
	if err != nil {
		t.Fatalf("download %s: %v", what, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("download %s: body: %v", what, err)
	}
	return resp, data
}

func TestContainers(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		c := b.client
		if _, err := c.CreateContainer(ctx, "alpha", &azblob.CreateContainerOptions{Metadata: map[string]*string{"owner": to.Ptr("ops")}}); err != nil {
			t.Fatal(err)
		}
		_, err := c.CreateContainer(ctx, "alpha", nil)
		wantErr(t, err, 409, "ContainerAlreadyExists")
		_, err = c.CreateContainer(ctx, "Bad--Name", nil)
		wantErr(t, err, 400, "InvalidResourceName")

		cc := c.ServiceClient().NewContainerClient("alpha")
		props, err := cc.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if props.ETag == nil || !strings.HasPrefix(string(*props.ETag), `"0x`) || props.LastModified == nil {
			t.Fatalf("container props: etag %v lm %v", props.ETag, props.LastModified)
		}
		if got := lowerMeta(props.Metadata)["owner"]; got != "ops" {
			t.Fatalf("metadata owner = %q", got)
		}
		if *props.LeaseState != lease.StateTypeAvailable {
			t.Fatalf("lease state %v", *props.LeaseState)
		}
		setResp, err := cc.SetMetadata(ctx, &container.SetMetadataOptions{Metadata: map[string]*string{"k": to.Ptr("v2")}})
		if err != nil {
			t.Fatal(err)
		}
		if *setResp.ETag == *props.ETag {
			t.Fatalf("set metadata must change the container ETag")
		}
		props, err = cc.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if m := lowerMeta(props.Metadata); m["k"] != "v2" || m["owner"] != "" {
			t.Fatalf("metadata after set = %v", m)
		}
		// If-Modified-Since in the future: condition fails.
		_, err = cc.SetMetadata(ctx, &container.SetMetadataOptions{
			ModifiedAccessConditions: &container.ModifiedAccessConditions{IfModifiedSince: to.Ptr(time.Now().Add(time.Hour))}})
		wantErr(t, err, 412, "ConditionNotMet")

		// Listing with prefix and paging.
		for i := 0; i < 5; i++ {
			createContainers(t, c, fmt.Sprintf("page-%02d", i))
		}
		var names []string
		pages := 0
		pager := c.NewListContainersPager(&azblob.ListContainersOptions{Prefix: to.Ptr("page-"), MaxResults: to.Ptr(int32(2)), Include: azblob.ListContainersInclude{Metadata: true}})
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, it := range page.ContainerItems {
				names = append(names, *it.Name)
				if it.Properties.ETag == nil || it.Properties.LastModified == nil {
					t.Fatalf("list item without properties: %+v", it)
				}
			}
		}
		want := []string{"page-00", "page-01", "page-02", "page-03", "page-04"}
		if fmt.Sprint(names) != fmt.Sprint(want) || pages != 3 {
			t.Fatalf("listed %v in %d pages, want %v in 3", names, pages, want)
		}

		// Delete: 202, then gone; blobs go with it.
		if _, err := c.UploadBuffer(ctx, "alpha", "x", []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := c.DeleteContainer(ctx, "alpha", nil); err != nil {
			t.Fatal(err)
		}
		_, err = cc.GetProperties(ctx, nil)
		wantErr(t, err, 404, "ContainerNotFound")
		_, err = c.DeleteContainer(ctx, "alpha", nil)
		wantErr(t, err, 404, "ContainerNotFound")
		createContainers(t, c, "alpha")
		_, err = c.DownloadStream(ctx, "alpha", "x", nil)
		wantErr(t, err, 404, "BlobNotFound")
	})
}

func lowerMeta(m map[string]*string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if v != nil {
			out[strings.ToLower(k)] = *v
		}
	}
	return out
}

func TestBlobCRUD(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		c := b.client
		createContainers(t, c, "data")
		body := randBytes(100_000, 1)
		sum := md5.Sum(body)
		up, err := c.UploadBuffer(ctx, "data", "dir/file one.bin", body, &azblob.UploadBufferOptions{
			Metadata:    map[string]*string{"color": to.Ptr("blue")},
			HTTPHeaders: &blob.HTTPHeaders{BlobContentType: to.Ptr("application/x-test"), BlobCacheControl: to.Ptr("no-cache")},
		})
		if err != nil {
			t.Fatal(err)
		}
		if up.ETag == nil || !strings.HasPrefix(string(*up.ETag), `"0x`) {
			t.Fatalf("etag %v", up.ETag)
		}
		if !bytes.Equal(up.ContentMD5, sum[:]) {
			t.Fatalf("Content-MD5 %x, want %x", up.ContentMD5, sum)
		}
		if got := download(t, c, "data", "dir/file one.bin"); !bytes.Equal(got, body) {
			t.Fatalf("downloaded %d bytes differing from the upload", len(got))
		}
		bc := c.ServiceClient().NewContainerClient("data").NewBlobClient("dir/file one.bin")
		p, err := bc.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *p.ContentLength != int64(len(body)) || *p.ContentType != "application/x-test" || *p.CacheControl != "no-cache" ||
			!bytes.Equal(p.ContentMD5, sum[:]) || *p.BlobType != blob.BlobTypeBlockBlob || *p.ETag != *up.ETag ||
			lowerMeta(p.Metadata)["color"] != "blue" || *p.LeaseState != lease.StateTypeAvailable {
			t.Fatalf("properties: %+v", p)
		}

		// Set HTTP headers: new ETag, properties replaced.
		sp, err := bc.SetHTTPHeaders(ctx, blob.HTTPHeaders{BlobContentType: to.Ptr("text/plain"), BlobContentLanguage: to.Ptr("en")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *sp.ETag == *up.ETag {
			t.Fatal("Set Blob Properties must change the ETag")
		}
		p, err = bc.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		// Set Blob Properties clears what it does not send, the
		// Content-MD5 included, as on Azure.
		if *p.ContentType != "text/plain" || *p.ContentLanguage != "en" || p.CacheControl != nil || p.ContentMD5 != nil {
			t.Fatalf("after set headers: type %v lang %v cache %v md5 %x", *p.ContentType, *p.ContentLanguage, p.CacheControl, p.ContentMD5)
		}

		// Set metadata replaces it.
		sm, err := bc.SetMetadata(ctx, map[string]*string{"shape": to.Ptr("round")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *sm.ETag == *sp.ETag {
			t.Fatal("Set Blob Metadata must change the ETag")
		}
		p, err = bc.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if m := lowerMeta(p.Metadata); m["shape"] != "round" || m["color"] != "" {
			t.Fatalf("metadata after set: %v", m)
		}

		// Overwrite, then delete.
		if _, err := c.UploadBuffer(ctx, "data", "dir/file one.bin", []byte("v2"), nil); err != nil {
			t.Fatal(err)
		}
		if got := download(t, c, "data", "dir/file one.bin"); string(got) != "v2" {
			t.Fatalf("after overwrite: %q", got)
		}
		// Empty blob.
		if _, err := c.UploadBuffer(ctx, "data", "empty", nil, nil); err != nil {
			t.Fatal(err)
		}
		if got := download(t, c, "data", "empty"); len(got) != 0 {
			t.Fatalf("empty blob read %d bytes", len(got))
		}
		if _, err := c.DeleteBlob(ctx, "data", "dir/file one.bin", nil); err != nil {
			t.Fatal(err)
		}
		_, err = bc.GetProperties(ctx, nil)
		wantErr(t, err, 404, "BlobNotFound")
		_, err = c.DeleteBlob(ctx, "data", "dir/file one.bin", nil)
		wantErr(t, err, 404, "BlobNotFound")
		_, err = c.UploadBuffer(ctx, "nosuch", "a", []byte("a"), nil)
		wantErr(t, err, 404, "ContainerNotFound")

		// Content-MD5 mismatch: 400 Md5Mismatch and nothing changes.
		bb := c.ServiceClient().NewContainerClient("data").NewBlockBlobClient("md5")
		wrong := md5.Sum([]byte("other"))
		_, err = bb.Upload(ctx, nopSeeker("payload"), &blockblob.UploadOptions{TransactionalValidation: blob.TransferValidationTypeMD5(wrong[:])})
		wantErr(t, err, 400, "Md5Mismatch")
		_, err = bb.GetProperties(ctx, nil)
		wantErr(t, err, 404, "BlobNotFound")
		right := md5.Sum([]byte("payload"))
		if _, err := bb.Upload(ctx, nopSeeker("payload"), &blockblob.UploadOptions{TransactionalValidation: blob.TransferValidationTypeMD5(right[:])}); err != nil {
			t.Fatal(err)
		}
	})
}

type rsc struct{ *bytes.Reader }

func (rsc) Close() error { return nil }

func nopSeeker(s string) rsc { return rsc{bytes.NewReader([]byte(s))} }

func TestRangeReads(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		c := b.client
		createContainers(t, c, "rng")
		body := randBytes(1<<20+13, 2)
		if _, err := c.UploadBuffer(ctx, "rng", "blob", body, nil); err != nil {
			t.Fatal(err)
		}
		for _, rg := range []struct{ off, n int64 }{{0, 1}, {5, 100}, {1000, 0}, {int64(len(body)) - 1, 1}, {4096, 1 << 19}} {
			resp, err := c.DownloadStream(ctx, "rng", "blob", &azblob.DownloadStreamOptions{Range: azblob.HTTPRange{Offset: rg.off, Count: rg.n}})
			if err != nil {
				t.Fatalf("range %v: %v", rg, err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			end := int64(len(body))
			if rg.n > 0 {
				end = rg.off + rg.n
			}
			if !bytes.Equal(got, body[rg.off:end]) {
				t.Fatalf("range %v: %d bytes, wrong content", rg, len(got))
			}
			if rg.off > 0 || rg.n > 0 {
				if resp.ContentRange == nil || *resp.ContentRange != fmt.Sprintf("bytes %d-%d/%d", rg.off, end-1, len(body)) {
					t.Fatalf("range %v: Content-Range %v", rg, resp.ContentRange)
				}
			}
		}
		_, err := c.DownloadStream(ctx, "rng", "blob", &azblob.DownloadStreamOptions{Range: azblob.HTTPRange{Offset: int64(len(body)), Count: 10}})
		wantErr(t, err, 416, "InvalidRange")

		// Parallel ranged download through the SDK's transfer manager.
		buf := make([]byte, len(body))
		n, err := c.DownloadBuffer(ctx, "rng", "blob", buf, &azblob.DownloadBufferOptions{BlockSize: 64 << 10, Concurrency: 4})
		if err != nil || n != int64(len(body)) || !bytes.Equal(buf, body) {
			t.Fatalf("DownloadBuffer: n=%d err=%v equal=%v", n, err, bytes.Equal(buf, body))
		}
		// The standard Range header is honoured too (plain HTTP clients).
		resp, got := b.do(t, "GET", "rng/blob", "", map[string]string{"Range": "bytes=10-19"})
		if resp.StatusCode != 206 || !bytes.Equal([]byte(got), body[10:20]) {
			t.Fatalf("Range header: %d %d bytes", resp.StatusCode, len(got))
		}
	})
}

func TestListBlobs(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		c := b.client
		createContainers(t, c, "lst")
		var all []string
		for _, d := range []string{"a", "b", "b/sub", "c"} {
			for i := 0; i < 5; i++ {
				all = append(all, fmt.Sprintf("%s/%d.txt", d, i))
			}
		}
		all = append(all, "top1", "top2", "a-b", "a_b")
		for i, n := range all {
			if _, err := c.UploadBuffer(ctx, "lst", n, []byte(n), &azblob.UploadBufferOptions{Metadata: map[string]*string{"i": to.Ptr(fmt.Sprint(i))}}); err != nil {
				t.Fatal(err)
			}
		}
		sort.Strings(all)

		// Flat, paged 4 at a time.
		var got []string
		pages := 0
		pager := c.NewListBlobsFlatPager("lst", &azblob.ListBlobsFlatOptions{MaxResults: to.Ptr(int32(4)), Include: container.ListBlobsInclude{Metadata: true}})
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			if len(page.Segment.BlobItems) > 4 {
				t.Fatalf("page of %d > maxresults", len(page.Segment.BlobItems))
			}
			for _, it := range page.Segment.BlobItems {
				got = append(got, *it.Name)
				if *it.Properties.ContentLength != int64(len(*it.Name)) || it.Properties.ETag == nil || lowerMeta(it.Metadata)["i"] == "" {
					t.Fatalf("item %s: %+v", *it.Name, it.Properties)
				}
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(all) {
			t.Fatalf("flat listing\n got %v\nwant %v", got, all)
		}
		if pages != (len(all)+3)/4 {
			t.Fatalf("%d pages for %d items", pages, len(all))
		}

		// Hierarchical at the root: prefixes and top-level blobs.
		hier := func(prefix string, max int32) (blobs, prefixes []string) {
			p := c.ServiceClient().NewContainerClient("lst").NewListBlobsHierarchyPager("/", &container.ListBlobsHierarchyOptions{Prefix: to.Ptr(prefix), MaxResults: to.Ptr(max)})
			for p.More() {
				page, err := p.NextPage(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, it := range page.Segment.BlobItems {
					blobs = append(blobs, *it.Name)
				}
				for _, it := range page.Segment.BlobPrefixes {
					prefixes = append(prefixes, *it.Name)
				}
			}
			return
		}
		for _, max := range []int32{1, 2, 5000} {
			blobs, prefixes := hier("", max)
			if fmt.Sprint(blobs) != "[a-b a_b top1 top2]" || fmt.Sprint(prefixes) != "[a/ b/ c/]" {
				t.Fatalf("max %d: root blobs %v prefixes %v", max, blobs, prefixes)
			}
			blobs, prefixes = hier("b/", max)
			if fmt.Sprint(blobs) != "[b/0.txt b/1.txt b/2.txt b/3.txt b/4.txt]" || fmt.Sprint(prefixes) != "[b/sub/]" {
				t.Fatalf("max %d: b/ blobs %v prefixes %v", max, blobs, prefixes)
			}
		}
		_, err := c.NewListBlobsFlatPager("nosuch", nil).NextPage(ctx)
		wantErr(t, err, 404, "ContainerNotFound")
	})
}

func TestConditionalHeaders(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		c := b.client
		createContainers(t, c, "cond")
		up, err := c.UploadBuffer(ctx, "cond", "x", []byte("one"), nil)
		if err != nil {
			t.Fatal(err)
		}
		etag := *up.ETag
		stale := azcore.ETag(`"0x8D0000000000001"`)
		bc := c.ServiceClient().NewContainerClient("cond").NewBlockBlobClient("x")
		mac := func(m blob.ModifiedAccessConditions) *blob.AccessConditions {
			return &blob.AccessConditions{ModifiedAccessConditions: &m}
		}
		past, future := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)

		// Reads (GET and HEAD).
		reads := []struct {
			name   string
			m      blob.ModifiedAccessConditions
			status int
		}{
			{"if-match current", blob.ModifiedAccessConditions{IfMatch: &etag}, 0},
			{"if-match stale", blob.ModifiedAccessConditions{IfMatch: &stale}, 412},
			{"if-none-match current", blob.ModifiedAccessConditions{IfNoneMatch: &etag}, 304},
			{"if-none-match stale", blob.ModifiedAccessConditions{IfNoneMatch: &stale}, 0},
			{"if-modified-since past", blob.ModifiedAccessConditions{IfModifiedSince: &past}, 0},
			{"if-modified-since future", blob.ModifiedAccessConditions{IfModifiedSince: &future}, 304},
			{"if-unmodified-since future", blob.ModifiedAccessConditions{IfUnmodifiedSince: &future}, 0},
			{"if-unmodified-since past", blob.ModifiedAccessConditions{IfUnmodifiedSince: &past}, 412},
			{"if-match stale dominates ims", blob.ModifiedAccessConditions{IfMatch: &stale, IfModifiedSince: &past}, 412},
		}
		for _, tt := range reads {
			t.Run("read "+tt.name, func(t *testing.T) {
				_, err := bc.GetProperties(ctx, &blob.GetPropertiesOptions{AccessConditions: mac(tt.m)})
				if statusOf(err) != tt.status {
					t.Fatalf("HEAD: status %d (%v), want %d", statusOf(err), err, tt.status)
				}
				if tt.status != 0 && codeOf(err) != "ConditionNotMet" {
					t.Fatalf("HEAD: code %q", codeOf(err))
				}
				resp, err := bc.DownloadStream(ctx, &blob.DownloadStreamOptions{AccessConditions: mac(tt.m)})
				if tt.status == 304 {
					// The SDK turns 304 into a success carrying the
					// x-ms-error-code and no body.
					if err != nil || resp.ErrorCode == nil || *resp.ErrorCode != "ConditionNotMet" || resp.Body != nil {
						t.Fatalf("GET: want 304 ConditionNotMet, got err %v code %v", err, resp.ErrorCode)
					}
					return
				}
				if statusOf(err) != tt.status {
					t.Fatalf("GET: status %d (%v), want %d", statusOf(err), err, tt.status)
				}
				if err == nil {
					data, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if string(data) != "one" {
						t.Fatalf("GET body %q", data)
					}
				} else if codeOf(err) != "ConditionNotMet" {
					t.Fatalf("GET code %q", codeOf(err))
				}
			})
		}

		// Writes: every failure is 412 ConditionNotMet and changes nothing,
		// except create-only Put Blob on an existing blob: 409.
		writes := []struct {
			name   string
			m      blob.ModifiedAccessConditions
			status int
			code   string
		}{
			{"if-match stale", blob.ModifiedAccessConditions{IfMatch: &stale}, 412, "ConditionNotMet"},
			{"if-none-match current", blob.ModifiedAccessConditions{IfNoneMatch: &etag}, 412, "ConditionNotMet"},
			{"if-modified-since future", blob.ModifiedAccessConditions{IfModifiedSince: &future}, 412, "ConditionNotMet"},
			{"if-unmodified-since past", blob.ModifiedAccessConditions{IfUnmodifiedSince: &past}, 412, "ConditionNotMet"},
		}
		for _, tt := range writes {
			t.Run("write "+tt.name, func(t *testing.T) {
				_, err := bc.Upload(ctx, nopSeeker("two"), &blockblob.UploadOptions{AccessConditions: mac(tt.m)})
				wantErr(t, err, tt.status, tt.code)
				_, err = bc.SetMetadata(ctx, map[string]*string{"a": to.Ptr("b")}, &blob.SetMetadataOptions{AccessConditions: mac(tt.m)})
				wantErr(t, err, tt.status, tt.code)
				_, err = bc.SetHTTPHeaders(ctx, blob.HTTPHeaders{BlobContentType: to.Ptr("x/y")}, &blob.SetHTTPHeadersOptions{AccessConditions: mac(tt.m)})
				wantErr(t, err, tt.status, tt.code)
				_, err = bc.Delete(ctx, &blob.DeleteOptions{AccessConditions: mac(tt.m)})
				wantErr(t, err, tt.status, tt.code)
				p, err := bc.GetProperties(ctx, nil)
				if err != nil || *p.ETag != etag {
					t.Fatalf("a refused write changed the blob: %v %v", err, p.ETag)
				}
			})
		}
		_, err = bc.Upload(ctx, nopSeeker("two"), &blockblob.UploadOptions{AccessConditions: mac(blob.ModifiedAccessConditions{IfNoneMatch: to.Ptr(azcore.ETagAny)})})
		wantErr(t, err, 409, "BlobAlreadyExists")
		_, err = bc.SetMetadata(ctx, nil, &blob.SetMetadataOptions{AccessConditions: mac(blob.ModifiedAccessConditions{IfNoneMatch: to.Ptr(azcore.ETagAny)})})
		wantErr(t, err, 412, "ConditionNotMet")

		// Successful conditional writes, each moving the ETag on.
		r1, err := bc.Upload(ctx, nopSeeker("two"), &blockblob.UploadOptions{AccessConditions: mac(blob.ModifiedAccessConditions{IfMatch: &etag})})
		if err != nil {
			t.Fatal(err)
		}
		r2, err := bc.SetMetadata(ctx, nil, &blob.SetMetadataOptions{AccessConditions: mac(blob.ModifiedAccessConditions{IfMatch: r1.ETag, IfUnmodifiedSince: &future})})
		if err != nil {
			t.Fatal(err)
		}
		_, err = bc.SetMetadata(ctx, nil, &blob.SetMetadataOptions{AccessConditions: mac(blob.ModifiedAccessConditions{IfMatch: r1.ETag})})
		wantErr(t, err, 412, "ConditionNotMet")
		if _, err := bc.Delete(ctx, &blob.DeleteOptions{AccessConditions: mac(blob.ModifiedAccessConditions{IfMatch: r2.ETag})}); err != nil {
			t.Fatal(err)
		}
		// Conditions against a missing blob: If-Match fails, If-None-Match: * creates.
		_, err = bc.Upload(ctx, nopSeeker("three"), &blockblob.UploadOptions{AccessConditions: mac(blob.ModifiedAccessConditions{IfMatch: to.Ptr(azcore.ETagAny)})})
		wantErr(t, err, 412, "ConditionNotMet")
		if _, err := bc.Upload(ctx, nopSeeker("three"), &blockblob.UploadOptions{AccessConditions: mac(blob.ModifiedAccessConditions{IfNoneMatch: to.Ptr(azcore.ETagAny)})}); err != nil {
			t.Fatal(err)
		}
		_, err = bc.GetProperties(ctx, &blob.GetPropertiesOptions{AccessConditions: mac(blob.ModifiedAccessConditions{IfMatch: &stale})})
		wantErr(t, err, 412, "ConditionNotMet")
	})
}

func TestAuthRefused(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	badKey := "AAAAvdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
	cred, err := azblob.NewSharedKeyCredential("devstoreaccount1", badKey)
	if err != nil {
		t.Fatal(err)
	}
	bad, err := azblob.NewClientWithSharedKeyCredential(b.serviceURL(0), cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.CreateContainer(ctx, "nope", nil)
	wantErr(t, err, 403, "AuthenticationFailed")
	createContainers(t, b.client, "yes")
	_, err = bad.UploadBuffer(ctx, "yes", "f", []byte("data"), nil)
	wantErr(t, err, 403, "AuthenticationFailed")
	_, err = bad.DeleteContainer(ctx, "yes", nil)
	wantErr(t, err, 403, "AuthenticationFailed")
	// Nothing changed: "nope" absent, "yes" present and empty.
	_, err = b.client.ServiceClient().NewContainerClient("nope").GetProperties(ctx, nil)
	wantErr(t, err, 404, "ContainerNotFound")
	page, err := b.client.NewListBlobsFlatPager("yes", nil).NextPage(ctx)
	if err != nil || len(page.Segment.BlobItems) != 0 {
		t.Fatalf("blobs after refused writes: %v %v", err, page.Segment.BlobItems)
	}
	// No credentials at all.
	resp, err := http.Get(b.serviceURL(0) + "yes?restype=container")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	wantStatus(t, resp, 401, "NoAuthenticationInformation", "anonymous")
}

func TestServiceCalls(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	svc := b.client.ServiceClient()
	info, err := svc.GetAccountInfo(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if info.SKUName == nil || info.AccountKind == nil {
		t.Fatalf("account info %+v", info)
	}
	if _, err := svc.GetProperties(ctx, nil); err != nil {
		t.Fatal(err)
	}
	_, err = svc.SetProperties(ctx, &service.SetPropertiesOptions{DeleteRetentionPolicy: &service.RetentionPolicy{Enabled: to.Ptr(false)}})
	if err != nil {
		t.Fatal(err)
	}
	props, err := svc.GetProperties(ctx, nil)
	if err != nil || props.DeleteRetentionPolicy == nil || *props.DeleteRetentionPolicy.Enabled {
		t.Fatalf("service properties after set: %+v %v", props, err)
	}
}
