package gateway_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	azpolicy "github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
)

// A second account served by the same gateway (TestCopyCrossAccount).
const (
	secondAccount = "second"
	secondKey     = "c2Vjb25kLWFjY291bnQta2V5LWZvci1ibG9iZ3ctY29weS10ZXN0cy0wMTIzNDU2Nzg5YWJjZGVm"
)

// putBlocks writes name as a block blob of several committed blocks (the
// shape a copy must flatten), with properties and metadata.
func putBlocks(t *testing.T, c *azblob.Client, cont, name string, data []byte, blockSize int) *blockblob.Client {
	t.Helper()
	ctx := context.Background()
	bc := blockClient(c, cont, name)
	var ids []string
	for off, n := 0, 0; off < len(data); off, n = off+blockSize, n+1 {
		end := min(off+blockSize, len(data))
		id := blockID(n)
		if _, err := bc.StageBlock(ctx, id, rsc{bytes.NewReader(data[off:end])}, nil); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	_, err := bc.CommitBlockList(ctx, ids, &blockblob.CommitBlockListOptions{
		HTTPHeaders: &blob.HTTPHeaders{BlobContentType: to.Ptr("text/csv"), BlobContentLanguage: to.Ptr("de"), BlobCacheControl: to.Ptr("no-cache")},
		Metadata:    map[string]*string{"origin": to.Ptr("src"), "rows": to.Ptr("42")},
	})
	if err != nil {
		t.Fatal(err)
	}
	return bc
}

func sourceIfMatch(etag azcore.ETag) *blob.SourceModifiedAccessConditions {
	return &blob.SourceModifiedAccessConditions{SourceIfMatch: to.Ptr(etag)}
}

// TestCopyBlobSameAccount: Copy Blob (StartCopyFromURL) and Copy Blob From
// URL (CopyFromURL) of a multi-block blob in the same account, authorized
// by the request's Shared Key alone: the copy is complete when the 202
// arrives (status success), bytes, properties and metadata equal the
// source's (metadata replaced when the request sends some), the
// destination gets a new ETag, and deleting and collecting the source
// leaves the copy readable (the async copy shares the source's objects,
// TestCopySharesObjects; the sync one, with no stored MD5 to answer,
// streams the bytes).
func TestCopyBlobSameAccount(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "src", "dst")
		data := randBytes(700<<10+77, 21)
		src := putBlocks(t, b.client, "src", "data.csv", data, 256<<10)
		srcProps := getProps(t, src)

		dst := blockClient(b.client, "dst", "copy.csv")
		resp, err := dst.StartCopyFromURL(ctx, src.URL(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.CopyStatus == nil || *resp.CopyStatus != blob.CopyStatusTypeSuccess || resp.CopyID == nil || *resp.CopyID == "" {
			t.Fatalf("copy status %v id %v", resp.CopyStatus, resp.CopyID)
		}
		if resp.ETag == nil || *resp.ETag == *srcProps.ETag {
			t.Fatalf("destination ETag %v, source %v", resp.ETag, *srcProps.ETag)
		}
		if got := download(t, b.client, "dst", "copy.csv"); !bytes.Equal(got, data) {
			t.Fatal("copied bytes differ")
		}
		p := getProps(t, dst)
		if *p.ETag != *resp.ETag {
			t.Fatalf("ETag %v after copy answered %v", *p.ETag, *resp.ETag)
		}
		if m := lowerMeta(p.Metadata); m["origin"] != "src" || m["rows"] != "42" || len(m) != 2 {
			t.Fatalf("metadata %v", m)
		}
		if *p.ContentType != "text/csv" || *p.ContentLanguage != "de" || *p.CacheControl != "no-cache" || *p.BlobType != blob.BlobTypeBlockBlob {
			t.Fatalf("properties %v %v %v %v", *p.ContentType, *p.ContentLanguage, *p.CacheControl, *p.BlobType)
		}

		// Copy Blob From URL (sync), with metadata of its own.
		sync := blockClient(b.client, "dst", "sync.csv")
		sresp, err := sync.CopyFromURL(ctx, src.URL(), &blob.CopyFromURLOptions{Metadata: map[string]*string{"fresh": to.Ptr("yes")}})
		if err != nil {
			t.Fatal(err)
		}
		if sresp.CopyStatus == nil || *sresp.CopyStatus != "success" || sresp.CopyID == nil {
			t.Fatalf("sync copy status %v", sresp.CopyStatus)
		}
		if sum := md5.Sum(data); !bytes.Equal(sresp.ContentMD5, sum[:]) {
			t.Fatalf("sync copy Content-MD5 %x", sresp.ContentMD5)
		}
		if m := lowerMeta(getProps(t, sync).Metadata); m["fresh"] != "yes" || len(m) != 1 {
			t.Fatalf("metadata with x-ms-meta on the copy: %v", m)
		}

		// Copy over an existing blob: a new ETag again.
		again, err := dst.StartCopyFromURL(ctx, src.URL(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if *again.ETag == *resp.ETag {
			t.Fatal("copy over an existing blob kept its ETag")
		}

		// An append blob copies as an append blob that can grow.
		ab := b.client.ServiceClient().NewContainerClient("src").NewAppendBlobClient("log")
		if _, err := ab.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{"one,", "two,"} {
			if _, err := ab.AppendBlock(ctx, nopSeeker(s), nil); err != nil {
				t.Fatal(err)
			}
		}
		abCopy := b.client.ServiceClient().NewContainerClient("dst").NewAppendBlobClient("log")
		if _, err := abCopy.StartCopyFromURL(ctx, ab.URL(), nil); err != nil {
			t.Fatal(err)
		}
		ar, err := abCopy.AppendBlock(ctx, nopSeeker("three"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if *ar.BlobAppendOffset != "8" || *ar.BlobCommittedBlockCount != 3 {
			t.Fatalf("append after copy: offset %s count %d", *ar.BlobAppendOffset, *ar.BlobCommittedBlockCount)
		}
		if got := download(t, b.client, "dst", "log"); string(got) != "one,two,three" {
			t.Fatalf("append blob copy %q", got)
		}
		// Copy Blob onto a blob of another type is refused.
		_, err = abCopy.StartCopyFromURL(ctx, src.URL(), nil)
		wantErr(t, err, 409, "InvalidBlobType")

		// Abort: nothing is ever pending.
		_, err = dst.AbortCopyFromURL(ctx, *resp.CopyID, nil)
		wantErr(t, err, 409, "NoPendingCopyOperation")

		// The source's deletion and collection leave the copy intact.
		if _, err := src.Delete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		b.collectAll(t)
		if got := download(t, b.client, "dst", "copy.csv"); !bytes.Equal(got, data) {
			t.Fatal("copy damaged by the source's deletion")
		}
		// Missing source: 404 BlobNotFound for Copy Blob in the account,
		// 404 CannotVerifyCopySource for the From URL forms.
		_, err = dst.StartCopyFromURL(ctx, src.URL(), nil)
		wantErr(t, err, 404, "BlobNotFound")
		_, err = dst.CopyFromURL(ctx, src.URL(), nil)
		wantErr(t, err, 404, "CannotVerifyCopySource")
		_, err = dst.UploadBlobFromURL(ctx, src.URL(), nil)
		wantErr(t, err, 404, "CannotVerifyCopySource")
		_, err = dst.StageBlockFromURL(ctx, blockID(0), src.URL(), nil)
		wantErr(t, err, 404, "CannotVerifyCopySource")
		if got := download(t, b.client, "dst", "copy.csv"); !bytes.Equal(got, data) {
			t.Fatal("failed copies changed the destination")
		}
		b.collectNoLeak(t)
	})
}

// TestCopyConditions: source conditions fail as 412 SourceConditionNotMet
// (never 304), destination conditions as ConditionNotMet on Copy Blob and
// TargetConditionNotMet on Put Blob From URL, and If-None-Match: * on an
// existing destination as 409 BlobAlreadyExists (a create-only write);
// nothing changes on failure.
func TestCopyConditions(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "box")
		if _, err := b.client.UploadBuffer(ctx, "box", "src", []byte("source bytes"), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := b.client.UploadBuffer(ctx, "box", "dst", []byte("old"), nil); err != nil {
			t.Fatal(err)
		}
		src, dst := blockClient(b.client, "box", "src"), blockClient(b.client, "box", "dst")
		srcETag, dstETag := *getProps(t, src).ETag, *getProps(t, dst).ETag

		for name, sc := range map[string]*blob.SourceModifiedAccessConditions{
			"if-match":            sourceIfMatch("0x8D000000000000A"),
			"if-none-match":       {SourceIfNoneMatch: to.Ptr(srcETag)},
			"if-modified-since":   {SourceIfModifiedSince: to.Ptr(time.Now().Add(time.Hour))},
			"if-unmodified-since": {SourceIfUnmodifiedSince: to.Ptr(time.Now().Add(-time.Hour))},
		} {
			_, err := dst.StartCopyFromURL(ctx, src.URL(), &blob.StartCopyFromURLOptions{SourceModifiedAccessConditions: sc})
			if statusOf(err) != 412 || codeOf(err) != "SourceConditionNotMet" {
				t.Fatalf("Copy Blob, source %s: %v", name, err)
			}
			_, err = dst.UploadBlobFromURL(ctx, src.URL(), &blockblob.UploadBlobFromURLOptions{SourceModifiedAccessConditions: sc})
			if statusOf(err) != 412 || codeOf(err) != "SourceConditionNotMet" {
				t.Fatalf("Put Blob From URL, source %s: %v", name, err)
			}
			_, err = dst.StageBlockFromURL(ctx, blockID(1), src.URL(), &blockblob.StageBlockFromURLOptions{SourceModifiedAccessConditions: sc})
			if statusOf(err) != 412 || codeOf(err) != "SourceConditionNotMet" {
				t.Fatalf("Put Block From URL, source %s: %v", name, err)
			}
		}
		if got := *getProps(t, dst).ETag; got != dstETag {
			t.Fatalf("copies refused on source conditions changed the destination ETag %v → %v", dstETag, got)
		}
		// A source condition that holds.
		if _, err := dst.StartCopyFromURL(ctx, src.URL(), &blob.StartCopyFromURLOptions{SourceModifiedAccessConditions: sourceIfMatch(srcETag)}); err != nil {
			t.Fatal(err)
		}
		dstETag = *getProps(t, dst).ETag

		wrong := &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: to.Ptr(azcore.ETag("0x8D000000000000B"))}}
		_, err := dst.StartCopyFromURL(ctx, src.URL(), &blob.StartCopyFromURLOptions{AccessConditions: wrong})
		wantErr(t, err, 412, "ConditionNotMet")
		_, err = dst.UploadBlobFromURL(ctx, src.URL(), &blockblob.UploadBlobFromURLOptions{AccessConditions: wrong})
		wantErr(t, err, 412, "TargetConditionNotMet")
		createOnly := &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: to.Ptr(azcore.ETagAny)}}
		_, err = dst.StartCopyFromURL(ctx, src.URL(), &blob.StartCopyFromURLOptions{AccessConditions: createOnly})
		wantErr(t, err, 409, "BlobAlreadyExists")
		_, err = dst.CopyFromURL(ctx, src.URL(), &blob.CopyFromURLOptions{BlobAccessConditions: createOnly})
		wantErr(t, err, 409, "BlobAlreadyExists")
		if got := *getProps(t, dst).ETag; got != dstETag {
			t.Fatalf("refused copies changed the destination ETag %v → %v", dstETag, got)
		}
		// If-None-Match: * onto a new name creates it.
		fresh := blockClient(b.client, "box", "fresh")
		if _, err := fresh.StartCopyFromURL(ctx, src.URL(), &blob.StartCopyFromURLOptions{AccessConditions: createOnly}); err != nil {
			t.Fatal(err)
		}
		// If-Match on the current ETag: the copy's compare-and-swap.
		ok := &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: to.Ptr(dstETag)}}
		if _, err := dst.UploadBlobFromURL(ctx, src.URL(), &blockblob.UploadBlobFromURLOptions{AccessConditions: ok}); err != nil {
			t.Fatal(err)
		}
		b.collectNoLeak(t)
	})
}

