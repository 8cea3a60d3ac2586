package gateway

// Fuzz targets for the gateway's parsers of client bytes: Range /
// x-ms-range, Put Page's range, x-ms-source-range, the conditional headers and their HTTP dates, the Put Block
// List, Set Container ACL and Set Blob Service Properties bodies, block ids,
// container and blob names in the URL, the query string and the
// x-ms-lease-* headers. Seeds are values azblob sends (see the tests beside
// each parser) plus edges; they run in every plain `go test`. README shows
// how to run a long fuzz.

import (
	"bytes"
	"encoding/base64"
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
	"github.com/blobgw/blobgw/svcerr/svcerrtest"
)

// FuzzParseRange: Get Blob's x-ms-range / Range. A result is a non-empty
// window inside the blob, the whole blob when unranged, or 416.
func FuzzParseRange(f *testing.F) {
	for _, s := range []string{
		"bytes=0-1023", "bytes=0-", "bytes=-100", "bytes=5-4", "bytes=0-0,2-3", "items=0-1",
		"bytes=", "bytes=-0", "bytes=10-", " bytes=1-2 ", "bytes=+1-2", "bytes=9223372036854775807-",
		"bytes=0-9223372036854775807", "bytes=-9223372036854775808", "bytes=1-9223372036854775806",
	} {
		f.Add(s, int64(1024), true)
		f.Add(s, int64(0), false)
	}
	f.Fuzz(func(t *testing.T, v string, size int64, xms bool) {
		if size < 0 {
			return
		}
		h := http.Header{}
		if xms {
			h.Set("x-ms-range", v)
		} else {
			h.Set("Range", v)
		}
		start, end, ranged, err := parseRange(h, size)
		switch {
		case err != nil:
			if e := svcerrtest.ClientError(t, "parseRange", err); e.Code != svcerr.InvalidRange {
				t.Fatalf("parseRange(%q, %d): %v, want InvalidRange", v, size, err)
			}
		case !ranged:
			if start != 0 || end != size {
				t.Fatalf("parseRange(%q, %d) unranged = [%d, %d)", v, size, start, end)
			}
		default:
			if start < 0 || start >= end || end > size {
				t.Fatalf("parseRange(%q, %d) = [%d, %d), outside the blob", v, size, start, end)
			}
		}
	})
}

// FuzzParsePageRange: Put Page's x-ms-range / Range. A result is a
// non-empty run of whole pages inside the largest page blob, else a 4xx.
func FuzzParsePageRange(f *testing.F) {
	for _, s := range []string{
		"bytes=0-511", "bytes=512-1023", "bytes=0-510", "bytes=1-512", "bytes=0-", "bytes=-511", "bytes=",
		"bytes=0-9223372036854775807", "bytes=9223372036854775296-9223372036854775807",
		"bytes=8796093021696-8796093022207", "bytes=8796093022208-8796093022719", " bytes=0-511 ",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		h := http.Header{}
		h.Set("x-ms-range", v)
		start, end, err := parsePageRange(h)
		if err != nil {
			svcerrtest.ClientError(t, "parsePageRange", err)
			return
		}
		if start < 0 || start >= end || end > leasedb.MaxPageBlobSize || start%leasedb.PageSize != 0 || end%leasedb.PageSize != 0 {
			t.Fatalf("parsePageRange(%q) = [%d, %d): not whole pages of a page blob", v, start, end)
		}
	})
}

