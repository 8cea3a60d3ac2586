package gateway

import (
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/blobgw/blobgw/svcerr"
)

func TestParseConditions(t *testing.T) {
	h := http.Header{}
	h.Set("If-Match", `"0x8D1", 0x8D2`)
	h.Set("If-None-Match", `*`)
	h.Set("If-Modified-Since", "Mon, 01 Jan 2024 00:00:00 GMT")
	h.Set("If-Unmodified-Since", "null")
	c, err := parseConditions(h)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.IfMatch) != 2 || c.IfMatch[0] != "0x8D1" || c.IfMatch[1] != "0x8D2" {
		t.Errorf("IfMatch = %q", c.IfMatch)
	}
	if len(c.IfNoneMatch) != 1 || c.IfNoneMatch[0] != "*" {
		t.Errorf("IfNoneMatch = %q", c.IfNoneMatch)
	}
	if !c.HadIMS || !c.IfModifiedSince.Equal(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("IMS = %v %v", c.HadIMS, c.IfModifiedSince)
	}
	if c.HadIUS {
		t.Errorf("unparsable If-Unmodified-Since must be ignored")
	}
	h.Add("If-Modified-Since", "Tue, 02 Jan 2024 00:00:00 GMT")
	if _, err := parseConditions(h); !svcerr.HasCode(err, svcerr.InvalidHeaderValue) {
		t.Errorf("repeated If-Modified-Since: err = %v", err)
	}
}

// Moved from leasedb's TestIfTagsConditions with the parser.
func TestParseIfTagsHeader(t *testing.T) {
	h := http.Header{}
	h.Set("x-ms-if-tags", `"k" = 'v'`)
	c, err := parseConditions(h)
	if err != nil || c.IfTags == nil {
		t.Fatalf("parseConditions: %v, %+v", err, c)
	}
	h.Set("x-ms-if-tags", `"k" = v`)
	_, err = parseConditions(h)
	if e, ok := svcerr.As(err); !ok || e.Code != svcerr.InvalidHeaderValue || len(e.Details) == 0 || e.Details[0][1] != "x-ms-if-tags" {
		t.Fatalf("bad x-ms-if-tags: err = %#v", err)
	}
}

// Each operation's spelling reads its own headers and no others, and
// errors name the header the client sent.
func TestConditionHeadersParse(t *testing.T) {
	const (
		date  = "Mon, 01 Jan 2024 00:00:00 GMT"
		date2 = "Tue, 02 Jan 2024 00:00:00 GMT"
	)
	day := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		n         conditionHeaders
		h         [][2]string
		ifMatch   []string
		inm       []string
		ims, ius  bool
		tags      bool
		errHeader string // HeaderName of the InvalidHeaderValue, "" for none
	}{
		{name: "standard none", n: standardConditions},
		{name: "standard all", n: standardConditions,
			h:       [][2]string{{"If-Match", `"a"`}, {"If-None-Match", `"b"`}, {"If-Modified-Since", date}, {"If-Unmodified-Since", date}, {"x-ms-if-tags", `"k" = 'v'`}},
			ifMatch: []string{"a"}, inm: []string{"b"}, ims: true, ius: true, tags: true},
		{name: "standard ignores x-ms-blob-if", n: standardConditions,
			h: [][2]string{{"x-ms-blob-if-match", `"a"`}, {"x-ms-blob-if-modified-since", date}}},
		{name: "blob tags reads x-ms-blob-if", n: blobTagConditions,
			h:       [][2]string{{"x-ms-blob-if-match", `"a"`}, {"x-ms-blob-if-none-match", `"b"`}, {"x-ms-blob-if-modified-since", date}, {"x-ms-blob-if-unmodified-since", date}, {"x-ms-if-tags", `"k" = 'v'`}},
			ifMatch: []string{"a"}, inm: []string{"b"}, ims: true, ius: true, tags: true},
		{name: "blob tags ignores plain If", n: blobTagConditions,
			h: [][2]string{{"If-Match", `"a"`}, {"If-None-Match", "*"}, {"If-Modified-Since", date}, {"If-Unmodified-Since", date}}},
		{name: "blob tags repeated date names sent header", n: blobTagConditions,
			h:         [][2]string{{"x-ms-blob-if-unmodified-since", date}, {"x-ms-blob-if-unmodified-since", date2}},
			errHeader: "x-ms-blob-if-unmodified-since"},
		{name: "if-tags only", n: ifTagsOnly,
			h:    [][2]string{{"If-Match", `"a"`}, {"If-Modified-Since", date}, {"x-ms-if-tags", `"k" = 'v'`}},
			tags: true},
		{name: "if-tags only repeated", n: ifTagsOnly,
			h:         [][2]string{{"x-ms-if-tags", `"k" = 'v'`}, {"x-ms-if-tags", `"k" = 'w'`}},
			errHeader: "x-ms-if-tags"},
		{name: "source reads x-ms-source-if", n: sourceConditions,
			h:       [][2]string{{"x-ms-source-if-match", `"a"`}, {"x-ms-source-if-none-match", `"b"`}, {"x-ms-source-if-modified-since", date}, {"x-ms-source-if-unmodified-since", date}, {"x-ms-source-if-tags", `"k" = 'v'`}},
			ifMatch: []string{"a"}, inm: []string{"b"}, ims: true, ius: true, tags: true},
		{name: "source ignores destination conditions", n: sourceConditions,
			h: [][2]string{{"If-Match", `"a"`}, {"x-ms-if-tags", `"k" = 'v'`}}},
		{name: "source bad tags names sent header", n: sourceConditions,
			h:         [][2]string{{"x-ms-source-if-tags", `"k" = v`}},
			errHeader: "x-ms-source-if-tags"},
		{name: "source repeated date names sent header", n: sourceConditions,
			h:         [][2]string{{"x-ms-source-if-modified-since", date}, {"x-ms-source-if-modified-since", date2}},
			errHeader: "x-ms-source-if-modified-since"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for _, kv := range tt.h {
				h.Add(kv[0], kv[1])
			}
			c, err := tt.n.parse(h)
			if tt.errHeader != "" {
				e, ok := svcerr.As(err)
				if !ok || e.Code != svcerr.InvalidHeaderValue || len(e.Details) == 0 || e.Details[0] != [2]string{"HeaderName", tt.errHeader} {
					t.Fatalf("err = %#v, want InvalidHeaderValue naming %s", err, tt.errHeader)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.IfMatch, tt.ifMatch) || !reflect.DeepEqual(c.IfNoneMatch, tt.inm) {
				t.Errorf("IfMatch %q IfNoneMatch %q, want %q %q", c.IfMatch, c.IfNoneMatch, tt.ifMatch, tt.inm)
			}
			if c.HadIMS != tt.ims || c.HadIUS != tt.ius {
				t.Errorf("HadIMS %v HadIUS %v, want %v %v", c.HadIMS, c.HadIUS, tt.ims, tt.ius)
			}
			if tt.ims && !c.IfModifiedSince.Equal(day) || tt.ius && !c.IfUnmodifiedSince.Equal(day) {
				t.Errorf("dates %v %v, want %v", c.IfModifiedSince, c.IfUnmodifiedSince, day)
			}
			if (c.IfTags != nil) != tt.tags {
				t.Errorf("IfTags = %v, want present=%v", c.IfTags, tt.tags)
			}
		})
	}
}

