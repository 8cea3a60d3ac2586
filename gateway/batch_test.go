package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/netip"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
	"github.com/blobgw/blobgw/gateway"
	"github.com/blobgw/blobgw/internal/config"
)

// putBlobs uploads a small block blob under each name (container/blob).
func (b *bundle) putBlobs(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		c, bl, _ := strings.Cut(n, "/")
		if _, err := b.client.UploadBuffer(context.Background(), c, bl, []byte("batch "+n), nil); err != nil {
			t.Fatalf("upload %s: %v", n, err)
		}
	}
}

// exists reports whether container/blob exists.
func (b *bundle) exists(t *testing.T, name string) bool {
	t.Helper()
	c, bl, _ := strings.Cut(name, "/")
	_, err := b.client.ServiceClient().NewContainerClient(c).NewBlobClient(bl).GetProperties(context.Background(), nil)
	switch statusOf(err) {
	case 0:
		return true
	case 404:
		return false
	}
	t.Fatalf("get properties %s: %v", name, err)
	return false
}

// tierOf returns container/blob's access tier.
func (b *bundle) tierOf(t *testing.T, name string) string {
	t.Helper()
	c, bl, _ := strings.Cut(name, "/")
	p, err := b.client.ServiceClient().NewContainerClient(c).NewBlobClient(bl).GetProperties(context.Background(), nil)
	if err != nil {
		t.Fatalf("get properties %s: %v", name, err)
	}
	if p.AccessTier == nil {
		return ""
	}
	return *p.AccessTier
}

// subResult is one sub-response as the SDK reports it: "" for success,
// else the error code.
func subResults(t *testing.T, items []*service.BatchResponseItem) []string {
	t.Helper()
	var out []string
	for i, it := range items {
		if it.ContentID == nil || *it.ContentID != i {
			t.Fatalf("response %d: Content-ID %v, want %d (in order)", i, it.ContentID, i)
		}
		if it.RequestID == nil || it.Version == nil {
			t.Fatalf("response %d: x-ms-request-id %v, x-ms-version %v: want both", i, it.RequestID, it.Version)
		}
		out = append(out, codeOf(it.Error))
		if it.Error != nil && codeOf(it.Error) == "" {
			t.Fatalf("response %d: error without a code: %v", i, it.Error)
		}
	}
	return out
}

func wantResults(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("%s: sub-responses %q, want %q", what, got, want)
	}
}

