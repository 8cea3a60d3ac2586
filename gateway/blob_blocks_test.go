package gateway

import (
	"reflect"
	"testing"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

// TestParseBlockList: a Put Block List body keeps its element order and
// kinds; a body that is not the BlockList document is InvalidXmlDocument,
// a bad block id (or one id under two kinds) InvalidBlockList.
func TestParseBlockList(t *testing.T) {
	const (
		a = "YQ==" // "a"
		b = "Yg==" // "b"
		c = "Yw==" // "c"
	)
	cases := []struct {
		name string
		body string
		want []leasedb.BlockRef
		code svcerr.Code
	}{
		{name: "empty list", body: `<?xml version="1.0" encoding="utf-8"?><BlockList></BlockList>`},
		{name: "self-closing root", body: `<BlockList/>`},
		{
			name: "kinds in order",
			body: `<?xml version="1.0" encoding="utf-8"?><BlockList><Latest>` + b + `</Latest><Committed>` + a + `</Committed><Uncommitted>` + c + `</Uncommitted></BlockList>`,
			want: []leasedb.BlockRef{{Kind: leasedb.BlockLatest, ID: b}, {Kind: leasedb.BlockCommitted, ID: a}, {Kind: leasedb.BlockUncommitted, ID: c}},
		},
		{
			name: "whitespace between elements",
			body: "<BlockList>\n  <Latest>" + a + "</Latest>\n  <Latest>" + b + "</Latest>\n</BlockList>\n",
			want: []leasedb.BlockRef{{Kind: leasedb.BlockLatest, ID: a}, {Kind: leasedb.BlockLatest, ID: b}},
		},
		{
			name: "same id twice, same kind",
			body: `<BlockList><Latest>` + a + `</Latest><Latest>` + a + `</Latest></BlockList>`,
			want: []leasedb.BlockRef{{Kind: leasedb.BlockLatest, ID: a}, {Kind: leasedb.BlockLatest, ID: a}},
		},

		{name: "empty body", body: ``, code: svcerr.InvalidXmlDocument},
		{name: "not XML", body: `Latest=YQ==`, code: svcerr.InvalidXmlDocument},
		{name: "truncated", body: `<BlockList><Latest>` + a + `</Latest>`, code: svcerr.InvalidXmlDocument},
		{name: "mismatched tags", body: `<BlockList><Latest>` + a + `</Committed></BlockList>`, code: svcerr.InvalidXmlDocument},
		{name: "wrong root", body: `<Blocks><Latest>` + a + `</Latest></Blocks>`, code: svcerr.InvalidXmlDocument},
		{name: "unknown element", body: `<BlockList><Block>` + a + `</Block></BlockList>`, code: svcerr.InvalidXmlDocument},
		{name: "a second root", body: `<BlockList><Latest>` + a + `</Latest></BlockList><BlockList></BlockList>`, code: svcerr.InvalidXmlDocument},
		{name: "text after the root", body: `<BlockList><Latest>` + a + `</Latest></BlockList>junk`, code: svcerr.InvalidXmlDocument},
		{name: "text in the root", body: `<BlockList>junk<Latest>` + a + `</Latest></BlockList>`, code: svcerr.InvalidXmlDocument},
		{name: "text before the root", body: `junk<BlockList><Latest>` + a + `</Latest></BlockList>`, code: svcerr.InvalidXmlDocument},

		{name: "element inside an id", body: `<BlockList><Latest><Latest>` + a + `</Latest></Latest></BlockList>`, code: svcerr.InvalidBlockList},
		{name: "empty id", body: `<BlockList><Latest></Latest></BlockList>`, code: svcerr.InvalidBlockList},
		{name: "id not base64", body: `<BlockList><Latest>not base64!</Latest></BlockList>`, code: svcerr.InvalidBlockList},
		{name: "one id, two kinds", body: `<BlockList><Committed>` + a + `</Committed><Uncommitted>` + a + `</Uncommitted></BlockList>`, code: svcerr.InvalidBlockList},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseBlockList([]byte(tc.body))
			if tc.code != "" {
				if !svcerr.HasCode(err, tc.code) {
					t.Fatalf("err = %v, want %s", err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if len(got) != 0 || len(tc.want) != 0 {
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("got %+v, want %+v", got, tc.want)
				}
			}
		})
	}
}