// FuzzParseSourceRange: x-ms-source-range of the From URL operations. A
// result is a window whose length (rangeLen) is positive, or -1 for an
// open end, else a 4xx.
func FuzzParseSourceRange(f *testing.F) {
	for _, s := range []string{
		"bytes=0-99", "bytes=5-", "bytes=0-0", "bytes=5-4", "bytes=-5", "bytes=", "items=0-1",
		"bytes=0-9223372036854775807", "bytes=9223372036854775807-", "bytes=1-9223372036854775807",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		start, end, err := parseSourceRange(v)
		if err != nil {
			svcerrtest.ClientError(t, "parseSourceRange", err)
			return
		}
		spec := &copySpec{ranged: true, start: start, end: end}
		n := spec.rangeLen()
		switch {
		case start < 0:
			t.Fatalf("parseSourceRange(%q) starts at %d", v, start)
		case end < 0 && n != -1, end >= 0 && n < 1:
			t.Fatalf("parseSourceRange(%q) = %d-%d, length %d", v, start, end, n)
		}
	})
}

// FuzzConditions: If-Match, If-None-Match, If-Modified-Since,
// If-Unmodified-Since and x-ms-if-tags. A failure is 400 naming a header;
// a date that parses is UTC and is the instant the header names; ETags come
// back unquoted and non-empty.
func FuzzConditions(f *testing.F) {
	f.Add(`"0x8DC0A1B2C3D4E5F"`, "*", "Mon, 01 Jan 2024 00:00:00 GMT", "", `"tag1"='value1'`, "")
	f.Add(`W/"abc", "def"`, `"x",,`, "Monday, 01-Jan-24 00:00:00 GMT", "Mon Jan  1 00:00:00 2024", "", "")
	f.Add("", "", "Mon, 01 Jan 2024 00:00:00 +0100", "not a date", `"a"='1' OR`, "Tue, 02 Jan 2024 00:00:00 GMT")
	f.Add(`"`, `""`, "", "Mon, 01 Jan 2024 00:00:00 GMT", `@container='c'`, "")
	f.Fuzz(func(t *testing.T, ifMatch, ifNoneMatch, ims, ius, ifTags, ims2 string) {
		h := http.Header{}
		set := func(k, v string) {
			if v != "" {
				h.Add(k, v)
			}
		}
		set("If-Match", ifMatch)
		set("If-None-Match", ifNoneMatch)
		set("If-Modified-Since", ims)
		set("If-Modified-Since", ims2)
		set("If-Unmodified-Since", ius)
		set("x-ms-if-tags", ifTags)
		c, err := parseConditions(h)
		if err != nil {
			e := svcerrtest.ClientError(t, "parseConditions", err)
			if e.Code != svcerr.InvalidHeaderValue {
				t.Fatalf("parseConditions: %v, want InvalidHeaderValue", err)
			}
			return
		}
		for _, et := range append(append([]string(nil), c.IfMatch...), c.IfNoneMatch...) {
			// An empty entity-tag ("" or W/"") is valid HTTP and matches
			// no ETag the gateway issues (nor the empty ETag of a
			// missing resource); anything else comes back non-empty.
			if et == "" && !strings.Contains(ifMatch+ifNoneMatch, `""`) {
				t.Fatalf("empty ETag from If-Match %q / If-None-Match %q", ifMatch, ifNoneMatch)
			}
			if et == "" && (leasedb.ETagMatches(`""`, et) || leasedb.ETagMatches(`"0x8DC0A1B2C3D4E5F"`, et)) {
				t.Fatalf("the empty ETag of %q / %q matches a stored ETag", ifMatch, ifNoneMatch)
			}
		}
		check := func(name, v string, tm time.Time, had bool) {
			if !had {
				return
			}
			want, err := http.ParseTime(strings.TrimSpace(v))
			if err != nil || !want.Equal(tm) || tm.Location() != time.UTC {
				t.Fatalf("%s %q parsed as %v (want %v, %v)", name, v, tm, want, err)
			}
		}
		if c.HadIMS && ims2 != "" && ims != "" {
			t.Fatalf("two If-Modified-Since headers accepted")
		}
		imsv := ims
		if imsv == "" {
			imsv = ims2
		}
		check("If-Modified-Since", imsv, c.IfModifiedSince, c.HadIMS)
		check("If-Unmodified-Since", ius, c.IfUnmodifiedSince, c.HadIUS)
		if (c.IfTags != nil) != (ifTags != "") {
			t.Fatalf("x-ms-if-tags %q gave %v", ifTags, c.IfTags)
		}
	})
}

