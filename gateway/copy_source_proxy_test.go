package gateway_test

import (
	"context"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/blobgw/blobgw/gateway"
)

// TestCopySourceBehindProxy: behind a TLS-terminating trusted proxy, a Copy
// Blob whose x-ms-copy-source is the https URL of a blob on this gateway's
// own endpoint, naming port 443 where the request's Host names none (the
// client spoke https to the default port), is read from the store, not
// fetched over the network: the request arrives over plain HTTP with
// X-Forwarded-Proto: https, so the Host's default port comes from the
// scheme the proxy reports, not from the connection.
func TestCopySourceBehindProxy(t *testing.T) {
	ctx := context.Background()
	b := setup(t, "sqlite", setupOpts{options: gateway.Options{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}})
	createContainers(t, b.client, "prox")
	if _, err := b.client.UploadBuffer(ctx, "prox", "src", []byte("source bytes"), nil); err != nil {
		t.Fatal(err)
	}
	// The proxy forwards the client's Host (the endpoint's name, no port)
	// to the gateway's own address.
	req, err := http.NewRequest(http.MethodPut, b.serviceURL(0)+"prox/dst", strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "127.0.0.1"
	req.ContentLength = 0
	req.Header.Set("X-Forwarded-Proto", "https")
	req.Header.Set("X-Forwarded-For", "203.0.113.9")
	req.Header.Set("x-ms-copy-source", "https://127.0.0.1:443/devstoreaccount1/prox/src")
	b.sign(t, req)
	resp, _ := send(t, req)
	if resp.StatusCode != http.StatusAccepted || resp.Header.Get("x-ms-copy-status") != "success" {
		t.Fatalf("Copy Blob from this gateway's https URL behind a proxy: %d %s (copy status %q)",
			resp.StatusCode, resp.Header.Get("x-ms-error-code"), resp.Header.Get("x-ms-copy-status"))
	}
	if got := string(download(t, b.client, "prox", "dst")); got != "source bytes" {
		t.Fatalf("copied %q", got)
	}
}