func TestParseConditionDate(t *testing.T) {
	day := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		vals    []string
		want    time.Time
		ok      bool
		wantErr bool
	}{
		{"absent", nil, time.Time{}, false, false},
		{"RFC 1123", []string{"Mon, 01 Jan 2024 00:00:00 GMT"}, day, true, false},
		{"padded", []string{"  Mon, 01 Jan 2024 00:00:00 GMT "}, day, true, false},
		{"RFC 850", []string{"Monday, 01-Jan-24 00:00:00 GMT"}, day, true, false},
		{"unparsable ignored", []string{"yesterday"}, time.Time{}, false, false},
		{"empty ignored", []string{""}, time.Time{}, false, false},
		{"repeated", []string{"Mon, 01 Jan 2024 00:00:00 GMT", "Mon, 01 Jan 2024 00:00:00 GMT"}, time.Time{}, false, true},
		{"repeated unparsable", []string{"x", "y"}, time.Time{}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := parseConditionDate("If-Modified-Since", tt.vals)
			if tt.wantErr {
				if !svcerr.HasCode(err, svcerr.InvalidHeaderValue) {
					t.Fatalf("err = %v, want InvalidHeaderValue", err)
				}
				return
			}
			if err != nil || ok != tt.ok || !got.Equal(tt.want) {
				t.Fatalf("= %v, %v, %v; want %v, %v", got, ok, err, tt.want, tt.ok)
			}
			if ok && got.Location() != time.UTC {
				t.Errorf("location = %v, want UTC", got.Location())
			}
		})
	}
}

func TestSplitETags(t *testing.T) {
	tests := []struct {
		name string
		vals []string
		want []string
	}{
		{"absent", nil, nil},
		{"one quoted", []string{`"0x8D1"`}, []string{"0x8D1"}},
		{"unquoted", []string{`0x8D1`}, []string{"0x8D1"}},
		{"star", []string{`*`}, []string{"*"}},
		{"list", []string{`"a", b ,"c"`}, []string{"a", "b", "c"}},
		{"repeated headers", []string{`"a"`, `"b"`}, []string{"a", "b"}},
		{"weak prefix", []string{`W/"a"`}, []string{"a"}},
		{"empty items dropped", []string{` , "a",,`}, []string{"a"}},
		{"only commas", []string{`,,`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := splitETags(tt.vals); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("splitETags(%q) = %q, want %q", tt.vals, got, tt.want)
			}
		})
	}
}
