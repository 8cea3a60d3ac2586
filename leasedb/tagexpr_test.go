package leasedb

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/blobgw/blobgw/svcerr"
	"github.com/blobgw/blobgw/svcerr/svcerrtest"
)

func TestTagExprEval(t *testing.T) {
	tags := map[string]string{"a": "5", "b": "x", "date": "2024-05-01", "sp ace": "v v", "q'uote": "it's", `d"q`: "1"}
	tests := []struct {
		expr string
		want bool
	}{
		// Every operator, true and false; string (not numeric) order.
		{`"a" = '5'`, true},
		{`"a" = '6'`, false},
		{`"a" <> '6'`, true},
		{`"a" <> '5'`, false},
		{`"a" > '4'`, true},
		{`"a" > '5'`, false},
		{`"a" > '10'`, true}, // "5" > "10" as strings
		{`"a" >= '5'`, true},
		{`"a" >= '6'`, false},
		{`"a" < '6'`, true},
		{`"a" < '5'`, false},
		{`"a" <= '5'`, true},
		{`"a" <= '4'`, false},
		{`"date" >= '2024-01-01' AND "date" < '2025-01-01'`, true},
		{`"date" >= '2024-06-01' AND "date" < '2025-01-01'`, false},
		// A missing tag makes every comparison false, <> included.
		{`"missing" = ''`, false},
		{`"missing" <> 'x'`, false},
		{`"missing" < 'zzz'`, false},
		// Case-sensitive keys and values.
		{`"A" = '5'`, false},
		{`"b" = 'X'`, false},
		// AND binds tighter than OR.
		{`"a" = '5' OR "b" = 'no' AND "a" = 'no'`, true},
		{`("a" = '5' OR "b" = 'no') AND "a" = 'no'`, false},
		{`"a" = 'no' AND "b" = 'no' OR "b" = 'x'`, true},
		{`"a" = 'no' AND ("b" = 'no' OR "b" = 'x')`, false},
		{`"a" = 'no' OR "b" = 'no' OR "b" = 'x'`, true},
		{`"a" = '5' AND "b" = 'x' AND "date" = '2024-05-01'`, true},
		{`((("a" = '5')))`, true},
		// Keywords in any case, whitespace optional around tokens.
		{`"a"='5'and"b"='x'`, true},
		{`"a" = '5' aNd ("b" = 'y' Or "b" = 'x')`, true},
		{"\t\"a\"\n=\r'5'  ", true},
		// Quoting: spaces, bare keys. (A doubled quote parses, but no
		// tag can hold a quote: TestTagExprLimits.)
		{`"sp ace" = 'v v'`, true},
		{`a = '5' AND b = 'x'`, true},
		{`"a" = '5' AND b <> 'x'`, false},
	}
	for _, tc := range tests {
		e, err := ParseTagCondition(tc.expr)
		if err != nil {
			t.Errorf("ParseTagCondition(%q): %v", tc.expr, err)
			continue
		}
		if got := e.Match(tags); got != tc.want {
			t.Errorf("%q on %v = %v, want %v", tc.expr, tags, got, tc.want)
		}
		if e.String() != tc.expr {
			t.Errorf("String() = %q, want %q", e.String(), tc.expr)
		}
		// No tags at all: every comparison is false.
		if e.Match(nil) {
			t.Errorf("%q matched a blob without tags", tc.expr)
		}
	}
}

func TestTagExprSyntaxErrors(t *testing.T) {
	for _, expr := range []string{
		``,
		`   `,
		`"a"`,
		`"a" =`,
		`"a" = 5`,
		`"a" = "5"`,
		`"a" == '5'`,
		`"a" != '5'`,
		`"a" = '5`,
		`"a = '5'`,
		`"" = '5'`,
		`= '5'`,
		`"a" = '5' AND`,
		`"a" = '5' OR`,
		`AND "a" = '5'`,
		`"a" = '5' "b" = '6'`,
		`"a" = '5' XOR "b" = '6'`,
		`("a" = '5'`,
		`"a" = '5')`,
		`()`,
		`"a" = '5' ANDx "b" = '6'`,
		`@container = 'c'`, // conditions cannot name the container
		`"@container" = 'c'`,
		strings.Repeat("(", 100) + `"a" = '5'` + strings.Repeat(")", 100),
	} {
		if e, err := ParseTagCondition(expr); err == nil {
			t.Errorf("ParseTagCondition(%q) = %v, want a syntax error", expr, e)
		}
	}
	// Deep but bounded nesting is fine.
	if _, err := ParseTagCondition(strings.Repeat("(", 60) + `"a" = '5'` + strings.Repeat(")", 60)); err != nil {
		t.Errorf("nesting 60: %v", err)
	}
}

