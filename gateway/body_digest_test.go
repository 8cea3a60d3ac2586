package gateway_test

import (
	"crypto/md5"
	"encoding/base64"
	"net/http"
	"testing"
)

// TestSmallBodyDigestsChecked: Set Container ACL and Set Blob Service
// Properties check a Content-MD5 or x-ms-content-crc64 the client sends
// against the body, as Put Block List does, and change nothing when it
// does not match (the sweep found them ignored).
func TestSmallBodyDigestsChecked(t *testing.T) {
	b := setup(t, "sqlite+disk")
	createContainers(t, b.client, "digests")
	acl := `<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers><SignedIdentifier><Id>p1</Id><AccessPolicy><Permission>r</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>`
	svc := `<?xml version="1.0" encoding="utf-8"?><StorageServiceProperties><Cors><CorsRule><AllowedOrigins>https://a.example</AllowedOrigins><AllowedMethods>GET</AllowedMethods><MaxAgeInSeconds>5</MaxAgeInSeconds><ExposedHeaders>x-ms-meta-a</ExposedHeaders><AllowedHeaders>x-ms-meta-b</AllowedHeaders></CorsRule></Cors></StorageServiceProperties>`
	for _, c := range []struct {
		name, path, body, readPath string
	}{
		{"SetContainerACL", "digests?restype=container&comp=acl", acl, "digests?restype=container&comp=acl"},
		{"SetBlobServiceProperties", "?restype=service&comp=properties", svc, "?restype=service&comp=properties"},
	} {
		_, before := b.do(t, "GET", c.readPath, "", nil)
		for _, d := range []struct{ hdr, val, code string }{
			{"Content-MD5", "AAAAAAAAAAAAAAAAAAAAAA==", "Md5Mismatch"},
			{"x-ms-content-crc64", "AAAAAAAAAAA=", "Crc64Mismatch"},
			{"Content-MD5", "AAAA", "InvalidMd5"},
		} {
			resp, _ := b.do(t, "PUT", c.path, c.body, map[string]string{d.hdr: d.val})
			wantStatus(t, resp, http.StatusBadRequest, d.code, c.name+" with a wrong "+d.hdr)
			if _, after := b.do(t, "GET", c.readPath, "", nil); after != before {
				t.Fatalf("%s refused, yet it changed:\n%s\n→\n%s", c.name, before, after)
			}
		}
		sum := md5.Sum([]byte(c.body))
		resp, _ := b.do(t, "PUT", c.path, c.body, map[string]string{"Content-MD5": base64.StdEncoding.EncodeToString(sum[:])})
		if resp.StatusCode >= 300 {
			t.Fatalf("%s with its body's Content-MD5: %d %s", c.name, resp.StatusCode, resp.Header.Get("x-ms-error-code"))
		}
	}
}
