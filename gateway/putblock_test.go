package gateway_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"

	"github.com/blobgw/blobgw/svcerr"
)

// TestPutBlockRefusals: a Put Block runs its pre-check first only for a
// body over 1 MiB or with Expect: 100-continue; a small body is read and
// staged first and the commit refuses it. Every refusal has the same code
// either way: a missing container, a blob of another type, the lease
// rules, block ids of another length than the committed blocks', and a
// wrong lease with a wrong Content-MD5 too (the lease's refusal first, as
// the pre-check answers before the body is read). A Put Block with
// Expect: 100-continue that the pre-check refuses is answered before its
// body is sent. Nothing
// is staged by a refusal, and nothing is left behind.
func TestPutBlockRefusals(t *testing.T) {
	forKinds(t, []string{"sqlite+disk", "postgres+disk"}, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "putblock")
		const leaseID = "0f0e0d0c-0b0a-4908-8706-050403020100"
		const otherLease = "1f0e0d0c-0b0a-4908-8706-050403020100"
		leased := blockClient(b.client, "putblock", "leased")
		if _, err := leased.Upload(ctx, streaming.NopCloser(strings.NewReader("leased")), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := blobLease(t, leased, leaseID).AcquireLease(ctx, -1, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := appendClient(b.client, "putblock", "append").Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		committed := blockClient(b.client, "putblock", "committed")
		shortID := base64.StdEncoding.EncodeToString([]byte("abc"))
		if _, err := committed.StageBlock(ctx, shortID, streaming.NopCloser(strings.NewReader("abc")), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := committed.CommitBlockList(ctx, []string{shortID}, nil); err != nil {
			t.Fatal(err)
		}
		wrongMD5 := md5.Sum([]byte("not the body"))
		id := base64.StdEncoding.EncodeToString([]byte("block-0001"))
		cases := []struct {
			name, path string
			hdr        map[string]string
			status     int
			code       svcerr.Code
		}{
			{"container missing", "nocontainer/b", nil, http.StatusNotFound, svcerr.ContainerNotFound},
			{"container missing, lease id", "nocontainer/b", map[string]string{"x-ms-lease-id": leaseID}, http.StatusNotFound, svcerr.ContainerNotFound},
			{"append blob", "putblock/append", nil, http.StatusConflict, svcerr.InvalidBlobType},
			{"leased, no lease id", "putblock/leased", nil, http.StatusPreconditionFailed, svcerr.LeaseIdMissing},
			{"leased, another lease id", "putblock/leased", map[string]string{"x-ms-lease-id": otherLease}, http.StatusPreconditionFailed, svcerr.LeaseIdMismatchWithBlobOperation},
			{"leased, another lease id and a wrong Content-MD5", "putblock/leased",
				map[string]string{"x-ms-lease-id": otherLease, "Content-MD5": base64.StdEncoding.EncodeToString(wrongMD5[:])},
				http.StatusPreconditionFailed, svcerr.LeaseIdMismatchWithBlobOperation},
			{"lease id of an absent blob", "putblock/absent", map[string]string{"x-ms-lease-id": leaseID}, http.StatusPreconditionFailed, svcerr.LeaseNotPresentWithBlobOperation},
			{"committed ids of another length", "putblock/committed", nil, http.StatusBadRequest, svcerr.InvalidBlobOrBlock},
			{"a wrong Content-MD5 alone", "putblock/fresh", map[string]string{"Content-MD5": base64.StdEncoding.EncodeToString(wrongMD5[:])},
				http.StatusBadRequest, svcerr.Md5Mismatch},
		}
		forms := []struct {
			name   string
			size   int
			expect bool
		}{{"small", 4 << 10, false}, {"small with Expect: 100-continue", 4 << 10, true}, {"over 1 MiB", 1<<20 + 1, false}}
		// A long wait for 100 Continue: the client sends the body early
		// only if the gateway never answers (see TestPutBlobExpectContinue).
		client := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: 5 * time.Minute}}
		for _, f := range forms {
			for _, c := range cases {
				body := &readFlag{r: bytes.NewReader(bytes.Repeat([]byte("p"), f.size))}
				req, err := http.NewRequest(http.MethodPut, b.serviceURL(0)+c.path+"?comp=block&blockid="+id, body)
				if err != nil {
					t.Fatal(err)
				}
				req.ContentLength = int64(f.size)
				if f.expect {
					req.Header.Set("Expect", "100-continue")
				}
				resp := b.sendVia(t, client, req, c.hdr)
				wantStatus(t, resp, c.status, string(c.code), f.name+": "+c.name)
				// The pre-check decides on the row's type and lease; the
				// staged and committed blocks' id length, and the body's
				// digest, are the commit's.
				if f.expect && c.code != svcerr.Md5Mismatch && c.code != svcerr.InvalidBlobOrBlock && body.read.Load() {
					t.Errorf("%s: %s: the body of a refused Put Block was sent", f.name, c.name)
				}
			}
		}
		// No refusal staged a block.
		for _, name := range []string{"leased", "committed", "absent", "fresh"} {
			bl, err := blockClient(b.client, "putblock", name).GetBlockList(ctx, blockblob.BlockListTypeUncommitted, nil)
			if err == nil && len(bl.UncommittedBlocks) != 0 {
				t.Errorf("%s: %d blocks staged by refused Put Blocks", name, len(bl.UncommittedBlocks))
			}
		}
		// The same requests that the rules let through are staged.
		if _, err := blockClient(b.client, "putblock", "leased").StageBlock(ctx, id, streaming.NopCloser(strings.NewReader("x")),
			&blockblob.StageBlockOptions{LeaseAccessConditions: &blob.LeaseAccessConditions{LeaseID: to.Ptr(leaseID)}}); err != nil {
			t.Fatalf("Put Block with the lease: %v", err)
		}
		if _, err := committed.StageBlock(ctx, base64.StdEncoding.EncodeToString([]byte("xyz")), streaming.NopCloser(strings.NewReader("1")), nil); err != nil {
			t.Fatalf("Put Block with the committed ids' length: %v", err)
		}
		b.collectNoLeak(t)
	})
}