// TestCopyLeasedDestination: the destination's lease is checked as for a
// write and survives the copy; async Copy Blob needs the id
// of an INFINITE lease (412 InfiniteLeaseDurationRequired for a fixed
// one), the From URL forms take either.
func TestCopyLeasedDestination(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "box")
		for _, n := range []string{"src", "inf", "fixed"} {
			if _, err := b.client.UploadBuffer(ctx, "box", n, []byte("content of "+n), nil); err != nil {
				t.Fatal(err)
			}
		}
		src := blockClient(b.client, "box", "src")
		inf, fixed := blockClient(b.client, "box", "inf"), blockClient(b.client, "box", "fixed")
		const infID, fixedID = "11111111-1111-1111-1111-111111111111", "22222222-2222-2222-2222-222222222222"
		if _, err := blobLease(t, inf, infID).AcquireLease(ctx, -1, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := blobLease(t, fixed, fixedID).AcquireLease(ctx, 60, nil); err != nil {
			t.Fatal(err)
		}

		_, err := inf.StartCopyFromURL(ctx, src.URL(), nil)
		wantErr(t, err, 412, "LeaseIdMissing")
		_, err = inf.UploadBlobFromURL(ctx, src.URL(), nil)
		wantErr(t, err, 412, "LeaseIdMissing")
		_, err = inf.StartCopyFromURL(ctx, src.URL(), &blob.StartCopyFromURLOptions{AccessConditions: withLease(fixedID)})
		wantErr(t, err, 412, "LeaseIdMismatchWithBlobOperation")
		if _, err := inf.StartCopyFromURL(ctx, src.URL(), &blob.StartCopyFromURLOptions{AccessConditions: withLease(infID)}); err != nil {
			t.Fatal(err)
		}
		if got := download(t, b.client, "box", "inf"); string(got) != "content of src" {
			t.Fatalf("leased copy wrote %q", got)
		}
		if p := getProps(t, inf); *p.LeaseState != "leased" || *p.LeaseDuration != "infinite" {
			t.Fatalf("lease after copy: %v %v", *p.LeaseState, *p.LeaseDuration)
		}

		_, err = fixed.StartCopyFromURL(ctx, src.URL(), &blob.StartCopyFromURLOptions{AccessConditions: withLease(fixedID)})
		wantErr(t, err, 412, "InfiniteLeaseDurationRequired")
		if _, err := fixed.CopyFromURL(ctx, src.URL(), &blob.CopyFromURLOptions{BlobAccessConditions: withLease(fixedID)}); err != nil {
			t.Fatal(err)
		}
		if _, err := fixed.UploadBlobFromURL(ctx, src.URL(), &blockblob.UploadBlobFromURLOptions{AccessConditions: withLease(fixedID)}); err != nil {
			t.Fatal(err)
		}
		_, err = fixed.StageBlockFromURL(ctx, blockID(0), src.URL(), nil)
		wantErr(t, err, 412, "LeaseIdMissing")
		if _, err := fixed.StageBlockFromURL(ctx, blockID(0), src.URL(), &blockblob.StageBlockFromURLOptions{LeaseAccessConditions: &blob.LeaseAccessConditions{LeaseID: to.Ptr(fixedID)}}); err != nil {
			t.Fatal(err)
		}
		if p := getProps(t, fixed); *p.LeaseState != "leased" || *p.LeaseDuration != "fixed" {
			t.Fatalf("lease after copy: %v %v", *p.LeaseState, *p.LeaseDuration)
		}
		_, err = fixed.AbortCopyFromURL(ctx, "33333333-3333-3333-3333-333333333333", nil)
		wantErr(t, err, 412, "LeaseIdMissing")
	})
}