// TestTagExprLimits: what no blob's tags can hold is refused rather than
// compared, as Azure refuses it: more than 10 distinct keys, a key over
// 128 or a value over 256 characters, a character outside a-z A-Z 0-9
// space + - . / : = _ (a quote included, doubled or not); the error names
// the position.
func TestTagExprLimits(t *testing.T) {
	var terms []string
	for i := 0; i < 11; i++ {
		terms = append(terms, fmt.Sprintf(`"k%d" = 'v'`, i))
	}
	// k0 bounded from below here and from above below: a range, which a
	// tag filter may compare twice.
	terms[0] = `"k0" >= 'v'`
	ten, eleven := strings.Join(terms[:10], " AND "), strings.Join(terms, " AND ")
	for _, parse := range []func(string) (*TagExpr, error){ParseTagCondition, ParseTagFilter} {
		if _, err := parse(ten); err != nil {
			t.Errorf("10 keys: %v", err)
		}
		if _, err := parse(ten + ` AND "k0" <= 'w'`); err != nil {
			t.Errorf("10 keys, one twice: %v", err)
		}
		if _, err := parse(`"` + strings.Repeat("k", 128) + `" = '` + strings.Repeat("v", 256) + `'`); err != nil {
			t.Errorf("longest key and value: %v", err)
		}
		for _, tc := range []struct {
			expr string
			pos  int
			msg  string
		}{
			{eleven, 0, "there can be at most 10 unique tags in a query"},
			{`"` + strings.Repeat("k", 129) + `" = 'v'`, 1, "tag must be between 1 and 128 characters in length"},
			{`"a" = '` + strings.Repeat("v", 257) + `'`, 7, "tag value must be between 0 and 256 characters in length"},
			{`"a" = 'x*y'`, 7, "'*' not permitted in tag name or value"},
			{`"q'uote" = 'v'`, 1, "''' not permitted in tag name or value"},
			{`"a" = 'it''s'`, 7, "''' not permitted in tag name or value"},
			{`"d""q" = '1'`, 1, "'\"' not permitted in tag name or value"},
			{`"a" = '5' AND b&c = '1'`, 15, "'&' not permitted in tag name or value"},
		} {
			_, err := parse(tc.expr)
			var te *TagExprError
			if !errors.As(err, &te) || te.Pos != tc.pos || te.Msg != tc.msg {
				t.Errorf("%.40q: %v, want position %d %q", tc.expr, err, tc.pos, tc.msg)
			}
		}
	}
}