// TestBlobBatchSDK drives Blob Batch with the SDK's batch builders at both
// scopes: deletes and set-tier batches where some sub-requests fail (a
// missing blob, a leased one) and the others run, answered in order with
// each sub-request's own status. Before, every batch was 501.
func TestBlobBatchSDK(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "bc1", "bc2")
		b.putBlobs(t, "bc1/a", "bc1/dir/b c", "bc2/x", "bc2/leased", "bc1/t1", "bc1/t2", "bc1/tleased")
		for _, n := range []string{"bc2/leased", "bc1/tleased"} {
			c, bl, _ := strings.Cut(n, "/")
			lc, err := lease.NewBlobClient(b.client.ServiceClient().NewContainerClient(c).NewBlobClient(bl), nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := lc.AcquireLease(ctx, -1, nil); err != nil {
				t.Fatal(err)
			}
		}

		t.Run("service delete", func(t *testing.T) {
			svc := b.client.ServiceClient()
			bb, err := svc.NewBatchBuilder()
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []string{"bc1/a", "bc1/nope", "bc2/leased", "bc1/dir/b c", "bc2/x"} {
				c, bl, _ := strings.Cut(n, "/")
				if err := bb.Delete(c, bl, nil); err != nil {
					t.Fatal(err)
				}
			}
			resp, err := svc.SubmitBatch(ctx, bb, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.RequestID == nil || resp.ContentType == nil || !strings.HasPrefix(*resp.ContentType, "multipart/mixed; boundary=batchresponse_") {
				t.Fatalf("batch response: request id %v, content type %v", resp.RequestID, resp.ContentType)
			}
			wantResults(t, "service delete", subResults(t, resp.Responses), "", "BlobNotFound", "LeaseIdMissing", "", "")
			for n, want := range map[string]bool{"bc1/a": false, "bc1/dir/b c": false, "bc2/x": false, "bc2/leased": true} {
				if got := b.exists(t, n); got != want {
					t.Errorf("%s exists %v after the batch, want %v", n, got, want)
				}
			}
		})

		t.Run("container set tier", func(t *testing.T) {
			cc := b.client.ServiceClient().NewContainerClient("bc1")
			bb, err := cc.NewBatchBuilder()
			if err != nil {
				t.Fatal(err)
			}
			// Set Blob Tier takes a leased blob without the lease id, but
			// not with another one.
			wrongLease := &container.BatchSetTierOptions{SetTierOptions: blob.SetTierOptions{
				AccessConditions: &blob.AccessConditions{LeaseAccessConditions: &blob.LeaseAccessConditions{LeaseID: to.Ptr("a0b1c2d3-0000-4000-8000-000000000000")}}}}
			for _, n := range []string{"t1", "missing", "tleased", "t2"} {
				var o *container.BatchSetTierOptions
				if n == "tleased" {
					o = wrongLease
				}
				if err := bb.SetTier(n, blob.AccessTierCool, o); err != nil {
					t.Fatal(err)
				}
			}
			resp, err := cc.SubmitBatch(ctx, bb, nil)
			if err != nil {
				t.Fatal(err)
			}
			var items []*service.BatchResponseItem
			items = append(items, resp.Responses...)
			wantResults(t, "container set tier", subResults(t, items), "", "BlobNotFound", "LeaseIdMismatchWithBlobOperation", "")
			for n, want := range map[string]string{"bc1/t1": "Cool", "bc1/t2": "Cool", "bc1/tleased": "Hot"} {
				if got := b.tierOf(t, n); got != want {
					t.Errorf("%s tier %q after the batch, want %q", n, got, want)
				}
			}
		})

		t.Run("container delete", func(t *testing.T) {
			b.putBlobs(t, "bc2/d1", "bc2/d2")
			cc := b.client.ServiceClient().NewContainerClient("bc2")
			bb, err := cc.NewBatchBuilder()
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []string{"d1", "d2"} {
				if err := bb.Delete(n, nil); err != nil {
					t.Fatal(err)
				}
			}
			resp, err := cc.SubmitBatch(ctx, bb, nil)
			if err != nil {
				t.Fatal(err)
			}
			wantResults(t, "container delete", subResults(t, resp.Responses), "", "")
			if b.exists(t, "bc2/d1") || b.exists(t, "bc2/d2") {
				t.Fatal("a deleted blob is still there")
			}
		})
		b.checkNoLeak(t)
	})
}

