package leasedb

// Fuzz targets for the parsers of this package that see client bytes: the
// listing markers (List Blobs / Find Blobs by Tags: marker=) and the tag
// expressions (x-ms-if-tags, Find Blobs by Tags: where=). The seeds run in
// every plain `go test`; see README for long runs.

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/blobgw/blobgw/svcerr/svcerrtest"
)

// FuzzMarker: EncodeMarker/DecodeMarker (Find Blobs by Tags markers) and
// encodeListMarker/decodeListMarker (List Blobs markers). A marker either
// decodes or is a 400; whatever decodes re-encodes to a marker that decodes
// to the same position; every position encodes to a marker that decodes
// back to it.
func FuzzMarker(f *testing.F) {
	// Markers as the gateway hands them to the SDKs (NextMarker), and
	// names as azblob tests upload them.
	for _, s := range []string{
		"", "1", "2", "1YQ", "1ZGlyL2EgYiv8LnR4dA", "2YQAyMDI0LTAxLTAxVDEwOjAwOjAwLjAwMDAwMDBa",
		"3YQ", "1====", "1YQ==", "2YQ", "2AA", "1AA", "1_-_-", "\xff", "1\x00",
		"container/blob", "dir/a b+ü.txt", "a\x002024-01-01T10:00:00.0000000Z",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, m string) {
		// Find Blobs by Tags marker.
		after, err := DecodeMarker(m)
		if err != nil {
			svcerrtest.ClientError(t, "DecodeMarker", err)
		} else if got, err := DecodeMarker(EncodeMarker(after)); err != nil || got != after {
			t.Fatalf("DecodeMarker(EncodeMarker(%q)) = %q, %v", after, got, err)
		}
		if got, err := DecodeMarker(EncodeMarker(m)); err != nil || got != m {
			t.Fatalf("DecodeMarker(EncodeMarker(%q)) = %q, %v", m, got, err)
		}

		// List Blobs marker.
		p, err := decodeListMarker(m)
		if err != nil {
			svcerrtest.ClientError(t, "decodeListMarker", err)
		} else {
			if !utf8.ValidString(p.name) || strings.IndexByte(p.name, 0) >= 0 {
				t.Fatalf("decodeListMarker(%q) accepted name %q", m, p.name)
			}
			if got, err := decodeListMarker(encodeListMarker(p)); err != nil || got != p {
				t.Fatalf("decodeListMarker(encodeListMarker(%+v)) = %+v, %v", p, got, err)
			}
		}
		// Every real position round trips: a name is UTF-8 without NUL
		// (the gateway refuses others), a snapshot is a timestamp.
		if utf8.ValidString(m) && strings.IndexByte(m, 0) < 0 {
			for _, p := range []listPos{{name: m}, {name: m + PastPrefix}, {name: m, snapshot: "2024-01-01T10:00:00.0000000Z"}} {
				if p.name == "" && p.snapshot != "" {
					continue
				}
				if got, err := decodeListMarker(encodeListMarker(p)); err != nil || got != p {
					t.Fatalf("decodeListMarker(encodeListMarker(%+v)) = %+v, %v", p, got, err)
				}
			}
		}
	})
}

// formatTagNode prints n in the tag expression grammar with every key and
// value quoted and only the parentheses the tree needs, so reparsing it
// gives the same tree without nesting deeper than the source did.
func formatTagNode(n tagNode) string {
	quote := func(s string, q string) string { return q + strings.ReplaceAll(s, q, q+q) + q }
	switch n := n.(type) {
	case tagCmp:
		key := n.key
		if key != containerKey {
			key = quote(key, `"`)
		}
		return key + " " + n.op + " " + quote(n.value, "'")
	case tagAnd:
		l, r := formatTagNode(n.l), formatTagNode(n.r)
		if _, ok := n.l.(tagOr); ok {
			l = "(" + l + ")"
		}
		switch n.r.(type) {
		case tagOr, tagAnd:
			r = "(" + r + ")"
		}
		return l + " AND " + r
	case tagOr:
		l, r := formatTagNode(n.l), formatTagNode(n.r)
		if _, ok := n.r.(tagOr); ok {
			r = "(" + r + ")"
		}
		return l + " OR " + r
	}
	panic("unknown tag node")
}