// formatBlockList writes refs as a Put Block List body.
func formatBlockList(refs []leasedb.BlockRef) []byte {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?><BlockList>`)
	for _, r := range refs {
		tag := map[leasedb.BlockListKind]string{leasedb.BlockCommitted: "Committed",
			leasedb.BlockUncommitted: "Uncommitted", leasedb.BlockLatest: "Latest"}[r.Kind]
		b.WriteString("<" + tag + ">")
		xml.EscapeText(&b, []byte(r.ID))
		b.WriteString("</" + tag + ">")
	}
	b.WriteString("</BlockList>")
	return b.Bytes()
}

// FuzzParseBlockList: a Put Block List body is a list of base64 ids or 400
// InvalidXmlDocument / InvalidBlockList; what parses formats back to a body
// that parses to the same list.
func FuzzParseBlockList(f *testing.F) {
	a, b := base64.StdEncoding.EncodeToString([]byte("block-0001")), base64.StdEncoding.EncodeToString([]byte("block-0002"))
	for _, s := range []string{
		`<?xml version="1.0" encoding="utf-8"?><BlockList><Latest>` + a + `</Latest><Latest>` + b + `</Latest></BlockList>`,
		`<BlockList><Committed>` + a + `</Committed><Uncommitted>` + b + `</Uncommitted></BlockList>`,
		`<BlockList></BlockList>`, `<BlockList><Latest>!!</Latest></BlockList>`, `<BlockList><Latest><x/></Latest></BlockList>`,
		`<BlockList><Latest>` + a + `</Latest><Committed>` + a + `</Committed></BlockList>`, `<Other/>`, ``, `<BlockList>`,
		`<BlockList><Latest>` + a + `</Latest></BlockList><BlockList/>`, `<a:BlockList xmlns:a="x"><Latest>` + a + `</Latest></a:BlockList>`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		refs, err := parseBlockList(body)
		if err != nil {
			e := svcerrtest.ClientError(t, "parseBlockList", err)
			if e.Code != svcerr.InvalidXmlDocument && e.Code != svcerr.InvalidBlockList {
				t.Fatalf("parseBlockList: %v", err)
			}
			return
		}
		for _, r := range refs {
			if _, err := base64.StdEncoding.DecodeString(r.ID); err != nil || r.ID == "" {
				t.Fatalf("accepted block id %q", r.ID)
			}
		}
		again, err := parseBlockList(formatBlockList(refs))
		if err != nil || len(again) != len(refs) || len(refs) > 0 && !reflect.DeepEqual(again, refs) {
			t.Fatalf("round trip of %v: %v, %v", refs, again, err)
		}
	})
}

// FuzzParseBlockID: Put Block's blockid is base64 of 1..64 bytes or a 400.
func FuzzParseBlockID(f *testing.F) {
	for _, s := range []string{
		"YmxvY2stMDAwMQ==", base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xff}, 64)),
		base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 65)), "", "YQ", "YQ==\n", "****", "MDAwMDAwMDAtMDAwMC0wMDAwLTAwMDAtMDAwMDAwMDAwMDAw",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		got, err := parseBlockID(&request{query: map[string]string{"blockid": id}})
		if err != nil {
			svcerrtest.ClientError(t, "parseBlockID", err)
			return
		}
		raw, derr := base64.StdEncoding.DecodeString(got)
		if got != id || derr != nil || len(raw) == 0 || len(raw) > 64 {
			t.Fatalf("parseBlockID(%q) accepted %q", id, got)
		}
	})
}

// FuzzParseACL: a Set Container ACL body is up to five valid policies or a
// 400; what parses formats (as Get Container ACL writes it) back to a body
// that parses to the same policies.
func FuzzParseACL(f *testing.F) {
	for _, s := range []string{
		`<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers><SignedIdentifier><Id>policy1</Id><AccessPolicy><Start>2024-01-01T00:00:00.0000000Z</Start><Expiry>2024-01-02T00:00:00.0000000Z</Expiry><Permission>rwdl</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>`,
		`<SignedIdentifiers><SignedIdentifier><Id>p</Id><AccessPolicy><Expiry>2024-01-02</Expiry></AccessPolicy></SignedIdentifier><SignedIdentifier><Id>q</Id></SignedIdentifier></SignedIdentifiers>`,
		`<SignedIdentifiers/>`, `<SignedIdentifiers><SignedIdentifier><Id></Id></SignedIdentifier></SignedIdentifiers>`,
		`<SignedIdentifiers><SignedIdentifier><Id>p</Id><AccessPolicy><Start>2024-01-01T10:00Z</Start><Permission>z</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>`,
		`<Other/>`, ``, `<SignedIdentifiers><SignedIdentifier><Id>ü</Id><AccessPolicy><Start>2024-13-01</Start></AccessPolicy></SignedIdentifier></SignedIdentifiers>`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		parse := func(body []byte) ([]leasedb.SignedIdentifier, error) {
			r := httptest.NewRequest("PUT", "/a/c?restype=container&comp=acl", bytes.NewReader(body))
			var doc aclXML
			if err := readXML(r, 64<<10, &doc, true); err != nil {
				return nil, err
			}
			return parseACL(&doc)
		}
		acl, err := parse(body)
		if err != nil {
			svcerrtest.ClientError(t, "Set Container ACL", err)
			return
		}
		if len(acl) > leasedb.MaxSignedIdentifiers {
			t.Fatalf("accepted %d identifiers", len(acl))
		}
		out, err := xml.Marshal(formatACL(acl))
		if err != nil {
			t.Fatalf("formatACL: %v", err)
		}
		again, err := parse(out)
		if err != nil || len(again) != len(acl) {
			t.Fatalf("round trip of %s: %v, %v", out, again, err)
		}
		for i := range acl {
			a, b := acl[i], again[i]
			if a.ID != b.ID || !a.Start.Equal(b.Start) || !a.Expiry.Equal(b.Expiry) || a.Permission != b.Permission {
				t.Fatalf("round trip of %+v gave %+v (%s)", a, b, out)
			}
		}
	})
}

// serviceProps runs a Set Blob Service Properties body through the
// handler's checks and the merge onto old; it returns the stored document.
func serviceProps(old string, body []byte) (string, error) {
	var next propsDoc
	if err := xml.Unmarshal(body, &next); err != nil || next.XMLName.Local != "StorageServiceProperties" {
		return "", svcerr.New(svcerr.InvalidXmlDocument)
	}
	if err := refuseServiceProps(body, &next); err != nil {
		return "", err
	}
	if _, err := parseCORS(body); err != nil {
		return "", err
	}
	if _, _, err := parseDeleteRetention(body); err != nil {
		return "", err
	}
	return mergeServiceProps([]byte(old), &next)
}

// FuzzServiceProperties: a Set Blob Service Properties body is accepted or
// refused with a 4xx; an accepted one is stored as a document that itself
// passes the same checks (Get Blob Service Properties returns it and CORS
// preflights read it) with the same CORS rules, and setting it again
// changes nothing.
func FuzzServiceProperties(f *testing.F) {
	for _, s := range []string{
		defaultServiceProps,
		`<StorageServiceProperties><Cors><CorsRule><AllowedOrigins>http://a.example</AllowedOrigins><AllowedMethods>GET,PUT</AllowedMethods><AllowedHeaders>x-ms-*</AllowedHeaders><ExposedHeaders>*</ExposedHeaders><MaxAgeInSeconds>60</MaxAgeInSeconds></CorsRule></Cors></StorageServiceProperties>`,
		`<StorageServiceProperties><DeleteRetentionPolicy><Enabled>false</Enabled></DeleteRetentionPolicy></StorageServiceProperties>`,
		`<StorageServiceProperties><DeleteRetentionPolicy><Enabled>true</Enabled><Days>7</Days></DeleteRetentionPolicy></StorageServiceProperties>`,
		`<StorageServiceProperties><Logging a="1" b:c="2"><Read>false</Read></Logging><Cors/></StorageServiceProperties>`,
		`<StorageServiceProperties><Unknown/></StorageServiceProperties>`, `<StorageServiceProperties/>`, ``, `<Other/>`,
		`<StorageServiceProperties><Cors><CorsRule><AllowedOrigins>*</AllowedOrigins><AllowedMethods>TRACE</AllowedMethods></CorsRule></Cors></StorageServiceProperties>`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		doc, err := serviceProps(defaultServiceProps, body)
		if err != nil {
			svcerrtest.ClientError(t, "Set Blob Service Properties", err)
			return
		}
		again, err := serviceProps(doc, []byte(doc))
		if err != nil {
			t.Fatalf("stored document %s (from %q) is refused: %v", doc, body, err)
		}
		if again != doc {
			t.Fatalf("setting the stored document again changed it:\n%s\n%s", doc, again)
		}
		r1, err1 := parseCORS(body)
		r2, err2 := parseCORS([]byte(doc))
		if err1 != nil || err2 != nil || !reflect.DeepEqual(r1, r2) {
			t.Fatalf("CORS rules of %q: %v %v, stored %v %v", body, r1, err1, r2, err2)
		}
	})
}