// TestBlobBatchSAS: a batch authorized by a SAS. The SDK puts the token on
// every sub-request; an account SAS reaches the service scope, a container
// SAS only its container's scope (at the service scope it is refused as a
// whole, as on Azure). A sub-request without a credential of its own takes
// the batch's SAS, whose permissions it then needs; a sub-request carrying
// a weaker token of its own fails alone (403) while the others run.
func TestBlobBatchSAS(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "sasc")
	b.putBlobs(t, "sasc/a1", "sasc/a2", "sasc/t1", "sasc/t2", "sasc/h1", "sasc/h2", "sasc/h3", "sasc/s1")
	cred, err := azblob.NewSharedKeyCredential(config.DevAccountName, config.DevAccountKey)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	acctSAS, err := sas.AccountSignatureValues{Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: now.Add(time.Hour),
		Permissions:   to.Ptr(sas.AccountPermissions{Delete: true, Read: true}).String(),
		ResourceTypes: to.Ptr(sas.AccountResourceTypes{Service: true, Container: true, Object: true}).String()}.SignWithSharedKey(cred)
	if err != nil {
		t.Fatal(err)
	}
	containerSAS := func(p sas.ContainerPermissions) string {
		qp, err := sas.BlobSignatureValues{Protocol: sas.ProtocolHTTPSandHTTP, StartTime: now.Add(-time.Minute), ExpiryTime: now.Add(time.Hour),
			ContainerName: "sasc", Permissions: p.String()}.SignWithSharedKey(cred)
		if err != nil {
			t.Fatal(err)
		}
		return qp.Encode()
	}

	t.Run("account SAS, service scope", func(t *testing.T) {
		svc, err := service.NewClientWithNoCredential(b.serviceURL(0)+"?"+acctSAS.Encode(), nil)
		if err != nil {
			t.Fatal(err)
		}
		bb, err := svc.NewBatchBuilder()
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"a1", "a2"} {
			if err := bb.Delete("sasc", n, nil); err != nil {
				t.Fatal(err)
			}
		}
		resp, err := svc.SubmitBatch(ctx, bb, nil)
		if err != nil {
			t.Fatal(err)
		}
		wantResults(t, "account SAS deletes", subResults(t, resp.Responses), "", "")
		if b.exists(t, "sasc/a1") || b.exists(t, "sasc/a2") {
			t.Fatal("a deleted blob is still there")
		}
		// The same token lacks write: Set Blob Tier fails per sub-request.
		bb, err = svc.NewBatchBuilder()
		if err != nil {
			t.Fatal(err)
		}
		if err := bb.SetTier("sasc", "t1", blob.AccessTierCool, nil); err != nil {
			t.Fatal(err)
		}
		resp, err = svc.SubmitBatch(ctx, bb, nil)
		if err != nil {
			t.Fatal(err)
		}
		wantResults(t, "account SAS without w", subResults(t, resp.Responses), "AuthorizationPermissionMismatch")
		if got := b.tierOf(t, "sasc/t1"); got != "Hot" {
			t.Fatalf("tier %q after a refused sub-request", got)
		}
	})

	t.Run("container SAS, container scope", func(t *testing.T) {
		cc, err := container.NewClientWithNoCredential(b.serviceURL(0)+"sasc?"+containerSAS(sas.ContainerPermissions{Write: true, Read: true}), nil)
		if err != nil {
			t.Fatal(err)
		}
		bb, err := cc.NewBatchBuilder()
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"t1", "t2"} {
			if err := bb.SetTier(n, blob.AccessTierArchive, nil); err != nil {
				t.Fatal(err)
			}
		}
		resp, err := cc.SubmitBatch(ctx, bb, nil)
		if err != nil {
			t.Fatal(err)
		}
		wantResults(t, "container SAS set tier", subResults(t, resp.Responses), "", "")
		if b.tierOf(t, "sasc/t1") != "Archive" || b.tierOf(t, "sasc/t2") != "Archive" {
			t.Fatal("set tier did not apply")
		}
	})

	t.Run("container SAS, service scope", func(t *testing.T) {
		svc, err := service.NewClientWithNoCredential(b.serviceURL(0)+"?"+containerSAS(sas.ContainerPermissions{Delete: true}), nil)
		if err != nil {
			t.Fatal(err)
		}
		bb, err := svc.NewBatchBuilder()
		if err != nil {
			t.Fatal(err)
		}
		if err := bb.Delete("sasc", "s1", nil); err != nil {
			t.Fatal(err)
		}
		_, err = svc.SubmitBatch(ctx, bb, nil)
		wantErr(t, err, 403, "AuthenticationFailed")
		if !b.exists(t, "sasc/s1") {
			t.Fatal("a refused batch deleted a blob")
		}
	})

	t.Run("inherited and own tokens", func(t *testing.T) {
		batchToken := containerSAS(sas.ContainerPermissions{Delete: true})
		weak := containerSAS(sas.ContainerPermissions{Read: true})
		parts := []string{
			b.rawSub(t, "DELETE", "sasc/h1", nil, false),
			b.rawSub(t, "DELETE", "sasc/h2?"+weak, nil, false),
			b.rawSub(t, "DELETE", "sasc/h3", nil, false),
		}
		resp, subs := b.postBatch(t, "sasc?restype=container&comp=batch&"+batchToken, parts, false)
		wantStatus(t, resp, 202, "", "batch")
		wantSubs(t, subs, "202 ", "403 AuthorizationPermissionMismatch", "202 ")
		for n, want := range map[string]bool{"sasc/h1": false, "sasc/h2": true, "sasc/h3": false} {
			if got := b.exists(t, n); got != want {
				t.Errorf("%s exists %v, want %v", n, got, want)
			}
		}
	})
}