func TestTagFilter(t *testing.T) {
	tags := map[string]string{"a": "5", "b": "x"}
	for _, tc := range []struct {
		expr      string
		container string
		want      bool
		keys      []string
	}{
		{`"a" = '5'`, "c1", true, []string{"a"}},
		{`"a" >= '1' AND "a" <= '9' AND "b" = 'x'`, "c1", true, []string{"a", "b"}},
		{`@container = 'c1' AND "a" = '5'`, "c1", true, []string{"a"}},
		{`@container = 'c1' AND "a" = '5'`, "c2", false, []string{"a"}},
		{`"@container" = 'c2'`, "c2", true, nil},
		{`"a" > '5'`, "c1", false, []string{"a"}},
	} {
		e, err := ParseTagFilter(tc.expr)
		if err != nil {
			t.Errorf("ParseTagFilter(%q): %v", tc.expr, err)
			continue
		}
		if got := e.MatchIn(tc.container, tags); got != tc.want {
			t.Errorf("%q in %s = %v, want %v", tc.expr, tc.container, got, tc.want)
		}
		if !reflect.DeepEqual(e.Keys(), tc.keys) {
			t.Errorf("%q: Keys() = %q, want %q", tc.expr, e.Keys(), tc.keys)
		}
	}
	// <> and OR are condition-only; @container only with =, only here.
	for _, expr := range []string{
		`"a" <> '5'`,
		`"a" = '5' OR "b" = 'x'`,
		`@container > 'c'`,
		`@other = 'c'`,
		`"a" = '5' AND`,
	} {
		if _, err := ParseTagFilter(expr); err == nil {
			t.Errorf("ParseTagFilter(%q) accepted", expr)
		}
	}
	// A filter compares a key once, or twice when the two bound it on
	// either side (a range); x-ms-if-tags has no such rule.
	for _, tc := range []struct {
		expr string
		pos  int
	}{
		{`"b" >= '2' AND "b" > '3'`, 16},
		{`"b" <= '3' AND "b" < '3'`, 16},
		{`"b" > '1' AND "b" < '9' AND "b" >= '2'`, 29},
		{`"a" = '5' AND "a" = '5'`, 15},
		{`"a" = '5' AND "a" > '1'`, 15},
		{`"a" < '5' AND "a" = '1'`, 15},
		{`@container = 'c1' AND @container = 'c2'`, 23},
	} {
		_, err := ParseTagFilter(tc.expr)
		var te *TagExprError
		if !errors.As(err, &te) || te.Pos != tc.pos || te.Msg != "can't have multiple conditions for a single tag unless they define a range" {
			t.Errorf("ParseTagFilter(%q): %v, want position %d", tc.expr, err, tc.pos)
		}
		if _, err := ParseTagCondition(strings.ReplaceAll(tc.expr, "@container", `"c"`)); err != nil {
			t.Errorf("ParseTagCondition(%q): %v", tc.expr, err)
		}
	}
	for _, expr := range []string{`"a" > '1' AND "a" <= '5'`, `"a" < '5' AND "b" = 'x' AND "a" >= '1'`, `"a" > '1' AND "b" < '2'`} {
		if _, err := ParseTagFilter(expr); err != nil {
			t.Errorf("ParseTagFilter(%q): %v", expr, err)
		}
	}
}

// The parsing half of this test (the x-ms-if-tags header) is
// TestParseIfTagsHeader in the gateway, which parses the headers.
func TestIfTagsConditions(t *testing.T) {
	lm := time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)
	match := Conditions{IfTags: mustTagExpr(t, `"k" = 'v'`)}
	miss := Conditions{IfTags: mustTagExpr(t, `"k" = 'other'`)}
	blob := Resource{Exists: true, ETag: `"0x1"`, LastModified: lm, Tags: map[string]string{"k": "v"}}
	container := Resource{Exists: true, ETag: `"0x1"`, LastModified: lm, Container: true}
	code := func(err error) string {
		if err == nil {
			return ""
		}
		if IsNotModified(err) {
			return "304"
		}
		e, _ := svcerr.As(err)
		return string(e.Code)
	}
	for _, tc := range []struct {
		name string
		got  error
		want string
	}{
		{"read match", EvalRead(match, blob), ""},
		{"read miss", EvalRead(miss, blob), "ConditionNotMet"},
		// A failing tag condition is 412 even where other conditions
		// would say 304.
		{"read miss with INM", EvalRead(Conditions{IfTags: miss.IfTags, IfNoneMatch: []string{"0x1"}}, blob), "ConditionNotMet"},
		{"write match", EvalWrite(match, blob, UpdateWrite), ""},
		{"write miss", EvalWrite(miss, blob, UpdateWrite), "ConditionNotMet"},
		// x-ms-if-tags is checked before If-None-Match: * (create-only).
		{"create miss with INM *", EvalWrite(Conditions{IfTags: miss.IfTags, IfNoneMatch: []string{"*"}}, blob, CreateWrite), "ConditionNotMet"},
		{"create match with INM *", EvalWrite(Conditions{IfTags: match.IfTags, IfNoneMatch: []string{"*"}}, blob, CreateWrite), "BlobAlreadyExists"},
		{"write on missing blob", EvalWrite(match, Resource{}, CreateWrite), "ConditionNotMet"},
		{"AND with If-Match", EvalWrite(Conditions{IfTags: match.IfTags, IfMatch: []string{"0x2"}}, blob, UpdateWrite), "ConditionNotMet"},
		{"container ignores it", EvalWrite(miss, container, UpdateWrite), ""},
	} {
		if got := code(tc.got); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
	if !match.FailsOnMissing() || (Conditions{}).FailsOnMissing() {
		t.Errorf("FailsOnMissing wrong")
	}
}

