package gateway_test

import (
	"bytes"
	"context"
	"net/http"
	"testing"
)

// TestSharedKeyWhitespaceTampering: a Put Blob signed with
// x-ms-meta-m: "a b" and sent with the inner whitespace changed is refused
// (403 AuthenticationFailed) and stores nothing; sent as signed it is
// stored with the value as sent.
func TestSharedKeyWhitespaceTampering(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "wspace")
	put := func(signedValue, sentValue string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodPut, b.serviceURL(0)+"wspace/m", bytes.NewReader([]byte("x")))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("x-ms-blob-type", "BlockBlob")
		req.Header.Set("x-ms-meta-m", signedValue)
		b.sign(t, req)
		req.Header.Set("x-ms-meta-m", sentValue)
		resp, _ := send(t, req)
		return resp
	}
	resp := put("a b", "a      b")
	wantStatus(t, resp, http.StatusForbidden, "AuthenticationFailed", "tampered whitespace")
	if _, err := blockClient(b.client, "wspace", "m").GetProperties(ctx, nil); statusOf(err) != http.StatusNotFound {
		t.Fatalf("a refused Put Blob left a blob (err %v)", err)
	}
	if resp := put("a   b", "a   b"); resp.StatusCode != http.StatusCreated {
		t.Fatalf("signed as sent: %d %s", resp.StatusCode, resp.Header.Get("x-ms-error-code"))
	}
	p, err := blockClient(b.client, "wspace", "m").GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	// (The SDK reads names back through Go's canonical header form.)
	if v := p.Metadata["M"]; v == nil || *v != "a   b" {
		t.Fatalf("metadata m = %v, want %q", p.Metadata, "a   b")
	}
}
