package gateway_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
)

// TestPutBlobSmallRefusalOrder: a small Put Blob is read before its
// conditions are decided (the pre-check runs only for a large body or
// Expect: 100-continue), yet a request that fails both the conditions and
// the body's digest is answered as when the pre-check ran first: 412, not
// 400 Md5Mismatch. The blob is left as it was.
func TestPutBlobSmallRefusalOrder(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "order")
		bb := b.client.ServiceClient().NewContainerClient("order").NewBlockBlobClient("b")
		up, err := bb.Upload(ctx, streaming.NopCloser(bytes.NewReader([]byte("before"))), nil)
		if err != nil {
			t.Fatal(err)
		}
		body := strings.Repeat("x", 4<<10)
		wrong := md5.Sum([]byte("not the body"))
		for _, h := range []string{"Content-MD5", "x-ms-blob-content-md5"} {
			resp, _ := b.do(t, http.MethodPut, "order/b", body, map[string]string{
				"x-ms-blob-type": "BlockBlob", "If-Match": `"0x1"`, h: base64.StdEncoding.EncodeToString(wrong[:])})
			wantStatus(t, resp, http.StatusPreconditionFailed, "ConditionNotMet", h+" and If-Match both wrong")
			// Either refusal alone is still its own.
			resp, _ = b.do(t, http.MethodPut, "order/b", body, map[string]string{
				"x-ms-blob-type": "BlockBlob", h: base64.StdEncoding.EncodeToString(wrong[:])})
			wantStatus(t, resp, http.StatusBadRequest, "Md5Mismatch", h+" wrong")
		}
		resp, _ := b.do(t, http.MethodPut, "order/b", body, map[string]string{"x-ms-blob-type": "BlockBlob", "If-Match": `"0x1"`})
		wantStatus(t, resp, http.StatusPreconditionFailed, "ConditionNotMet", "If-Match wrong")
		props, err := bb.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *props.ETag != *up.ETag || *props.ContentLength != int64(len("before")) {
			t.Fatalf("the refused puts changed the blob: ETag %s (was %s), %d bytes", *props.ETag, *up.ETag, *props.ContentLength)
		}
	})
}

// readFlag is a request body that records whether it was read.
type readFlag struct {
	r    io.Reader
	read atomic.Bool
}

func (f *readFlag) Read(p []byte) (int, error) {
	f.read.Store(true)
	return f.r.Read(p)
}

// TestPutBlobExpectContinue: a client that sends Expect: 100-continue
// waits for the gateway's word before it sends the body; a Put Blob whose
// conditions fail is refused before that (the pre-check runs first for
// it, however small the body), so the body is never sent.
func TestPutBlobExpectContinue(t *testing.T) {
	forKinds(t, []string{"sqlite+disk", "postgres+disk"}, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "expect")
		bb := b.client.ServiceClient().NewContainerClient("expect").NewBlockBlobClient("b")
		if _, err := bb.Upload(ctx, streaming.NopCloser(bytes.NewReader([]byte("before"))), nil); err != nil {
			t.Fatal(err)
		}
		// A long wait for 100 Continue: the client sends the body
		// early only if the gateway never answers, which is the
		// failure this test looks for, not a matter of speed.
		client := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: 5 * time.Minute}}
		put := func(hdr map[string]string) (*http.Response, *readFlag) {
			body := &readFlag{r: strings.NewReader(strings.Repeat("x", 4<<10))}
			req, err := http.NewRequest(http.MethodPut, b.serviceURL(0)+"expect/b", body)
			if err != nil {
				t.Fatal(err)
			}
			req.ContentLength = 4 << 10
			req.Header.Set("Expect", "100-continue")
			req.Header.Set("x-ms-blob-type", "BlockBlob")
			return b.sendVia(t, client, req, hdr), body
		}
		resp, body := put(map[string]string{"If-Match": `"0x1"`})
		wantStatus(t, resp, http.StatusPreconditionFailed, "ConditionNotMet", "Expect: 100-continue, If-Match wrong")
		if body.read.Load() {
			t.Fatal("the body of a refused Put Blob with Expect: 100-continue was sent")
		}
		resp, body = put(nil)
		wantStatus(t, resp, http.StatusCreated, "", "Expect: 100-continue")
		if !body.read.Load() {
			t.Fatal("the body of an accepted Put Blob was never read")
		}
	})
}

// sendVia sets hdr on req, signs it and sends it with client (one that
// waits for 100 Continue, say); the response's body is read and closed.
func (b *bundle) sendVia(t *testing.T, client *http.Client, req *http.Request, hdr map[string]string) *http.Response {
	t.Helper()
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	b.sign(t, req)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}