// rawSub builds one sub-request's text: the request line with the
// account's path and the headers, Shared Key signed when sign is set.
func (b *bundle) rawSub(t *testing.T, method, path string, hdr map[string]string, sign bool) string {
	t.Helper()
	req, err := http.NewRequest(method, b.serviceURL(0)+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if sign {
		b.sign(t, req)
	} else {
		req.Header.Set("x-ms-date", time.Now().UTC().Format(http.TimeFormat))
	}
	var s strings.Builder
	fmt.Fprintf(&s, "%s %s HTTP/1.1\r\n", method, req.URL.RequestURI())
	names := make([]string, 0, len(req.Header))
	for k := range req.Header {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(&s, "%s: %s\r\n", k, req.Header.Get(k))
	}
	s.WriteString("Content-Length: 0\r\n\r\n")
	return s.String()
}

// batchBody frames sub-requests as the SDK does.
func batchBody(boundary string, parts []string) string {
	var s strings.Builder
	for i, p := range parts {
		fmt.Fprintf(&s, "--%s\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\nContent-ID: %d\r\n\r\n%s\r\n", boundary, i, p)
	}
	fmt.Fprintf(&s, "--%s--\r\n", boundary)
	return s.String()
}

// subAnswer is one part of a batch response: its Content-ID ("" when it
// has none), status and error code.
type subAnswer struct {
	id     string
	status int
	code   string
	body   string
}

func (a subAnswer) String() string { return fmt.Sprintf("%d %s", a.status, a.code) }

// postBatch sends a batch (Shared Key signed when sign is set; else path
// carries a SAS) and parses its multipart answer.
func (b *bundle) postBatch(t *testing.T, path string, parts []string, sign bool) (*http.Response, []subAnswer) {
	t.Helper()
	return b.postBatchBody(t, path, "multipart/mixed; boundary=batch_b1", batchBody("batch_b1", parts), sign)
}

func (b *bundle) postBatchBody(t *testing.T, path, ct, body string, sign bool) (*http.Response, []subAnswer) {
	t.Helper()
	req, err := http.NewRequest("POST", b.serviceURL(0)+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ct)
	req.Header.Set("x-ms-version", "2025-11-05")
	if sign {
		b.sign(t, req)
	}
	resp, body := send(t, req)
	raw := []byte(body)
	if resp.StatusCode != 202 {
		return resp, nil
	}
	_, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || params["boundary"] == "" {
		t.Fatalf("batch response Content-Type %q", resp.Header.Get("Content-Type"))
	}
	mr := multipart.NewReader(bytes.NewReader(raw), params["boundary"])
	var out []subAnswer
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("batch response: %v\n%s", err, raw)
		}
		if ct := p.Header.Get("Content-Type"); ct != "application/http" {
			t.Fatalf("part Content-Type %q", ct)
		}
		pr, err := http.ReadResponse(bufio.NewReader(p), nil)
		if err != nil {
			t.Fatalf("part: %v\n%s", err, raw)
		}
		pb, _ := io.ReadAll(pr.Body)
		if pr.Header.Get("x-ms-request-id") == "" || pr.Header.Get("x-ms-version") == "" {
			t.Fatalf("part without x-ms-request-id or x-ms-version: %v", pr.Header)
		}
		if code := pr.Header.Get("x-ms-error-code"); code != "" && !strings.Contains(string(pb), "<Code>"+code+"</Code>") {
			t.Fatalf("part %s: error body %q", code, pb)
		}
		if !bytes.Contains(raw, []byte("\r\nx-ms-request-id: "+pr.Header.Get("x-ms-request-id")+"\r\n")) ||
			pr.Header.Get("x-ms-error-code") != "" && !bytes.Contains(raw, []byte("\r\nx-ms-error-code: "+pr.Header.Get("x-ms-error-code")+"\r\n")) {
			t.Fatalf("x-ms-* header names not in lower case, as Azure writes them (the JavaScript SDK compares them so)\n%s", raw)
		}
		if id := p.Header.Get("Content-ID"); id != "" && !bytes.Contains(raw, []byte("\r\nContent-ID: "+id+"\r\n")) {
			t.Fatalf("part %s: Content-ID not spelled as Azure does\n%s", id, raw)
		}
		out = append(out, subAnswer{id: p.Header.Get("Content-ID"), status: pr.StatusCode, code: pr.Header.Get("x-ms-error-code"), body: string(pb)})
	}
	return resp, out
}