// secondClient talks to the second account of a bundle set up with it.
func (b *bundle) secondClient(t *testing.T) (*azblob.Client, *azblob.SharedKeyCredential) {
	t.Helper()
	cred, err := azblob.NewSharedKeyCredential(secondAccount, secondKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := azblob.NewClientWithSharedKeyCredential(b.servers[0].URL+"/"+secondAccount+"/", cred, &azblob.ClientOptions{
		ClientOptions: azcore.ClientOptions{Retry: azpolicy.RetryOptions{MaxRetries: -1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c, cred
}

// withSAS appends a read SAS for the blob, signed with cred, to its URL.
func withSAS(t *testing.T, blobURL string, cred *azblob.SharedKeyCredential, cont, name, perm string) string {
	t.Helper()
	now := time.Now().UTC()
	qp, err := sas.BlobSignatureValues{Protocol: sas.ProtocolHTTPSandHTTP, StartTime: now.Add(-time.Minute), ExpiryTime: now.Add(time.Hour),
		Permissions: perm, ContainerName: cont, BlobName: name}.SignWithSharedKey(cred)
	if err != nil {
		t.Fatal(err)
	}
	return blobURL + "?" + qp.Encode()
}

// TestCopyCrossAccount: a source in another account of the same gateway
// is read from the store directly, but only with the source's own
// authorization: a SAS on the source URL, or a public container. The
// request's Shared Key for the destination account is not enough, and an
// OAuth token in x-ms-copy-source-authorization cannot be verified.
func TestCopyCrossAccount(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind, setupOpts{accounts: map[string]string{secondAccount: secondKey}})
		ctx := context.Background()
		other, cred := b.secondClient(t)
		createContainers(t, other, "theirs")
		data := randBytes(300<<10, 31)
		if _, err := other.UploadBuffer(ctx, "theirs", "f.bin", data, &azblob.UploadBufferOptions{Metadata: map[string]*string{"acct": to.Ptr("second")}}); err != nil {
			t.Fatal(err)
		}
		createContainers(t, b.client, "mine")
		srcURL := blockClient(other, "theirs", "f.bin").URL()
		dst := blockClient(b.client, "mine", "f.bin")

		_, err := dst.StartCopyFromURL(ctx, srcURL, nil)
		wantErr(t, err, 403, "CannotVerifyCopySource")
		_, err = dst.UploadBlobFromURL(ctx, srcURL, nil)
		wantErr(t, err, 403, "CannotVerifyCopySource")
		_, err = dst.UploadBlobFromURL(ctx, srcURL, &blockblob.UploadBlobFromURLOptions{CopySourceAuthorization: to.Ptr("Bearer abc.def.ghi")})
		wantErr(t, err, 403, "CannotVerifyCopySource")
		// A SAS without read permission, or signed with the wrong key.
		_, err = dst.StartCopyFromURL(ctx, withSAS(t, srcURL, cred, "theirs", "f.bin", "w"), nil)
		wantErr(t, err, 403, "CannotVerifyCopySource")
		_, err = dst.StartCopyFromURL(ctx, withSAS(t, srcURL, b.cred, "theirs", "f.bin", "r"), nil)
		wantErr(t, err, 403, "CannotVerifyCopySource")

		sasURL := withSAS(t, srcURL, cred, "theirs", "f.bin", "r")
		resp, err := dst.StartCopyFromURL(ctx, sasURL, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *resp.CopyStatus != blob.CopyStatusTypeSuccess {
			t.Fatalf("copy status %v", *resp.CopyStatus)
		}
		if got := download(t, b.client, "mine", "f.bin"); !bytes.Equal(got, data) {
			t.Fatal("cross-account copy differs")
		}
		if m := lowerMeta(getProps(t, dst).Metadata); m["acct"] != "second" {
			t.Fatalf("metadata %v", m)
		}
		// Put Blob From URL and Put Block From URL with the same SAS.
		if _, err := blockClient(b.client, "mine", "pbfu").UploadBlobFromURL(ctx, sasURL, nil); err != nil {
			t.Fatal(err)
		}
		if got := download(t, b.client, "mine", "pbfu"); !bytes.Equal(got, data) {
			t.Fatal("Put Blob From URL differs")
		}
		// A source SAS naming a stored access policy of the source
		// container.
		now := time.Now().UTC().Truncate(time.Second)
		if _, err := other.ServiceClient().NewContainerClient("theirs").SetAccessPolicy(ctx, &container.SetAccessPolicyOptions{
			ContainerACL: []*container.SignedIdentifier{{ID: to.Ptr("copiers"), AccessPolicy: &container.AccessPolicy{
				Start: to.Ptr(now.Add(-time.Hour)), Expiry: to.Ptr(now.Add(time.Hour)), Permission: to.Ptr("r")}}},
		}); err != nil {
			t.Fatal(err)
		}
		qp, err := sas.BlobSignatureValues{Protocol: sas.ProtocolHTTPSandHTTP, Identifier: "copiers", ContainerName: "theirs", BlobName: "f.bin"}.SignWithSharedKey(cred)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := blockClient(b.client, "mine", "policy").StartCopyFromURL(ctx, srcURL+"?"+qp.Encode(), nil); err != nil {
			t.Fatal(err)
		}
		// A public source container needs no SAS.
		if _, err := other.ServiceClient().NewContainerClient("theirs").SetAccessPolicy(ctx, &container.SetAccessPolicyOptions{Access: to.Ptr(container.PublicAccessTypeBlob)}); err != nil {
			t.Fatal(err)
		}
		if _, err := blockClient(b.client, "mine", "public").CopyFromURL(ctx, srcURL, nil); err != nil {
			t.Fatal(err)
		}
		// A missing source behind a valid SAS.
		_, err = dst.CopyFromURL(ctx, withSAS(t, blockClient(other, "theirs", "nope").URL(), cred, "theirs", "nope", "r"), nil)
		wantErr(t, err, 404, "CannotVerifyCopySource")
	})
}

// serveBytes is a plain HTTP server (not a blob service) serving data with
// Range support.
func serveBytes(t *testing.T, data []byte) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		switch r.URL.Path {
		case "/chunked":
			// No Content-Length: the length is learnt by reading.
			w.Header().Set("Content-Type", "application/x-chunked")
			for off := 0; off < len(data); off += 10000 {
				w.Write(data[off:min(off+10000, len(data))])
				w.(http.Flusher).Flush()
			}
			return
		case "/norange":
			// Ignores Range: 200 with everything.
			w.Header().Set("Content-Length", strconv.Itoa(len(data)))
			w.Write(data)
			return
		}
		w.Header().Set("Content-Type", "application/vnd.test")
		w.Header().Set("Content-Language", "fr")
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestCopyFromExternal: the source is outside this gateway: another
// blobgw (a second bundle, with a SAS URL, as an Azure account would be),
// or a plain HTTP server. The gateway fetches and streams it.
func TestCopyFromExternal(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		remote := setup(t, kind)
		ctx := context.Background()
		createContainers(t, remote.client, "export")
		data := randBytes(1<<20+333, 41)
		rsrc := putBlocks(t, remote.client, "export", "table.csv", data, 300<<10)
		srcURL := rsrc.URL()
		sasURL := withSAS(t, srcURL, remote.cred, "export", "table.csv", "r")
		createContainers(t, b.client, "import")

		// Without a SAS the other gateway refuses the anonymous read.
		dst := blockClient(b.client, "import", "table.csv")
		_, err := dst.StartCopyFromURL(ctx, srcURL, nil)
		wantErr(t, err, 403, "CannotVerifyCopySource")

		resp, err := dst.StartCopyFromURL(ctx, sasURL, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *resp.CopyStatus != blob.CopyStatusTypeSuccess {
			t.Fatalf("copy status %v", *resp.CopyStatus)
		}
		if got := download(t, b.client, "import", "table.csv"); !bytes.Equal(got, data) {
			t.Fatal("external copy differs")
		}
		p := getProps(t, dst)
		if m := lowerMeta(p.Metadata); m["origin"] != "src" || m["rows"] != "42" {
			t.Fatalf("metadata from the remote source %v", m)
		}
		if *p.ContentType != "text/csv" || *p.ContentLanguage != "de" {
			t.Fatalf("properties from the remote source %v %v", *p.ContentType, *p.ContentLanguage)
		}

		// Put Blob From URL: the request's properties win, metadata is the
		// request's.
		up := blockClient(b.client, "import", "uploaded.csv")
		uresp, err := up.UploadBlobFromURL(ctx, sasURL, &blockblob.UploadBlobFromURLOptions{
			HTTPHeaders: &blob.HTTPHeaders{BlobContentType: to.Ptr("application/csv")},
			Metadata:    map[string]*string{"via": to.Ptr("url")},
		})
		if err != nil {
			t.Fatal(err)
		}
		if sum := md5.Sum(data); !bytes.Equal(uresp.ContentMD5, sum[:]) {
			t.Fatalf("Put Blob From URL Content-MD5 %x", uresp.ContentMD5)
		}
		p = getProps(t, up)
		if *p.ContentType != "application/csv" || *p.ContentLanguage != "de" || lowerMeta(p.Metadata)["via"] != "url" || lowerMeta(p.Metadata)["origin"] != "" {
			t.Fatalf("Put Blob From URL properties %v %v %v", *p.ContentType, *p.ContentLanguage, lowerMeta(p.Metadata))
		}
		if got := download(t, b.client, "import", "uploaded.csv"); !bytes.Equal(got, data) {
			t.Fatal("Put Blob From URL differs")
		}
		// x-ms-source-content-md5 is checked.
		_, err = up.UploadBlobFromURL(ctx, sasURL, &blockblob.UploadBlobFromURLOptions{SourceContentMD5: make([]byte, 16)})
		wantErr(t, err, 400, "Md5Mismatch")
		// Source conditions travel to the remote source.
		_, err = up.UploadBlobFromURL(ctx, sasURL, &blockblob.UploadBlobFromURLOptions{SourceModifiedAccessConditions: sourceIfMatch("0x8D000000000000C")})
		wantErr(t, err, 412, "SourceConditionNotMet")
		_, err = up.UploadBlobFromURL(ctx, sasURL, &blockblob.UploadBlobFromURLOptions{SourceModifiedAccessConditions: &blob.SourceModifiedAccessConditions{SourceIfNoneMatch: getProps(t, rsrc).ETag}})
		wantErr(t, err, 412, "SourceConditionNotMet")
		// A missing remote blob.
		_, err = up.UploadBlobFromURL(ctx, withSAS(t, remote.client.URL()+"export/nope", remote.cred, "export", "nope", "r"), nil)
		wantErr(t, err, 404, "CannotVerifyCopySource")

		// A plain HTTP server.
		plain := randBytes(123457, 42)
		web := serveBytes(t, plain)
		wc := blockClient(b.client, "import", "web.bin")
		if _, err := wc.StartCopyFromURL(ctx, web.URL+"/file.bin", nil); err != nil {
			t.Fatal(err)
		}
		if got := download(t, b.client, "import", "web.bin"); !bytes.Equal(got, plain) {
			t.Fatal("copy from a plain server differs")
		}
		if p := getProps(t, wc); *p.ContentType != "application/vnd.test" || *p.ContentLanguage != "fr" {
			t.Fatalf("properties from a plain server %v %v", *p.ContentType, *p.ContentLanguage)
		}
		if _, err := wc.UploadBlobFromURL(ctx, web.URL+"/chunked", nil); err != nil {
			t.Fatal(err)
		}
		if got := download(t, b.client, "import", "web.bin"); !bytes.Equal(got, plain) {
			t.Fatal("copy of unknown length differs")
		}
		_, err = wc.StartCopyFromURL(ctx, web.URL+"/missing", nil)
		wantErr(t, err, 404, "CannotVerifyCopySource")
		_, err = wc.StartCopyFromURL(ctx, "ftp://example.com/x", nil)
		wantErr(t, err, 400, "InvalidHeaderValue")
		// Cloud metadata endpoints are never fetched (the dial is refused
		// before any packet leaves).
		_, err = wc.StartCopyFromURL(ctx, "http://169.254.169.254/latest/meta-data/", nil)
		wantErr(t, err, 500, "CannotVerifyCopySource")
		b.collectNoLeak(t)
	})
}

// dyingServer answers 200 with a Content-Length of len(data), sends half
// the body and drops the connection.
func dyingServer(t *testing.T, data []byte) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n", len(data))
		buf.Write(data[:len(data)/2])
		buf.Flush()
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestCopySourceDiesMidStream: a remote source that breaks off half-way
// fails the copy (500 CannotVerifyCopySource, as Azure answers a source it
// cannot verify in time; retriable) and leaves no
// visible change — the destination keeps its bytes and ETag, no block is
// staged — and no object behind once collected.
func TestCopySourceDiesMidStream(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "box")
		if _, err := b.client.UploadBuffer(ctx, "box", "dst", []byte("intact"), nil); err != nil {
			t.Fatal(err)
		}
		dst := blockClient(b.client, "box", "dst")
		before := *getProps(t, dst).ETag
		srv := dyingServer(t, randBytes(3<<20, 61))

		_, err := dst.StartCopyFromURL(ctx, srv.URL+"/big", nil)
		wantErr(t, err, 500, "CannotVerifyCopySource")
		_, err = dst.CopyFromURL(ctx, srv.URL+"/big", nil)
		wantErr(t, err, 500, "CannotVerifyCopySource")
		_, err = dst.UploadBlobFromURL(ctx, srv.URL+"/big", nil)
		wantErr(t, err, 500, "CannotVerifyCopySource")
		_, err = dst.StageBlockFromURL(ctx, blockID(0), srv.URL+"/big", nil)
		wantErr(t, err, 500, "CannotVerifyCopySource")
		_, err = blockClient(b.client, "box", "new").StartCopyFromURL(ctx, srv.URL+"/big", nil)
		wantErr(t, err, 500, "CannotVerifyCopySource")

		if got := download(t, b.client, "box", "dst"); string(got) != "intact" {
			t.Fatalf("destination after failed copies: %q", got)
		}
		if got := *getProps(t, dst).ETag; got != before {
			t.Fatalf("ETag changed %v → %v", before, got)
		}
		bl, err := dst.GetBlockList(ctx, blockblob.BlockListTypeUncommitted, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(bl.UncommittedBlocks) != 0 {
			t.Fatalf("%d blocks staged by a failed Put Block From URL", len(bl.UncommittedBlocks))
		}
		_, err = blockClient(b.client, "box", "new").GetProperties(ctx, nil)
		wantErr(t, err, 404, "BlobNotFound")
		b.collectNoLeak(t)
		b.wantObjects(t, 1, "the destination's only")
	})
}

