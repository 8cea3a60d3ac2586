package gateway_test

import (
	"context"
	"strings"
	"testing"
)

// TestMalformedXMLBodies: a Set Blob Service Properties or Set Container
// ACL body that is not one well-formed XML document (garbage after the
// root element, a second root) is 400 InvalidXmlDocument and stores
// nothing. A Blob service properties document naming one top-level
// element twice is refused too: it was validated as the two merged
// (DeleteRetentionPolicy Days 7 from the first acted on) and stored as the
// second alone (no Days answered).
func TestMalformedXMLBodies(t *testing.T) {
	b := setup(t, "sqlite")
	createContainers(t, b.client, "xmldoc")
	const props = `<?xml version="1.0" encoding="utf-8"?><StorageServiceProperties><Cors /></StorageServiceProperties>`
	const acl = `<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers><SignedIdentifier><Id>p</Id><AccessPolicy><Permission>r</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>`
	resp, _ := b.do(t, "PUT", "?restype=service&comp=properties", props, nil)
	wantStatus(t, resp, 202, "", "well-formed service properties")
	resp, _ = b.do(t, "PUT", "xmldoc?restype=container&comp=acl", acl, nil)
	wantStatus(t, resp, 200, "", "well-formed ACL")
	_, before := b.do(t, "GET", "?restype=service&comp=properties", "", nil)
	_, beforeACL := b.do(t, "GET", "xmldoc?restype=container&comp=acl", "", nil)

	for _, tc := range []struct{ what, path, body string }{
		{"props garbage after the root", "?restype=service&comp=properties", props + "<x"},
		{"props text after the root", "?restype=service&comp=properties", props + "junk"},
		{"props second root", "?restype=service&comp=properties", props + `<StorageServiceProperties><Cors /></StorageServiceProperties>`},
		{"props element twice", "?restype=service&comp=properties", `<StorageServiceProperties>` +
			`<DeleteRetentionPolicy><Enabled>true</Enabled><Days>7</Days></DeleteRetentionPolicy>` +
			`<DeleteRetentionPolicy><Enabled>true</Enabled></DeleteRetentionPolicy></StorageServiceProperties>`},
		{"acl garbage after the root", "xmldoc?restype=container&comp=acl", `<SignedIdentifiers></SignedIdentifiers><x`},
		{"acl second root", "xmldoc?restype=container&comp=acl", `<SignedIdentifiers></SignedIdentifiers><SignedIdentifiers></SignedIdentifiers>`},
		{"acl unclosed", "xmldoc?restype=container&comp=acl", `<SignedIdentifiers><SignedIdentifier><Id>q</Id></SignedIdentifier>`},
	} {
		resp, body := b.do(t, "PUT", tc.path, tc.body, nil)
		wantStatus(t, resp, 400, "InvalidXmlDocument", tc.what+": "+strings.TrimSpace(body))
	}
	if _, after := b.do(t, "GET", "?restype=service&comp=properties", "", nil); after != before {
		t.Errorf("service properties changed by refused documents:\n%s\nwant\n%s", after, before)
	}
	if _, after := b.do(t, "GET", "xmldoc?restype=container&comp=acl", "", nil); after != beforeACL {
		t.Errorf("ACL changed by refused documents:\n%s\nwant\n%s", after, beforeACL)
	}
	// Comments, white space and processing instructions around the root
	// are still one document.
	resp, body := b.do(t, "PUT", "?restype=service&comp=properties", "\n<!-- c -->"+props+"\n<!-- end -->\n", nil)
	wantStatus(t, resp, 202, "", "comments around the root: "+body)
}

// TestCORSMaxAgeInt32: a CORS rule's MaxAgeInSeconds is an Int32 (the SDKs
// read it so): a larger one is 400 InvalidXmlDocument. It was stored, and
// Get Blob Service Properties then answered a document the Azure SDK
// cannot read.
func TestCORSMaxAgeInt32(t *testing.T) {
	b := setup(t, "sqlite")
	rule := func(age string) string {
		return `<StorageServiceProperties><Cors><CorsRule><AllowedOrigins>*</AllowedOrigins><AllowedMethods>GET</AllowedMethods>` +
			`<AllowedHeaders></AllowedHeaders><ExposedHeaders></ExposedHeaders><MaxAgeInSeconds>` + age + `</MaxAgeInSeconds></CorsRule></Cors></StorageServiceProperties>`
	}
	resp, body := b.do(t, "PUT", "?restype=service&comp=properties", rule("2147483648"), nil)
	wantStatus(t, resp, 400, "InvalidXmlDocument", "MaxAgeInSeconds 2^31: "+body)
	resp, body = b.do(t, "PUT", "?restype=service&comp=properties", rule("2147483647"), nil)
	wantStatus(t, resp, 202, "", "MaxAgeInSeconds 2^31-1: "+body)
	props, err := b.client.ServiceClient().GetProperties(context.Background(), nil)
	if err != nil {
		t.Fatalf("the SDK cannot read the service properties: %v", err)
	}
	if len(props.CORS) != 1 || *props.CORS[0].MaxAgeInSeconds != 2147483647 {
		t.Fatalf("CORS rules read back: %+v", props.CORS)
	}
}