// wantSubs checks the parts' Content-IDs are 0, 1, ... in order and their
// "status code" strings.
func wantSubs(t *testing.T, subs []subAnswer, want ...string) {
	t.Helper()
	var got []string
	for i, s := range subs {
		if s.id != fmt.Sprint(i) {
			t.Fatalf("part %d has Content-ID %q", i, s.id)
		}
		got = append(got, s.String())
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("sub-responses %q, want %q", got, want)
	}
}

// wantRefusedBatch checks a batch refused as a whole: 202 with a single
// part without Content-ID carrying the 400 and its code, as Azure answers
// a batch whose body it refuses (the SDKs report that part as the
// batch's error).
func wantRefusedBatch(t *testing.T, what string, resp *http.Response, subs []subAnswer, code string) {
	t.Helper()
	if resp.StatusCode != 202 || len(subs) != 1 || subs[0].id != "" || subs[0].status != 400 || subs[0].code != code {
		t.Fatalf("%s: %d %v, want 202 with one part 400 %s without Content-ID", what, resp.StatusCode, subs, code)
	}
}

// TestBlobBatchMalformed: a batch whose Content-Type or body the gateway
// refuses, one with more than 256 parts, one mixing Delete Blob and Set
// Blob Tier, one holding another operation or another container's blob,
// or one cut short: each gets Azure's 400 code and none of its
// sub-requests runs, not even those before the fault.
func TestBlobBatchMalformed(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "mal", "other")
	b.putBlobs(t, "mal/keep1", "mal/keep2", "other/o")
	del := func(name string) string { return b.rawSub(t, "DELETE", name, nil, true) }
	tier := func(name string) string {
		return b.rawSub(t, "PUT", name+"?comp=tier", map[string]string{"x-ms-access-tier": "Cool"}, true)
	}
	before := b.accountState(t)
	stillThere := func(what string) {
		t.Helper()
		if tier := b.tierOf(t, "mal/keep2"); tier != "Hot" {
			t.Fatalf("%s: a refused batch set a tier (%s)", what, tier)
		}
		if after := b.accountState(t); after != before {
			t.Fatalf("%s: a refused batch changed the account:\nbefore:\n%s\nafter:\n%s", what, before, after)
		}
	}

	for _, tc := range []struct {
		name, ct string
		code     string
	}{
		{"no Content-Type", "", "MissingRequiredHeader"},
		{"not multipart", "application/xml", "InvalidHeaderValue"},
		{"no boundary", "multipart/mixed", "InvalidHeaderValue"},
	} {
		resp, _ := b.postBatchBody(t, "?comp=batch", tc.ct, batchBody("batch_b1", []string{del("mal/keep1")}), true)
		wantStatus(t, resp, 400, tc.code, tc.name)
		stillThere(tc.name)
	}

	valid := batchBody("batch_b1", []string{del("mal/keep1")})
	for _, tc := range []struct {
		name, path, body, code string
	}{
		{"other boundary", "?comp=batch", strings.ReplaceAll(valid, "batch_b1", "batch_zz"), "InvalidInput"},
		{"empty", "?comp=batch", "--batch_b1--\r\n", "InvalidInput"},
		{"garbage", "?comp=batch", "--batch_b1\r\nContent-ID: 0\r\n\r\nnot a request\r\n--batch_b1--\r\n", "InvalidInput"},
		{"cut short", "?comp=batch", batchBody("batch_b1", []string{del("mal/keep1"), del("mal/keep2")})[:len(valid)+40], "InvalidInput"},
		{"no Content-ID", "?comp=batch", strings.Replace(valid, "Content-ID: 0\r\n", "", 1), "InvalidInput"},
		{"mixed", "?comp=batch", batchBody("batch_b1", []string{del("mal/keep1"), tier("mal/keep2")}), "AllBatchSubRequestsShouldBeSameApi"},
		{"get blob", "?comp=batch", batchBody("batch_b1", []string{del("mal/keep1"), b.rawSub(t, "GET", "mal/keep2", nil, true)}), "InvalidInput"},
		{"container delete", "?comp=batch", batchBody("batch_b1", []string{del("mal/keep1"), b.rawSub(t, "DELETE", "other?restype=container", nil, true)}), "InvalidInput"},
		{"another container", "mal?restype=container&comp=batch", batchBody("batch_b1", []string{del("mal/keep1"), del("other/o")}), "InvalidInput"},
		{"with a body", "?comp=batch", batchBody("batch_b1", []string{strings.Replace(del("mal/keep1"), "Content-Length: 0\r\n\r\n", "Content-Length: 3\r\n\r\nabc", 1)}), "InvalidInput"},
	} {
		resp, subs := b.postBatchBody(t, tc.path, "multipart/mixed; boundary=batch_b1", tc.body, true)
		wantRefusedBatch(t, tc.name, resp, subs, tc.code)
		stillThere(tc.name)
	}

	// More than 256 sub-requests, through the SDK: the whole batch is
	// refused, and the two real blobs among them stay.
	svc := b.client.ServiceClient()
	bb, err := svc.NewBatchBuilder()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 255; i++ {
		if err := bb.Delete("mal", fmt.Sprintf("none%d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"keep1", "keep2"} {
		if err := bb.Delete("mal", n, nil); err != nil {
			t.Fatal(err)
		}
	}
	_, err = svc.SubmitBatch(ctx, bb, nil)
	if err == nil || !strings.Contains(err.Error(), "ExceedsMaxBatchRequestCount") || !strings.Contains(err.Error(), "400") {
		t.Fatalf("257 sub-requests: %v, want the batch refused with 400 ExceedsMaxBatchRequestCount", err)
	}
	stillThere("257 sub-requests")

	// Exactly 256 run.
	bb, err = svc.NewBatchBuilder()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 255; i++ {
		if err := bb.Delete("mal", fmt.Sprintf("none%d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := bb.Delete("mal", "keep1", nil); err != nil {
		t.Fatal(err)
	}
	resp, err := svc.SubmitBatch(ctx, bb, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Responses) != 256 || resp.Responses[255].Error != nil || codeOf(resp.Responses[0].Error) != "BlobNotFound" {
		t.Fatalf("256 sub-requests: %d responses, last %v, first %v", len(resp.Responses), resp.Responses[255].Error, resp.Responses[0].Error)
	}
	if b.exists(t, "mal/keep1") {
		t.Fatal("the 256th sub-request did not run")
	}

	// Sub-requests are authorized on their own: a Shared Key batch whose
	// sub-request carries no signature, or a wrong one, fails in that
	// part only.
	forged := strings.Replace(del("mal/keep2"), "SharedKey devstoreaccount1:", "SharedKey devstoreaccount1:AAAA", 1)
	resp2, subs := b.postBatch(t, "?comp=batch", []string{b.rawSub(t, "DELETE", "mal/keep2", nil, false), forged}, true)
	wantStatus(t, resp2, 202, "", "unsigned sub-requests")
	wantSubs(t, subs, "401 NoAuthenticationInformation", "403 AuthenticationFailed")
	if !b.exists(t, "mal/keep2") {
		t.Fatal("an unauthorized sub-request deleted a blob")
	}
	// The JavaScript SDK's framing: no blank line between a part's
	// headers and the next boundary, no CRLF before the first one.
	b.putBlobs(t, "mal/js1")
	js := strings.TrimSuffix(del("mal/js1"), "\r\n")
	jsBody := "--batch_js\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\nContent-ID: 0\r\n\r\n" + js + "\r\n--batch_js--\r\n"
	resp4, subs := b.postBatchBody(t, "?comp=batch", "multipart/mixed; boundary=batch_js", jsBody, true)
	wantStatus(t, resp4, 202, "", "JavaScript framing")
	wantSubs(t, subs, "202 ")
	if b.exists(t, "mal/js1") {
		t.Fatal("the JavaScript-framed delete did not run")
	}
	// And the batch itself needs a credential.
	resp3, _ := b.postBatchBody(t, "?comp=batch", "multipart/mixed; boundary=batch_b1", batchBody("batch_b1", []string{del("mal/keep2")}), false)
	if resp3.StatusCode != 401 {
		t.Fatalf("anonymous batch: %d", resp3.StatusCode)
	}
}

// TestBlobBatchSASMalformedQuery: a sub-request whose query does not
// parse fails in its own part with 400 InvalidQueryParameterValue, also
// when it inherits the batch's SAS. Giving it the token must not rewrite
// its query into one that parses (the malformed pair dropped): that
// request was never checked as a Delete Blob or Set Blob Tier of the
// batch's scope, and here it would be a Delete Container.
func TestBlobBatchSASMalformedQuery(t *testing.T) {
	b := setup(t, "sqlite")
	createContainers(t, b.client, "mqb", "victim")
	b.putBlobs(t, "mqb/a")
	cred, err := azblob.NewSharedKeyCredential(config.DevAccountName, config.DevAccountKey)
	if err != nil {
		t.Fatal(err)
	}
	acctSAS, err := sas.AccountSignatureValues{Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: time.Now().UTC().Add(time.Hour),
		Permissions:   to.Ptr(sas.AccountPermissions{Delete: true, Read: true}).String(),
		ResourceTypes: to.Ptr(sas.AccountResourceTypes{Service: true, Container: true, Object: true}).String()}.SignWithSharedKey(cred)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"restype=container&x=%zz", "restype=container;x=1"} {
		parts := []string{
			b.rawSub(t, "DELETE", "mqb/a", nil, false),
			b.rawSub(t, "DELETE", "victim?"+q, nil, false),
		}
		resp, subs := b.postBatch(t, "?comp=batch&"+acctSAS.Encode(), parts, false)
		wantStatus(t, resp, 202, "", "batch")
		if len(subs) == 2 {
			wantSubs(t, subs, "202 ", "400 InvalidQueryParameterValue")
		} else {
			wantRefusedBatch(t, q, resp, subs, "InvalidQueryParameterValue")
		}
		if _, err := b.client.ServiceClient().NewContainerClient("victim").GetProperties(context.Background(), nil); err != nil {
			t.Fatalf("%s: the container is gone after a batch of Delete Blob: %v", q, err)
		}
		b.putBlobs(t, "mqb/a")
	}
}

// TestBlobBatchSASClientChecks: a sub-request that inherits the batch's
// SAS is checked against the batch's client, as a request of its own
// would be: a token bound to the client's address (sip) or to HTTPS (spr,
// here through a trusted proxy's X-Forwarded-Proto) admits the batch's
// sub-requests too. They were checked against no client at all, so every
// sub-request of such a batch failed 403.
func TestBlobBatchSASClientChecks(t *testing.T) {
	b := setup(t, "sqlite", setupOpts{options: gateway.Options{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}})
	ctx := context.Background()
	createContainers(t, b.client, "sipc")
	b.putBlobs(t, "sipc/a", "sipc/b")
	cred, err := azblob.NewSharedKeyCredential(config.DevAccountName, config.DevAccountKey)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	for _, tc := range []struct {
		what  string
		v     sas.BlobSignatureValues
		proto string
		name  string
	}{
		{"sip", sas.BlobSignatureValues{Protocol: sas.ProtocolHTTPSandHTTP, IPRange: sas.IPRange{Start: net.ParseIP("127.0.0.1")}}, "", "a"},
		{"spr=https", sas.BlobSignatureValues{Protocol: sas.ProtocolHTTPS}, "https", "b"},
	} {
		v := tc.v
		v.StartTime, v.ExpiryTime, v.ContainerName = now.Add(-time.Minute), now.Add(time.Hour), "sipc"
		v.Permissions = (&sas.ContainerPermissions{Delete: true}).String()
		qp, err := v.SignWithSharedKey(cred)
		if err != nil {
			t.Fatal(err)
		}
		opts := &container.ClientOptions{}
		if tc.proto != "" {
			opts.PerCallPolicies = []policy.Policy{headerPolicy{"X-Forwarded-Proto": tc.proto}}
		}
		cc, err := container.NewClientWithNoCredential(b.serviceURL(0)+"sipc?"+qp.Encode(), opts)
		if err != nil {
			t.Fatal(err)
		}
		bb, err := cc.NewBatchBuilder()
		if err != nil {
			t.Fatal(err)
		}
		if err := bb.Delete(tc.name, nil); err != nil {
			t.Fatal(err)
		}
		resp, err := cc.SubmitBatch(ctx, bb, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.what, err)
		}
		wantResults(t, tc.what, subResults(t, resp.Responses), "")
		if b.exists(t, "sipc/"+tc.name) {
			t.Fatalf("%s: the blob is still there", tc.what)
		}
	}
}