// TestCopyRawRequests: what the SDK will not send — a body on a From URL
// request, a malformed source range, Abort Copy without the action.
func TestCopyRawRequests(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "box")
	if _, err := b.client.UploadBuffer(ctx, "box", "src", []byte("0123456789"), nil); err != nil {
		t.Fatal(err)
	}
	srcURL := b.serviceURL(0) + "box/src"
	do := func(method, path string, body string, hdr map[string]string) *http.Response {
		t.Helper()
		resp, _ := b.do(t, method, path, body, hdr)
		return resp
	}
	id := base64.StdEncoding.EncodeToString([]byte("blk"))
	cases := []struct {
		name, method, path, body string
		hdr                      map[string]string
		status                   int
		code                     string
	}{
		{"body on Put Block From URL", "PUT", "box/d?comp=block&blockid=" + id, "xx", map[string]string{"x-ms-copy-source": srcURL}, 400, "InvalidHeaderValue"},
		{"bad source range", "PUT", "box/d?comp=block&blockid=" + id, "", map[string]string{"x-ms-copy-source": srcURL, "x-ms-source-range": "bytes=5-2"}, 400, "InvalidHeaderValue"},
		{"relative source", "PUT", "box/d", "", map[string]string{"x-ms-copy-source": "/c/src"}, 400, "InvalidHeaderValue"},
		{"page blob from URL", "PUT", "box/d", "", map[string]string{"x-ms-copy-source": srcURL, "x-ms-blob-type": "PageBlob"}, 400, "InvalidHeaderValue"},
		{"source names a container here", "PUT", "box/d", "", map[string]string{"x-ms-copy-source": b.serviceURL(0) + "box", "x-ms-blob-type": "BlockBlob"}, 404, "CannotVerifyCopySource"},
		{"source in an account not served here", "PUT", "box/d", "", map[string]string{"x-ms-copy-source": b.servers[0].URL + "/nobody/box/src"}, 403, "CannotVerifyCopySource"},
		{"abort without action", "PUT", "box/src?comp=copy&copyid=abc", "", nil, 400, "MissingRequiredHeader"},
		{"abort on a missing blob", "PUT", "box/nope?comp=copy&copyid=abc", "", map[string]string{"x-ms-copy-action": "abort"}, 404, "BlobNotFound"},
		{"put block from URL with a range", "PUT", "box/d?comp=block&blockid=" + id, "", map[string]string{"x-ms-copy-source": srcURL, "x-ms-source-range": "bytes=2-4"}, 201, ""},
	}
	for _, c := range cases {
		resp := do(c.method, c.path, c.body, c.hdr)
		if d := statusDiff(resp, c.status, c.code); d != "" {
			t.Errorf("%s: %s", c.name, d)
		}
	}
	if _, err := blockClient(b.client, "box", "d").CommitBlockList(ctx, []string{id}, nil); err != nil {
		t.Fatal(err)
	}
	if got := download(t, b.client, "box", "d"); string(got) != "234" {
		t.Fatalf("ranged block %q", got)
	}
}