func mustTagExpr(t *testing.T, s string) *TagExpr {
	t.Helper()
	e, err := ParseTagCondition(s)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestValidateTags(t *testing.T) {
	ok := []map[string]string{
		nil,
		{"k": ""},
		{strings.Repeat("k", 128): strings.Repeat("v", 256)},
		{"aZ09 +-./:=_": "aZ09 +-./:=_"},
	}
	ten := map[string]string{}
	for i := 0; i < 10; i++ {
		ten[string(rune('a'+i))] = "v"
	}
	ok = append(ok, ten)
	for _, tags := range ok {
		if err := ValidateTags(tags); err != nil {
			t.Errorf("ValidateTags(%v): %v", tags, err)
		}
	}
	eleven := map[string]string{"z": "v"}
	for k, v := range ten {
		eleven[k] = v
	}
	for _, tags := range []map[string]string{
		eleven,
		{"": "v"},
		{strings.Repeat("k", 129): "v"},
		{"k": strings.Repeat("v", 257)},
		{"k*": "v"},
		{"k": "v;"},
		{"ключ": "v"},
		{"k": "\x00"},
	} {
		if err := ValidateTags(tags); !svcerr.HasCode(err, svcerr.InvalidTag) {
			t.Errorf("ValidateTags(%q) = %v, want InvalidTag", tags, err)
		}
	}
}

func TestCanonicalTier(t *testing.T) {
	for in, want := range map[string]string{"hot": "Hot", "COOL": "Cool", "Cold": "Cold", "aRcHiVe": "Archive"} {
		if got, ok := CanonicalTier(in); !ok || got != want {
			t.Errorf("CanonicalTier(%q) = %q, %v", in, got, ok)
		}
	}
	for _, in := range []string{"", "P10", "Premium", "hott"} {
		if _, ok := CanonicalTier(in); ok {
			t.Errorf("CanonicalTier(%q) accepted", in)
		}
	}
}

// TestTagLookup: the index range chosen for Find Blobs by Tags. Every match
// of the expression must have the chosen key with a value in the range
// (checked on sample tag sets), and an equality is preferred.
func TestTagLookup(t *testing.T) {
	eq := func(k, v string) TagRange { return TagRange{Key: k, Lo: v, LoOp: ">=", Hi: v, HiOp: "<="} }
	tests := []struct {
		where     string
		want      TagRange
		container string
		ok        bool
	}{
		{`"a" = '1'`, eq("a", "1"), "", true},
		{`"b" > '2' AND "a" = '1'`, eq("a", "1"), "", true},
		{`("b" > '2') AND ("c" = 'x' AND "a" = '1')`, eq("c", "x"), "", true},
		{`"b" > '2' AND "b" <= '5'`, TagRange{Key: "b", Lo: "2", LoOp: ">", Hi: "5", HiOp: "<="}, "", true},
		{`"b" < '9' AND "b" >= '3'`, TagRange{Key: "b", Lo: "3", LoOp: ">=", Hi: "9", HiOp: "<"}, "", true},
		// Only the first ranged key bounds the lookup.
		{`"b" < '2' AND "c" > '5'`, TagRange{Key: "b", Hi: "2", HiOp: "<"}, "", true},
		{`@container = 'logs' AND "b" < '2'`, TagRange{Key: "b", Hi: "2", HiOp: "<"}, "logs", true},
		{`"a" = '1' AND @container = 'logs'`, eq("a", "1"), "logs", true},
		{`@container = 'logs'`, TagRange{}, "logs", false},
	}
	samples := []map[string]string{
		nil, {"a": "1"}, {"a": "1", "b": "3"}, {"a": "1", "b": "5"}, {"b": "2"}, {"b": "25"}, {"b": "3"},
		{"a": "2", "b": "4", "c": "x"}, {"c": "x", "a": "1", "b": "4"}, {"b": "1", "c": "6"}, {"b": "6"},
	}
	inRange := func(r TagRange, tags map[string]string) bool {
		v, ok := tags[r.Key]
		switch {
		case !ok:
			return false
		case r.LoOp == ">" && v <= r.Lo, r.LoOp == ">=" && v < r.Lo:
			return false
		case r.HiOp == "<" && v >= r.Hi, r.HiOp == "<=" && v > r.Hi:
			return false
		}
		return true
	}
	for _, tc := range tests {
		e, err := ParseTagFilter(tc.where)
		if err != nil {
			t.Fatalf("%s: %v", tc.where, err)
		}
		r, c, ok := e.Lookup()
		if r != tc.want || c != tc.container || ok != tc.ok {
			t.Errorf("%s: Lookup = %+v, %q, %v; want %+v, %q, %v", tc.where, r, c, ok, tc.want, tc.container, tc.ok)
			continue
		}
		if !ok {
			continue
		}
		for _, tags := range samples {
			for _, cont := range []string{"logs", "other"} {
				if e.MatchIn(cont, tags) && (!inRange(r, tags) || c != "" && c != cont) {
					t.Errorf("%s: %v in %s matches but is outside the lookup %+v %q", tc.where, tags, cont, r, c)
				}
			}
		}
	}
	// An if-tags condition with OR has no single lookup.
	e, err := ParseTagCondition(`"a" = '1' OR "b" = '2'`)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := e.Lookup(); ok {
		t.Error("OR expression: Lookup ok")
	}
}

// TestApplyTier: Set Blob Tier's rule per blob type, premium tier sizes
// included.
func TestApplyTier(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    Blob
		tier string
		want svcerr.Code
	}{
		{"block Cool", Blob{Type: "BlockBlob"}, TierCool, ""},
		{"block premium", Blob{Type: "BlockBlob"}, "P10", svcerr.InvalidHeaderValue},
		{"append premium", Blob{Type: "AppendBlob"}, "P10", svcerr.InvalidHeaderValue},
		{"append Hot", Blob{Type: "AppendBlob"}, TierHot, svcerr.InvalidBlobType},
		{"page Hot", Blob{Type: "PageBlob"}, TierHot, svcerr.InvalidBlobType},
		{"page P10", Blob{Type: "PageBlob", Size: 128 << 30}, "P10", ""},
		{"page P10 too small", Blob{Type: "PageBlob", Size: 128<<30 + 512}, "P10", svcerr.BlobTierInadequateForContentLength},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.b
			err := applyTier(&b, tc.tier)
			svcerrtest.Code(t, err, tc.want)
			if err == nil && b.AccessTier != tc.tier {
				t.Fatalf("tier %q, want %q", b.AccessTier, tc.tier)
			}
			if err != nil && b.AccessTier != tc.b.AccessTier {
				t.Fatalf("a refused tier was set: %q", b.AccessTier)
			}
		})
	}
}

// TestCanonicalPremiumTier: premium page blob tiers in any case, with
// their size limits; standard tiers and look-alikes are not.
func TestCanonicalPremiumTier(t *testing.T) {
	for in, want := range map[string]int64{"p4": 32 << 30, "P10": 128 << 30, " P30 ": 1024 << 30, "P1": 4 << 30, "P80": 32767 << 30} {
		if _, max, ok := CanonicalPremiumTier(in); !ok || max != want {
			t.Errorf("CanonicalPremiumTier(%q) = %d, %v; want %d", in, max, ok, want)
		}
	}
	for _, in := range []string{"", "Hot", "P5", "P100", "P"} {
		if _, _, ok := CanonicalPremiumTier(in); ok {
			t.Errorf("CanonicalPremiumTier(%q) accepted", in)
		}
	}
}
