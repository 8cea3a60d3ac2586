package gateway_test

import (
	"context"
	"encoding/xml"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// listPage is what TestListStartFrom reads of a List Blobs response:
// the entries in order (prefixes as "<name>") and the next marker.
type listPage struct {
	entries []string
	next    string
}

// TestListStartFrom: List Blobs startFrom (hand-built: the SDK in go.mod
// does not send it) starts the listing at the name, inclusive, with a
// prefix, a delimiter (a name at or after it that rolls up lists its
// prefix) and a marker (whichever is further on), page after page with
// startFrom sent again; endBefore is refused as Azure refuses it on
// accounts without Arrow listing, and nothing is listed.
func TestListStartFrom(t *testing.T) {
	forKinds(t, []string{"sqlite", "postgres"}, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "sfrom")
		for _, n := range []string{"a/1", "a/2", "b/1", "b/2", "b/3", "c", "d/x/1", "e"} {
			if _, err := b.client.UploadBuffer(ctx, "sfrom", n, []byte(n), nil); err != nil {
				t.Fatal(err)
			}
		}
		get := func(query string) (int, string, listPage) {
			t.Helper()
			resp, body := b.do(t, http.MethodGet, "sfrom?restype=container&comp=list&"+query, "", nil)
			if resp.StatusCode != http.StatusOK {
				return resp.StatusCode, resp.Header.Get("x-ms-error-code"), listPage{}
			}
			var doc struct {
				Blobs struct {
					Entries []struct {
						XMLName xml.Name
						Name    string `xml:"Name"`
					} `xml:",any"`
				} `xml:"Blobs"`
				NextMarker string `xml:"NextMarker"`
			}
			if err := xml.Unmarshal([]byte(body), &doc); err != nil {
				t.Fatalf("%s: %v\n%s", query, err, body)
			}
			var p listPage
			for _, e := range doc.Blobs.Entries {
				if e.XMLName.Local == "BlobPrefix" {
					p.entries = append(p.entries, "<"+e.Name+">")
				} else {
					p.entries = append(p.entries, e.Name)
				}
			}
			p.next = doc.NextMarker
			return resp.StatusCode, "", p
		}
		// all pages through the listing, sending query (and so
		// startFrom) with every page, as the SDKs do.
		all := func(query string) string {
			t.Helper()
			var out []string
			marker := ""
			for i := 0; ; i++ {
				q := query
				if marker != "" {
					q += "&marker=" + url.QueryEscape(marker)
				}
				status, code, p := get(q)
				if status != http.StatusOK {
					t.Fatalf("%s: %d %s", q, status, code)
				}
				out = append(out, p.entries...)
				if p.next == "" || i > 20 {
					return strings.Join(out, " ")
				}
				marker = p.next
			}
		}
		tests := []struct{ query, want string }{
			{"startFrom=b%2F2", "b/2 b/3 c d/x/1 e"},
			{"startFrom=b%2F25", "b/3 c d/x/1 e"},
			{"startFrom=b%2F2&prefix=b%2F", "b/2 b/3"},
			{"startFrom=a&prefix=b%2F", "b/1 b/2 b/3"},
			{"startFrom=c0&prefix=b%2F", ""},
			{"startFrom=b%2F2&delimiter=%2F", "<b/> c <d/> e"},
			{"startFrom=b%2F4&delimiter=%2F", "c <d/> e"},
			{"startFrom=d%2Fx%2F1&delimiter=%2F&prefix=d%2F", "<d/x/>"},
			{"startFrom=zzz", ""},
			{"startFrom=", "a/1 a/2 b/1 b/2 b/3 c d/x/1 e"},
			{"startFrom=a%2F2&maxresults=2", "a/2 b/1 b/2 b/3 c d/x/1 e"},
			{"startFrom=a%2F2&maxresults=1&delimiter=%2F", "<a/> <b/> c <d/> e"},
		}
		for _, tc := range tests {
			if got := all(tc.query); got != tc.want {
				t.Errorf("%s: got [%s], want [%s]", tc.query, got, tc.want)
			}
		}

		// A marker further on than startFrom wins; one before it
		// does not.
		_, _, first := get("maxresults=3")
		if first.next == "" {
			t.Fatal("no marker after 3 of 8")
		}
		m := url.QueryEscape(first.next)
		for _, tc := range []struct{ query, want string }{
			{"startFrom=a%2F2&marker=" + m, "b/2 b/3 c d/x/1 e"},
			{"startFrom=c&marker=" + m, "c d/x/1 e"},
		} {
			if _, _, p := get(tc.query); strings.Join(p.entries, " ") != tc.want {
				t.Errorf("%s: got %v, want [%s]", tc.query, p.entries, tc.want)
			}
		}

		for _, q := range []string{"endBefore=c", "startFrom=a&endBefore=c", "endbefore=c&delimiter=%2F"} {
			status, code, _ := get(q)
			if status != http.StatusBadRequest || code != "OperationNotSupportedWithFeatureMissing" {
				t.Errorf("%s: %d %s, want 400 OperationNotSupportedWithFeatureMissing", q, status, code)
			}
		}
		if status, code, _ := get("startFrom=%FF"); status != http.StatusBadRequest || code != "InvalidQueryParameterValue" {
			t.Errorf("startFrom=%%FF: %d %s, want 400 InvalidQueryParameterValue", status, code)
		}
	})
}