// TestCopySourceLease: x-ms-source-lease-id (the Python SDK's
// source_lease) makes Copy Blob copy only when it names the source's
// active lease: 412 LeaseIdMismatchWithBlobOperation for another id, 412
// LeaseNotPresentWithBlobOperation when the source has no lease, 400
// InvalidHeaderValue for a malformed id. It was ignored: the copy went
// ahead whatever the source's lease.
func TestCopySourceLease(t *testing.T) {
	forKinds(t, []string{"sqlite", "postgres"}, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "slc")
		for _, n := range []string{"leased", "free"} {
			if _, err := b.client.UploadBuffer(ctx, "slc", n, []byte("source "+n), nil); err != nil {
				t.Fatal(err)
			}
		}
		lc, err := lease.NewBlobClient(blockClient(b.client, "slc", "leased"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lc.AcquireLease(ctx, -1, nil); err != nil {
			t.Fatal(err)
		}
		other := "0f0e0d0c-0b0a-0908-0706-050403020100"
		withSourceLease := func(id string) *blob.Client {
			c, err := blob.NewClientWithSharedKeyCredential(blockClient(b.client, "slc", "dst").URL(), b.cred,
				&blob.ClientOptions{ClientOptions: azcore.ClientOptions{Retry: azpolicy.RetryOptions{MaxRetries: -1},
					PerCallPolicies: []azpolicy.Policy{headerPolicy{"x-ms-source-lease-id": id}}}})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		for _, tc := range []struct {
			src, id string
			status  int
			code    string
		}{
			{"leased", other, 412, "LeaseIdMismatchWithBlobOperation"},
			{"free", other, 412, "LeaseNotPresentWithBlobOperation"},
			{"leased", "not-a-lease-id", 400, "InvalidHeaderValue"},
		} {
			_, err := withSourceLease(tc.id).StartCopyFromURL(ctx, blockClient(b.client, "slc", tc.src).URL(), nil)
			wantErr(t, err, tc.status, tc.code)
			if _, err := blockClient(b.client, "slc", "dst").GetProperties(ctx, nil); statusOf(err) != 404 {
				t.Fatalf("source %s, x-ms-source-lease-id %s: the refused copy wrote the destination (status %d)", tc.src, tc.id, statusOf(err))
			}
		}
		if _, err := withSourceLease(*lc.LeaseID()).StartCopyFromURL(ctx, blockClient(b.client, "slc", "leased").URL(), nil); err != nil {
			t.Fatalf("Copy Blob with the source's own lease id: %v", err)
		}
		if got := download(t, b.client, "slc", "dst"); string(got) != "source leased" {
			t.Fatalf("the copy reads %q", got)
		}
		// A remote source is read with the id as its x-ms-lease-id.
		var sent string
		web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sent = r.Header.Get("x-ms-lease-id")
			w.Write([]byte("remote"))
		}))
		defer web.Close()
		if _, err := withSourceLease(other).StartCopyFromURL(ctx, web.URL+"/f", nil); err != nil {
			t.Fatal(err)
		}
		if sent != other {
			t.Fatalf("the remote source was read with x-ms-lease-id %q, want %q", sent, other)
		}
		b.collectNoLeak(t)
	})
}
