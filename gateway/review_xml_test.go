package gateway_test

import (
	"context"
	"testing"
)

// TestXMLBodyOneDocument: a request body that is an XML document and then
// more (a second root element, or text after the root) is 400
// InvalidXmlDocument on Put Block List, Set Container ACL, Set Blob Tags
// and Set Blob Service Properties, and nothing changes: each read the
// first element and ignored the rest. Comments, processing instructions
// and white space after the root stay accepted.
func TestXMLBodyOneDocument(t *testing.T) {
	b := setup(t, "sqlite+disk")
	ctx := context.Background()
	cc := b.fillEdge(t)
	if _, err := cc.NewBlockBlobClient("keep").StageBlock(ctx, blockID(0), nopSeeker("s"), nil); err != nil {
		t.Fatal(err)
	}
	docs := []struct{ name, path, doc string }{
		{"Put Block List", "edge/keep?comp=blocklist", "<BlockList><Latest>" + blockID(0) + "</Latest></BlockList>"},
		{"Set Container ACL", "edge?restype=container&comp=acl", "<SignedIdentifiers><SignedIdentifier><Id>p</Id><AccessPolicy><Permission>r</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>"},
		{"Set Blob Tags", "edge/keep?comp=tags", "<Tags><TagSet><Tag><Key>t</Key><Value>2</Value></Tag></TagSet></Tags>"},
		{"Set Blob Service Properties", "?restype=service&comp=properties", "<StorageServiceProperties><DeleteRetentionPolicy><Enabled>true</Enabled><Days>3</Days></DeleteRetentionPolicy></StorageServiceProperties>"},
	}
	before := b.accountState(t)
	acl, err := cc.GetAccessPolicy(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		for _, tail := range []string{"junk", "<X/>", "<" + d.doc[1:], "]]>", "&amp;"} {
			resp, body := b.do(t, "PUT", d.path, `<?xml version="1.0" encoding="utf-8"?>`+d.doc+tail, nil)
			if diff := statusDiff(resp, 400, "InvalidXmlDocument"); diff != "" {
				t.Errorf("%s followed by %q: %s\n%s", d.name, tail, diff, body)
			}
		}
	}
	if after := b.accountState(t); after != before {
		t.Fatalf("a refused document changed something:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if got, err := cc.GetAccessPolicy(ctx, nil); err != nil || len(got.SignedIdentifiers) != len(acl.SignedIdentifiers) {
		t.Fatalf("the container ACL after the refusals: %+v, %v", got, err)
	}
	for _, d := range docs {
		resp, body := b.do(t, "PUT", d.path, d.doc+"\n<!-- end -->\n<?pi x?>\n ", nil)
		if resp.StatusCode/100 != 2 {
			t.Errorf("%s followed by a comment, a processing instruction and white space: %d %s", d.name, resp.StatusCode, body)
		}
	}
}