// FuzzParseAddress: the container and blob names of the request URL. A
// name is valid (container rules; blob UTF-8, no control character, no
// U+FFFE or U+FFFF, ≤ 1024) or 400.
func FuzzParseAddress(f *testing.F) {
	for _, s := range []string{
		"/devstoreaccount1/cont/dir/a b+ü.txt", "/devstoreaccount1/$root/b", "/devstoreaccount1/Cont/b", "/devstoreaccount1/a--b",
		"/devstoreaccount1/ab/x", "/devstoreaccount1/cont/dir\\sub\\x", "/devstoreaccount1/cont/\xff", "/devstoreaccount1/cont/a\x00b",
		"/devstoreaccount1/cont/a\tb", "/devstoreaccount1/cont/a\u0085b", "/devstoreaccount1/cont/a\u00a0b",
		"/", "//cont", "/devstoreaccount1/cont/", "/devstoreaccount1/cont/" + strings.Repeat("x", 1025),
	} {
		f.Add(s, "127.0.0.1:10000")
		f.Add(s, "devstoreaccount1.blob.core.windows.net")
	}
	f.Fuzz(func(t *testing.T, path, host string) {
		s := &Server{}
		r := &http.Request{Method: "GET", URL: &url.URL{Path: path}, Host: host, Header: http.Header{}}
		var req request
		if err := s.parseAddress(r, &req); err != nil {
			svcerrtest.ClientError(t, "parseAddress", err)
			return
		}
		if req.account == "" {
			t.Fatalf("%q on %q: empty account accepted", path, host)
		}
		if req.container != "" && !validContainerName(req.container) {
			t.Fatalf("%q: container %q accepted", path, req.container)
		}
		if c := req.container; c != "" && c != "$root" && c != "$logs" && c != "$web" {
			if len(c) < 3 || len(c) > 63 || strings.Contains(c, "--") || c[0] == '-' || c[len(c)-1] == '-' || strings.Trim(c, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
				t.Fatalf("%q: container %q breaks the naming rules", path, c)
			}
		}
		if b := req.blob; b != "" && (len(b) > 1024 || strings.IndexFunc(b, func(r rune) bool { return unicode.IsControl(r) || r == 0xfffe || r == 0xffff }) >= 0 || !utf8.ValidString(b) || strings.Contains(b, `\`)) {
			t.Fatalf("%q: blob %q accepted", path, b)
		}
		if req.blob != "" && req.container == "" {
			t.Fatalf("%q: blob %q without a container", path, req.blob)
		}
	})
}

// FuzzParseQuery: the query string every operation reads (marker, prefix,
// blockid, where, ...). A query parses to lowercased names with UTF-8,
// NUL-free values, or is a 400.
func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{
		"restype=container&comp=list&prefix=dir%2F&marker=1ZGly&maxresults=5000&include=metadata,snapshots",
		"comp=block&blockid=YmxvY2stMDAwMQ%3D%3D", "comp=blobs&where=%22tag1%22%3D%27value1%27",
		"comp=list&Comp=acl", "a=1&a=1", "a=%zz", "a=1;b=2", "a=%00", "a=%ff", "%ff=1", "&&=&", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := parseQuery(raw)
		if err != nil {
			svcerrtest.ClientError(t, "parseQuery", err)
			return
		}
		for k, v := range q {
			if k != strings.ToLower(k) || !utf8.ValidString(k) || !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 || strings.IndexByte(k, 0) >= 0 {
				t.Fatalf("parseQuery(%q) gave %q=%q", raw, k, v)
			}
		}
	})
}

// FuzzLeaseHeaders: x-ms-lease-action, -id, proposed id, -duration and
// -break-period. Failures are 400 naming the header; ids come back as
// lowercase hyphenated GUIDs; durations and break periods are in range.
func FuzzLeaseHeaders(f *testing.F) {
	const id = "ca761232-ed42-11ce-bacd-00aa0057b223"
	f.Add("acquire", "", id, "15", "")
	f.Add("acquire", "", "", "-1", "")
	f.Add("renew", "{CA761232-ED42-11CE-BACD-00AA0057B223}", "", "", "")
	f.Add("change", "ca761232ed4211cebacd00aa0057b223", " (ca761232-ed42-11ce-bacd-00aa0057b223) ", "", "")
	f.Add("Release", id, "", "", "")
	f.Add("break", "", "", "", "60")
	f.Add("break", "", "", "", "-1")
	f.Add("steal", "x", "y", "99999999999999999999", "+5")
	f.Fuzz(func(t *testing.T, action, leaseID, proposed, duration, brk string) {
		req, err := parseLeaseRequest(action, leaseID, proposed, duration, brk)
		if err != nil {
			e := svcerrtest.ClientError(t, "parseLeaseRequest", err)
			if e.Code != svcerr.InvalidHeaderValue && e.Code != svcerr.MissingRequiredHeader {
				t.Fatalf("parseLeaseRequest: %v", err)
			}
			return
		}
		for _, g := range []string{req.ID, req.ProposedID} {
			if g == "" {
				continue
			}
			if n, ok := normalizeLeaseID(g); !ok || n != g || strings.ToLower(g) != g || len(g) != 36 {
				t.Fatalf("lease id %q is not normalized", g)
			}
		}
		switch req.Action {
		case leasedb.LeaseAcquire:
			if !leasedb.ValidLeaseDuration(req.Duration) {
				t.Fatalf("duration %d accepted", req.Duration)
			}
		case leasedb.LeaseBreak:
			if req.BreakPeriod < -1 || req.BreakPeriod > 60 {
				t.Fatalf("break period %d accepted", req.BreakPeriod)
			}
		case leasedb.LeaseRenew, leasedb.LeaseChange, leasedb.LeaseRelease:
			if req.ID == "" {
				t.Fatalf("%s without a lease id accepted", req.Action)
			}
		default:
			t.Fatalf("action %q accepted", req.Action)
		}
		// x-ms-lease-id on every other request: the same parser.
		got, err := leaseIDHeader(http.Header{"X-Ms-Lease-Id": {leaseID}})
		if err != nil {
			svcerrtest.ClientError(t, "leaseIDHeader", err)
		} else if leaseID != "" && got == "" {
			t.Fatalf("x-ms-lease-id %q dropped", leaseID)
		}
	})
}
