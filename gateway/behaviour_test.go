package gateway_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
)

// Azure behaviours the gateway matches; each test failed before its fix.

// TestSetBlobPropertiesClears: Set Blob Properties replaces the content
// properties wholesale: one the request does not send is cleared, the
// stored Content-MD5 included (before, the MD5 was kept). An
// x-ms-blob-content-md5 is stored as given, in any length (Azure checks
// nothing there).
func TestSetBlobPropertiesClears(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "props")
	bc := b.client.ServiceClient().NewContainerClient("props").NewBlobClient("p")
	if _, err := b.client.UploadBuffer(ctx, "props", "p", []byte("hello"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := bc.SetHTTPHeaders(ctx, blob.HTTPHeaders{BlobContentType: to.Ptr("text/plain"), BlobCacheControl: to.Ptr("no-cache")}, nil); err != nil {
		t.Fatal(err)
	}
	p, err := bc.GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if deref(p.ContentType) != "text/plain" || deref(p.CacheControl) != "no-cache" {
		t.Fatalf("after the first Set Blob Properties: %q %q", deref(p.ContentType), deref(p.CacheControl))
	}
	if p.ContentMD5 != nil {
		t.Fatalf("Content-MD5 %x kept by a Set Blob Properties that did not send it", p.ContentMD5)
	}
	if _, err := bc.SetHTTPHeaders(ctx, blob.HTTPHeaders{BlobContentLanguage: to.Ptr("de")}, nil); err != nil {
		t.Fatal(err)
	}
	if p, err = bc.GetProperties(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if deref(p.ContentLanguage) != "de" || deref(p.CacheControl) != "" || deref(p.ContentType) != "application/octet-stream" {
		t.Fatalf("unsent properties kept: language %q cache-control %q type %q", deref(p.ContentLanguage), deref(p.CacheControl), deref(p.ContentType))
	}
	// Any base64 is stored as given, 16 bytes or not.
	for _, v := range [][]byte{[]byte("short"), md5Of([]byte("hello")), []byte("twenty bytes of md5.")} {
		if _, err := bc.SetHTTPHeaders(ctx, blob.HTTPHeaders{BlobContentMD5: v}, nil); err != nil {
			t.Fatalf("x-ms-blob-content-md5 of %d bytes: %v", len(v), err)
		}
		if p, err = bc.GetProperties(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if string(p.ContentMD5) != string(v) {
			t.Fatalf("stored MD5 %q, want %q", p.ContentMD5, v)
		}
	}
	resp, _ := b.do(t, "PUT", "props/p?comp=properties", "", map[string]string{"x-ms-blob-content-md5": "not base64!"})
	wantStatus(t, resp, 400, "InvalidHeaderValue", "x-ms-blob-content-md5 not base64")
}

// TestPutBlobMD5Rules: on a single-shot Put Blob of a block blob
// x-ms-blob-content-md5 is checked against the bytes like Content-MD5
// (Azure: the two are interchangeable there), so no MD5 contradicting the
// bytes is stored (before: 201 and the wrong MD5 stored); a
// transactional Content-MD5 that is not 16 bytes is 400 InvalidMd5; a
// request with both Content-MD5 and x-ms-content-crc64 is 400
// BothCrc64AndMd5HeaderPresent. Put Block
// and Append Block follow the same transactional rules.
func TestPutBlobMD5Rules(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "md5")
	good, wrong := b64(md5Of([]byte("body"))), b64(md5Of([]byte("other")))
	crc := "AAAAAAAAAAA=" // 8 bytes; never reached when refused first
	for _, tc := range []struct {
		name   string
		path   string
		hdr    map[string]string
		status int
		code   string
	}{
		{"blob md5 mismatch", "md5/a", map[string]string{"x-ms-blob-type": "BlockBlob", "x-ms-blob-content-md5": wrong}, 400, "Md5Mismatch"},
		{"blob md5 not 16 bytes", "md5/a", map[string]string{"x-ms-blob-type": "BlockBlob", "x-ms-blob-content-md5": b64([]byte("short"))}, 400, "InvalidHeaderValue"},
		{"content md5 not 16 bytes", "md5/a", map[string]string{"x-ms-blob-type": "BlockBlob", "Content-MD5": b64([]byte("short"))}, 400, "InvalidMd5"},
		{"both digests", "md5/a", map[string]string{"x-ms-blob-type": "BlockBlob", "Content-MD5": good, "x-ms-content-crc64": crc}, 400, "BothCrc64AndMd5HeaderPresent"},
		{"put block md5 not 16 bytes", "md5/a?comp=block&blockid=" + b64([]byte("blk1")), map[string]string{"Content-MD5": b64([]byte("short"))}, 400, "InvalidMd5"},
		{"put block both digests", "md5/a?comp=block&blockid=" + b64([]byte("blk1")), map[string]string{"Content-MD5": good, "x-ms-content-crc64": crc}, 400, "BothCrc64AndMd5HeaderPresent"},
	} {
		resp, body := b.do(t, "PUT", tc.path, "body", tc.hdr)
		if d := statusDiff(resp, tc.status, tc.code); d != "" {
			t.Errorf("%s: %s\n%s", tc.name, d, body)
		}
	}
	if b.exists(t, "md5/a") {
		t.Fatal("a refused Put Blob stored a blob")
	}
	// The matching value is stored; with both MD5 headers, each must match.
	resp, body := b.do(t, "PUT", "md5/ok", "body", map[string]string{"x-ms-blob-type": "BlockBlob", "x-ms-blob-content-md5": good, "Content-MD5": good})
	wantStatus(t, resp, 201, "", "matching MD5s: "+body)
	p, err := b.client.ServiceClient().NewContainerClient("md5").NewBlobClient("ok").GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b64(p.ContentMD5) != good {
		t.Fatalf("stored MD5 %s, want %s", b64(p.ContentMD5), good)
	}
	// Put Block List stores x-ms-blob-content-md5 as given: the blocks
	// were checked when they were put.
	resp, _ = b.do(t, "PUT", "md5/bl?comp=block&blockid="+b64([]byte("blk1")), "body", nil)
	wantStatus(t, resp, 201, "", "put block")
	resp, body = b.do(t, "PUT", "md5/bl?comp=blocklist", `<?xml version="1.0" encoding="utf-8"?><BlockList><Latest>`+b64([]byte("blk1"))+`</Latest></BlockList>`,
		map[string]string{"x-ms-blob-content-md5": wrong})
	wantStatus(t, resp, 201, "", "put block list: "+body)
}

// TestBlobHeadersAzure: Get Blob Properties reports
// x-ms-access-tier-inferred: false once a tier was set explicitly and
// x-ms-blob-sealed: false on an append blob not sealed (before, both
// headers were left out); a full Get Blob returns the stored Content-MD5;
// a 416 on a zero-length blob carries Content-Range: bytes */0.
func TestBlobHeadersAzure(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "hdrs")
	cc := b.client.ServiceClient().NewContainerClient("hdrs")
	if _, err := b.client.UploadBuffer(ctx, "hdrs", "tiered", []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	resp, _ := b.do(t, "HEAD", "hdrs/tiered", "", nil)
	if v := resp.Header.Get("x-ms-access-tier-inferred"); v != "true" {
		t.Fatalf("untiered blob: x-ms-access-tier-inferred %q, want true", v)
	}
	if _, err := cc.NewBlobClient("tiered").SetTier(ctx, blob.AccessTierCool, nil); err != nil {
		t.Fatal(err)
	}
	resp, _ = b.do(t, "HEAD", "hdrs/tiered", "", nil)
	if v := resp.Header.Get("x-ms-access-tier-inferred"); v != "false" {
		t.Fatalf("after Set Blob Tier: x-ms-access-tier-inferred %q, want false", v)
	}
	p, err := cc.NewBlobClient("tiered").GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.AccessTierInferred == nil || *p.AccessTierInferred {
		t.Fatalf("SDK AccessTierInferred %v, want false", p.AccessTierInferred)
	}

	if _, err := cc.NewAppendBlobClient("log").Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	ap, err := cc.NewBlobClient("log").GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ap.IsSealed == nil || *ap.IsSealed {
		t.Fatalf("unsealed append blob: IsSealed %v, want false", ap.IsSealed)
	}

	// Full Get Blob, with and without the SDK.
	resp, body := b.do(t, "GET", "hdrs/tiered", "", nil)
	if resp.Header.Get("Content-MD5") != b64(md5Of([]byte("x"))) || body != "x" {
		t.Fatalf("full Get Blob: Content-MD5 %q body %q", resp.Header.Get("Content-MD5"), body)
	}
	dl, err := cc.NewBlobClient("tiered").DownloadStream(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	dl.Body.Close()
	if b64(dl.ContentMD5) != b64(md5Of([]byte("x"))) {
		t.Fatalf("SDK download: Content-MD5 %x", dl.ContentMD5)
	}

	if _, err := b.client.UploadBuffer(ctx, "hdrs", "empty", nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, rng := range []string{"bytes=0-", "bytes=0-0", "bytes=-1"} {
		resp, _ = b.do(t, "GET", "hdrs/empty", "", map[string]string{"x-ms-range": rng})
		wantStatus(t, resp, http.StatusRequestedRangeNotSatisfiable, "InvalidRange", rng)
		if v := resp.Header.Get("Content-Range"); v != "bytes */0" {
			t.Fatalf("416 for %s on an empty blob: Content-Range %q, want bytes */0", rng, v)
		}
	}
	resp, _ = b.do(t, "GET", "hdrs/tiered", "", map[string]string{"Range": "bytes=5-"})
	wantStatus(t, resp, http.StatusRequestedRangeNotSatisfiable, "InvalidRange", "past the end")
	if v := resp.Header.Get("Content-Range"); v != "bytes */1" {
		t.Fatalf("416 past the end: Content-Range %q, want bytes */1", v)
	}
	if strings.Contains(resp.Header.Get("Content-Type"), "octet") {
		t.Fatalf("416 answered with the blob's Content-Type")
	}
}

// TestSnapshotBlockListTags: Get Block List and Get Blob Tags accept
// ?snapshot= and answer the snapshot's committed blocks and tags, not the
// base blob's (before, both were 400 "snapshots are read-only").
func TestSnapshotBlockListTags(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "snaps")
	cc := b.client.ServiceClient().NewContainerClient("snaps")
	bb := cc.NewBlockBlobClient("s")
	id1, id2 := b64([]byte("block-1")), b64([]byte("block-2"))
	if _, err := bb.StageBlock(ctx, id1, nopSeeker("aaa"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := bb.CommitBlockList(ctx, []string{id1}, &blockblob.CommitBlockListOptions{Tags: map[string]string{"v": "1"}}); err != nil {
		t.Fatal(err)
	}
	snap, err := bb.CreateSnapshot(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bb.StageBlock(ctx, id2, nopSeeker("bbbb"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := bb.CommitBlockList(ctx, []string{id1, id2}, &blockblob.CommitBlockListOptions{Tags: map[string]string{"v": "2"}}); err != nil {
		t.Fatal(err)
	}
	sb, err := bb.WithSnapshot(*snap.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	bl, err := sb.GetBlockList(ctx, blockblob.BlockListTypeAll, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(bl.CommittedBlocks) != 1 || *bl.CommittedBlocks[0].Name != id1 || *bl.CommittedBlocks[0].Size != 3 || len(bl.UncommittedBlocks) != 0 || deref(bl.BlobContentLength) != 3 {
		t.Fatalf("snapshot block list: %d committed, %d uncommitted, length %d", len(bl.CommittedBlocks), len(bl.UncommittedBlocks), deref(bl.BlobContentLength))
	}
	tags, err := sb.GetTags(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tags.BlobTagSet) != 1 || *tags.BlobTagSet[0].Key != "v" || *tags.BlobTagSet[0].Value != "1" {
		t.Fatalf("snapshot tags: %+v", tags.BlobTagSet)
	}
	// The base blob still answers its own.
	if bl, err = bb.GetBlockList(ctx, blockblob.BlockListTypeCommitted, nil); err != nil || len(bl.CommittedBlocks) != 2 {
		t.Fatalf("base block list: %v %v", bl.CommittedBlocks, err)
	}
	missing, err := bb.WithSnapshot("2020-01-01T00:00:00.0000000Z")
	if err != nil {
		t.Fatal(err)
	}
	_, err = missing.GetBlockList(ctx, blockblob.BlockListTypeAll, nil)
	wantErr(t, err, 404, "BlobNotFound")
	_, err = missing.GetTags(ctx, nil)
	wantErr(t, err, 404, "BlobNotFound")
}

// TestTagExpressionLimits: Find Blobs by Tags and x-ms-if-tags refuse
// what Azure refuses, with its message text: more than 10 tags, a key
// over 128 or a value over 256 characters, a character no tag holds
// (before, all were accepted and compared).
func TestTagExpressionLimits(t *testing.T) {
	b := setup(t, "sqlite")
	createContainers(t, b.client, "tagq")
	b.putBlobs(t, "tagq/x")
	var terms []string
	for i := 0; i < 11; i++ {
		terms = append(terms, fmt.Sprintf(`"k%d"='v'`, i))
	}
	for _, tc := range []struct{ expr, msg string }{
		{strings.Join(terms, " AND "), "Error parsing query: there can be at most 10 unique tags in a query"},
		{`"` + strings.Repeat("k", 129) + `"='v'`, "Error parsing query at or near character position 1: tag must be between 1 and 128 characters in length"},
		{`"a"='` + strings.Repeat("v", 257) + `'`, "Error parsing query at or near character position 5: tag value must be between 0 and 256 characters in length"},
		{`"a"='x*y'`, "Error parsing query at or near character position 5: '*' not permitted in tag name or value"},
	} {
		resp, body := b.do(t, "GET", "?comp=blobs&where="+url.QueryEscape(tc.expr), "", nil)
		if d := statusDiff(resp, 400, "InvalidQueryParameterValue"); d != "" || !strings.Contains(html.UnescapeString(body), "<Message>"+tc.msg) {
			t.Errorf("find %.30q: %s\n%s", tc.expr, d, body)
		}
		resp, _ = b.do(t, "HEAD", "tagq/x", "", map[string]string{"x-ms-if-tags": tc.expr})
		if d := statusDiff(resp, 400, "InvalidHeaderValue"); d != "" {
			t.Errorf("x-ms-if-tags %.30q: %s", tc.expr, d)
		}
		resp, body = b.do(t, "GET", "tagq/x?comp=tags", "", map[string]string{"x-ms-if-tags": tc.expr})
		if d := statusDiff(resp, 400, "InvalidHeaderValue"); d != "" || !strings.Contains(html.UnescapeString(body), tc.msg) {
			t.Errorf("x-ms-if-tags %.30q: %s\n%s", tc.expr, d, body)
		}
	}
	// Ten are fine.
	resp, body := b.do(t, "GET", "?comp=blobs&where="+url.QueryEscape(strings.Join(terms[:10], " AND ")), "", nil)
	wantStatus(t, resp, 200, "", "ten tags: "+body)
}

// TestContainerNames: a container name of the wrong length is 400
// OutOfRangeInput (before: InvalidResourceName); one with other
// characters stays InvalidResourceName; the special containers $logs and
// $web may be named (404 until created, then used as any container) and
// $root keeps working.
func TestContainerNames(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	for _, n := range []string{"ab", strings.Repeat("a", 64)} {
		_, err := b.client.CreateContainer(ctx, n, nil)
		wantErr(t, err, 400, "OutOfRangeInput")
	}
	for _, n := range []string{"Bad--Name", "a_b", "$other"} {
		_, err := b.client.CreateContainer(ctx, n, nil)
		wantErr(t, err, 400, "InvalidResourceName")
	}
	if _, err := b.client.CreateContainer(ctx, strings.Repeat("a", 63), nil); err != nil {
		t.Fatalf("63 characters: %v", err)
	}
	for _, n := range []string{"$logs", "$web", "$root"} {
		cc := b.client.ServiceClient().NewContainerClient(n)
		_, err := cc.GetProperties(ctx, nil)
		wantErr(t, err, 404, "ContainerNotFound")
		if _, err := cc.Create(ctx, nil); err != nil {
			t.Fatalf("create %s: %v", n, err)
		}
		if _, err := b.client.UploadBuffer(ctx, n, "index.html", []byte("<p>"), nil); err != nil {
			t.Fatalf("upload to %s: %v", n, err)
		}
		if !b.exists(t, n+"/index.html") {
			t.Fatalf("%s/index.html missing", n)
		}
	}
}

// TestCopyArchivedAndUnreachable: Copy Blob of an archived source to
// another blob of the account with x-ms-access-tier is allowed (Azure's
// rehydrate by copy; before: 409 BlobArchived), without an online tier it
// stays refused; a copy source that cannot be reached is 500
// CannotVerifyCopySource, as Azure answers a source it cannot verify in
// time (before: 502).
func TestCopyArchivedAndUnreachable(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "arch")
	cc := b.client.ServiceClient().NewContainerClient("arch")
	if _, err := b.client.UploadBuffer(ctx, "arch", "cold", []byte("frozen bytes"), nil); err != nil {
		t.Fatal(err)
	}
	src := cc.NewBlobClient("cold")
	if _, err := src.SetTier(ctx, blob.AccessTierArchive, nil); err != nil {
		t.Fatal(err)
	}
	_, err := cc.NewBlobClient("warm").StartCopyFromURL(ctx, src.URL(), nil)
	wantErr(t, err, 409, "BlobArchived")
	_, err = cc.NewBlobClient("warm").StartCopyFromURL(ctx, src.URL(), &blob.StartCopyFromURLOptions{Tier: to.Ptr(blob.AccessTierArchive)})
	wantErr(t, err, 409, "BlobArchived")
	_, err = src.StartCopyFromURL(ctx, src.URL(), &blob.StartCopyFromURLOptions{Tier: to.Ptr(blob.AccessTierHot)})
	wantErr(t, err, 409, "BlobArchived")
	if _, err := cc.NewBlobClient("warm").StartCopyFromURL(ctx, src.URL(), &blob.StartCopyFromURLOptions{Tier: to.Ptr(blob.AccessTierCool)}); err != nil {
		t.Fatalf("rehydrate by copy: %v", err)
	}
	if got := download(t, b.client, "arch", "warm"); string(got) != "frozen bytes" {
		t.Fatalf("rehydrated copy %q", got)
	}
	if tier := b.tierOf(t, "arch/warm"); tier != "Cool" {
		t.Fatalf("rehydrated copy tier %q", tier)
	}
	if tier := b.tierOf(t, "arch/cold"); tier != "Archive" {
		t.Fatalf("source tier %q after the copy", tier)
	}

	// Nothing listens on a port just closed.
	l := httptest.NewServer(http.NotFoundHandler())
	dead := l.URL + "/gone"
	l.Close()
	_, err = cc.NewBlobClient("remote").StartCopyFromURL(ctx, dead, nil)
	wantErr(t, err, 500, "CannotVerifyCopySource")
	_, err = cc.NewBlockBlobClient("remote").UploadBlobFromURL(ctx, dead, nil)
	wantErr(t, err, 500, "CannotVerifyCopySource")
	b.checkNoLeak(t)
}

// TestCORSVary: the Vary header on actual requests as Azure's CORS tables
// set it. A matching rule that allows every origin answers every origin
// alike: no Vary (before: Vary: Origin); a rule naming origins, or no
// matching rule while rules exist, answers Vary: Origin; a GET without
// Origin gets Vary: Origin unless the first rule for GET allows every
// origin; without rules no Vary at all.
func TestCORSVary(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "vary")
	if _, err := b.client.UploadBuffer(ctx, "vary", "p", []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	vary := func(origin, method string) string {
		t.Helper()
		hdr := map[string]string{}
		if origin != "" {
			hdr["Origin"] = origin
		}
		resp, _ := b.do(t, method, "vary/p", "", hdr)
		return strings.Join(resp.Header.Values("Vary"), ",")
	}
	if v := vary("", "GET"); v != "" {
		t.Fatalf("no rules: Vary %q", v)
	}
	set := func(rules ...*service.CORSRule) {
		t.Helper()
		if _, err := b.client.ServiceClient().SetProperties(ctx, &service.SetPropertiesOptions{CORS: rules}); err != nil {
			t.Fatal(err)
		}
	}
	named := &service.CORSRule{AllowedOrigins: to.Ptr("http://a.example"), AllowedMethods: to.Ptr("GET"),
		AllowedHeaders: to.Ptr(""), ExposedHeaders: to.Ptr(""), MaxAgeInSeconds: to.Ptr[int32](5)}
	star := &service.CORSRule{AllowedOrigins: to.Ptr("*"), AllowedMethods: to.Ptr("GET,HEAD"),
		AllowedHeaders: to.Ptr(""), ExposedHeaders: to.Ptr(""), MaxAgeInSeconds: to.Ptr[int32](5)}
	set(named)
	for _, tc := range []struct{ origin, method, want string }{
		{"http://a.example", "GET", "Origin"}, // a rule naming the origin
		{"http://z.example", "GET", "Origin"}, // no rule matches
		{"", "GET", "Origin"},                 // no Origin, no any-origin rule
		{"", "HEAD", "Origin"},
	} {
		if v := vary(tc.origin, tc.method); v != tc.want {
			t.Errorf("named rule only, %s %q: Vary %q, want %q", tc.method, tc.origin, v, tc.want)
		}
	}
	set(named, star)
	for _, tc := range []struct{ origin, method, want string }{
		{"http://a.example", "GET", "Origin"}, // the named rule comes first
		{"http://z.example", "GET", ""},       // the any-origin rule
		{"http://z.example", "HEAD", ""},
		{"", "GET", ""}, // the first rule for GET without Origin is "*"
		{"", "HEAD", ""},
	} {
		if v := vary(tc.origin, tc.method); v != tc.want {
			t.Errorf("named and * rules, %s %q: Vary %q, want %q", tc.method, tc.origin, v, tc.want)
		}
	}
}

// TestBlockCRC64Echo: Put Block and Append Block without a transactional
// digest answer the CRC64 of the bytes received, as the service does
// since 2019-02-02 (before: no digest at all); with Content-MD5 they echo
// the MD5 and no CRC64.
func TestBlockCRC64Echo(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "crc")
	cc := b.client.ServiceClient().NewContainerClient("crc")
	data := "some block bytes"
	sr, err := cc.NewBlockBlobClient("b").StageBlock(ctx, b64([]byte("blk")), nopSeeker(data), nil)
	if err != nil {
		t.Fatal(err)
	}
	if b64(sr.ContentCRC64) != b64(azureCRC64([]byte(data))) || sr.ContentMD5 != nil {
		t.Fatalf("Put Block without a digest: x-ms-content-crc64 %x (want %x), Content-MD5 %x", sr.ContentCRC64, azureCRC64([]byte(data)), sr.ContentMD5)
	}
	ac := cc.NewAppendBlobClient("a")
	if _, err := ac.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	ar, err := ac.AppendBlock(ctx, nopSeeker(data), nil)
	if err != nil {
		t.Fatal(err)
	}
	if b64(ar.ContentCRC64) != b64(azureCRC64([]byte(data))) {
		t.Fatalf("Append Block without a digest: x-ms-content-crc64 %x", ar.ContentCRC64)
	}
	resp, _ := b.do(t, "PUT", "crc/b?comp=block&blockid="+b64([]byte("bl2")), data, map[string]string{"Content-MD5": b64(md5Of([]byte(data)))})
	wantStatus(t, resp, 201, "", "Put Block with Content-MD5")
	if resp.Header.Get("Content-MD5") != b64(md5Of([]byte(data))) || resp.Header.Get("x-ms-content-crc64") != "" {
		t.Fatalf("Put Block with Content-MD5: Content-MD5 %q, x-ms-content-crc64 %q", resp.Header.Get("Content-MD5"), resp.Header.Get("x-ms-content-crc64"))
	}
}