// FuzzTagExpr: ParseTagCondition (x-ms-if-tags) and ParseTagFilter (Find
// Blobs by Tags: where=). What parses prints and reparses to the same tree;
// Keys lists every tag key compared; a blob without tags never matches (no
// comparison is true on a missing tag); and Lookup, the index range Find
// Blobs by Tags reads candidates by, never excludes a blob the evaluator
// matches.
func FuzzTagExpr(f *testing.F) {
	// Expressions as azblob's FindBlobsByTags and x-ms-if-tags tests send
	// them, and grammar edges.
	for _, s := range []string{
		`"tag1"='value1'`, `"tag1" = 'value1' AND "tag2" = 'value2'`,
		`@container='cont' AND "k"='v'`, `"Date" >= '2020-01-01' AND "Date" < '2021-01-01'`,
		`"k"<>'v'`, `("a"='1' OR "b"='2') AND c='3'`, `"a"='1' or ("b">'2' and "b"<='9')`,
		`"it""s"='don''t'`, `k='v'AND"x"='y'`, `((("a"='1')))`, `"a"='1' AND`, `'a'='1'`,
		`@container>'a'`, `"a"='`, `"" = 'x'`, `a = 'b' OR`, "k\t=\n'v'", strings.Repeat("(", 70) + `a='1'` + strings.Repeat(")", 70),
	} {
		f.Add(s, "v", "cont")
	}
	f.Fuzz(func(t *testing.T, s, val, container string) {
		for _, find := range []bool{false, true} {
			e, err := parseTagExpr(s, find)
			if err != nil {
				if e != nil {
					t.Fatalf("parseTagExpr(%q) returned an expression with error %v", s, err)
				}
				continue
			}
			if e.String() != s {
				t.Fatalf("String() = %q, want %q", e.String(), s)
			}
			printed := formatTagNode(e.root)
			again, err := parseTagExpr(printed, find)
			if err != nil {
				t.Fatalf("reparse of %q (printed from %q): %v", printed, s, err)
			}
			if !reflect.DeepEqual(again.root, e.root) || !reflect.DeepEqual(again.keys, e.keys) {
				t.Fatalf("reparse of %q (printed from %q) gave %#v, want %#v", printed, s, again.root, e.root)
			}
			if e.MatchIn(container, nil) && !onlyContainer(e.root) {
				t.Fatalf("%q matches a blob without tags", s)
			}
			// A blob carrying every key with one value (val, or each
			// term's own value) exercises the matching side.
			tagSets := []map[string]string{{}}
			for _, k := range e.Keys() {
				tagSets[0][k] = val
			}
			var terms []tagCmp
			collectTerms(e.root, &terms)
			for _, c := range terms {
				m := map[string]string{}
				for _, k := range e.Keys() {
					m[k] = c.value
				}
				tagSets = append(tagSets, m)
			}
			r, wantC, ok := e.Lookup()
			for _, tags := range tagSets {
				for _, cont := range []string{container, wantC} {
					if !e.MatchIn(cont, tags) {
						continue
					}
					if wantC != "" && cont != wantC {
						t.Fatalf("%q matches container %q but Lookup names %q", s, cont, wantC)
					}
					if ok && !inRange(r, tags) {
						t.Fatalf("%q matches %v but Lookup range %+v excludes it", s, tags, r)
					}
				}
			}
		}
	})
}

func collectTerms(n tagNode, out *[]tagCmp) {
	switch n := n.(type) {
	case tagCmp:
		*out = append(*out, n)
	case tagAnd:
		collectTerms(n.l, out)
		collectTerms(n.r, out)
	case tagOr:
		collectTerms(n.l, out)
		collectTerms(n.r, out)
	}
}

func onlyContainer(n tagNode) bool {
	var terms []tagCmp
	collectTerms(n, &terms)
	for _, c := range terms {
		if c.key != containerKey {
			return false
		}
	}
	return true
}

func inRange(r TagRange, tags map[string]string) bool {
	v, ok := tags[r.Key]
	if !ok {
		return false
	}
	switch r.LoOp {
	case ">":
		if !(v > r.Lo) {
			return false
		}
	case ">=":
		if !(v >= r.Lo) {
			return false
		}
	}
	switch r.HiOp {
	case "<":
		if !(v < r.Hi) {
			return false
		}
	case "<=":
		if !(v <= r.Hi) {
			return false
		}
	}
	return true
}
