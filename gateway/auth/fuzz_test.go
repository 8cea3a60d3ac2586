package auth

// Fuzz targets for the authentication parsers: the Shared Key
// Authorization header, the Shared Key canonicalization, and SAS query
// tokens. The seeds are requests as azblob sends them (the fixed vectors
// and oracle tests of sharedkey_test.go and sas_test.go) and run in every
// plain `go test`; see README for long runs.

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/blobgw/blobgw/svcerr/svcerrtest"
)

// fuzzRequest builds a server-side request (RequestURI as on the wire) or
// nil when path/query cannot be a request line.
func fuzzRequest(method, path, rawQuery string) *http.Request {
	if strings.ContainsAny(path, "?# \r\n\x00") || strings.ContainsAny(rawQuery, "# \r\n\x00") {
		return nil
	}
	uri := "/" + path
	if rawQuery != "" {
		uri += "?" + rawQuery
	}
	u, err := url.ParseRequestURI(uri)
	if err != nil {
		return nil
	}
	return &http.Request{Method: method, URL: u, RequestURI: uri, Header: http.Header{}, Host: "127.0.0.1"}
}

// FuzzSharedKeySign: a request signed with auth.Sign of its own
// StringToSign always verifies, and a single-byte change of any signed
// x-ms-* value (one that survives the trimming HTTP itself does) fails.
func FuzzSharedKeySign(f *testing.F) {
	// Requests as azblob sends them: Put Blob, Put Block, Get Blob with a
	// range, List Blobs, Set Metadata.
	f.Add("PUT", "devstoreaccount1/cont/dir/a%20b%2B%C3%BC.txt", "", "BlockBlob", "meta", "v1", "2023-11-03", 0, byte('x'))
	f.Add("PUT", "devstoreaccount1/cont/blob", "comp=block&blockid=YmxvY2stMDAwMQ%3D%3D", "", "a_b", "1", "2021-12-02", 3, byte('-'))
	f.Add("GET", "devstoreaccount1/cont/blob", "", "bytes=0-1023", "k", "é", "2025-01-05", 1, byte(' '))
	f.Add("GET", "devstoreaccount1/cont", "restype=container&comp=list&prefix=dir%2F&include=metadata&maxresults=5000", "", "x", "", "2025-01-05", 0, byte(0))
	f.Add("PUT", "devstoreaccount1/cont/blob", "comp=metadata&Comp=metadata", "", "UPPER", " padded value ", "2019-02-02", 2, byte('\t'))
	f.Add("DELETE", "", "a=1&a=2&b", "", "m", "a,b", "2009-09-19", 5, byte(','))
	f.Fuzz(func(t *testing.T, method, path, rawQuery, range_, metaName, metaValue, version string, at int, repl byte) {
		r := fuzzRequest(method, path, rawQuery)
		if r == nil {
			return
		}
		if _, err := url.ParseQuery(rawQuery); err != nil {
			// Unsignable: the verifier must refuse it as a 4xx.
			r.Header.Set("X-Ms-Date", vectorDate)
			r.Header.Set("Authorization", "SharedKey "+devAccount+":"+Sign(mustKey(t, devKey), StringToSign(r, devAccount)))
			_, err := VerifySharedKey(r, testAccounts(t), devAccount, vectorNow)
			if err == nil {
				t.Fatalf("query %q does not parse but verified", rawQuery)
			}
			svcerrtest.ClientError(t, "VerifySharedKey", err)
			return
		}
		h := r.Header
		h.Set("X-Ms-Date", vectorDate)
		if version != "" {
			h.Set("X-Ms-Version", version)
		}
		if range_ != "" {
			h.Set("X-Ms-Range", range_)
		}
		if metaName != "" && validHeaderText(metaName, true) {
			h.Set("X-Ms-Meta-"+metaName, metaValue)
		}
		for _, vs := range h {
			for _, v := range vs {
				if !validHeaderText(v, false) {
					return // not a value HTTP/1.1 can carry
				}
			}
		}
		accts := testAccounts(t)
		for _, key := range []string{devKey, devKey2} {
			h.Set("Authorization", "SharedKey "+devAccount+":"+Sign(mustKey(t, key), StringToSign(r, devAccount)))
			if _, err := VerifySharedKey(r, accts, devAccount, vectorNow); err != nil {
				t.Fatalf("self-signed request does not verify: %v\n%q", err, StringToSign(r, devAccount))
			}
		}

		// Change one byte of one signed x-ms-* value.
		var names []string
		for n := range h {
			if strings.HasPrefix(strings.ToLower(n), "x-ms-") {
				names = append(names, n)
			}
		}
		if len(names) == 0 || at < 0 {
			return
		}
		sortStrings(names)
		n := names[at%len(names)]
		old := h.Get(n)
		if old == "" {
			return
		}
		i := (at / len(names)) % len(old)
		if old[i] == repl {
			return
		}
		changed := old[:i] + string([]byte{repl}) + old[i+1:]
		if !validHeaderText(changed, false) || strings.TrimSpace(changed) == strings.TrimSpace(old) {
			return
		}
		h.Set(n, changed)
		if strings.EqualFold(n, "x-ms-date") {
			// A changed date may no longer parse or be fresh: any refusal
			// is right, acceptance only if the signature still matched.
			if _, err := VerifySharedKey(r, accts, devAccount, vectorNow); err == nil {
				t.Fatalf("changed x-ms-date %q -> %q still verifies", old, changed)
			}
			return
		}
		_, err := VerifySharedKey(r, accts, devAccount, vectorNow)
		if err == nil {
			t.Fatalf("changed %s %q -> %q still verifies", n, old, changed)
		}
		svcerrtest.ClientError(t, "VerifySharedKey", err)
	})
}

// validHeaderText reports whether s can be sent as a header value (or,
// with name, a header name token).
func validHeaderText(s string, name bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if name {
			if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
				return false
			}
			continue
		}
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// FuzzSharedKeyHeader: whatever the Authorization, x-ms-date and Date
// headers carry, VerifySharedKey answers ErrNoCredentials (no header) or a
// 4xx *svcerr.Error, and never accepts an unsigned request.
func FuzzSharedKeyHeader(f *testing.F) {
	f.Add("SharedKey devstoreaccount1:c2lnbmF0dXJl", vectorDate, "")
	f.Add("SharedKey devstoreaccount1:", vectorDate, "")
	f.Add("SharedKey  devstoreaccount1 : abc", "", vectorDate)
	f.Add("Bearer eyJ0eXAi", "Mon, 01 Jan 2024 00:10:00 GMT", "")
	f.Add("SharedKeyLite devstoreaccount1:c2ln", "Monday, 01-Jan-24 00:00:00 GMT", "")
	f.Add("SharedKey otheraccount:c2ln", "Mon Jan  1 00:00:00 2024", "")
	f.Add("SharedKey devstoreaccount1:!!!", "Mon, 01 Jan 1990 00:00:00 GMT", "Mon, 01 Jan 2024 00:00:00 GMT")
	f.Add("", "", "")
	f.Fuzz(func(t *testing.T, authz, msDate, date string) {
		r := fuzzRequest("GET", "devstoreaccount1/cont/blob", "")
		for _, h := range [][2]string{{"Authorization", authz}, {"X-Ms-Date", msDate}, {"Date", date}} {
			if h[1] != "" { // an empty fuzz value: the header is not sent
				r.Header.Set(h[0], h[1])
			}
		}
		_, err := VerifySharedKey(r, testAccounts(t), devAccount, vectorNow)
		switch {
		case err == nil:
			t.Fatalf("Authorization %q verified without a real signature", authz)
		case errors.Is(err, ErrNoCredentials):
			if authz != "" {
				t.Fatalf("Authorization %q reported as absent", authz)
			}
		default:
			svcerrtest.ClientError(t, "VerifySharedKey", err)
		}
	})
}

// FuzzSAS: VerifySAS over any query answers a 4xx *svcerr.Error or an
// account; a service SAS whose fields are the fuzzed ones and whose sig
// is computed with the service SAS layout written out in sas_test.go never
// fails on its signature; and the token parser ParseTime (st, se, stored
// policy times) returns UTC times that format back to what they parse
// from.
func FuzzSAS(f *testing.F) {
	// Tokens as azblob's sas.BlobSignatureValues and
	// sas.AccountSignatureValues encode them.
	f.Add("sv=2023-11-03&st=2024-01-01T00%3A00%3A00Z&se=2024-01-02T00%3A00%3A00Z&sr=b&sp=rw&sig=c2ln", "cont", "dir/a b+ü.txt", "", 9, true, "127.0.0.1")
	f.Add("sv=2021-12-02&ss=b&srt=sco&sp=rwdlacx&se=2024-01-02T00%3A00%3A00Z&spr=https&sig=c2ln", "cont", "", "", 8, true, "10.0.0.1")
	f.Add("sv=2020-12-06&sr=bs&sp=r&se=2024-01-02&sip=10.0.0.0-10.0.0.255&sig=c2ln", "cont", "b", "2024-01-01T10:00:00.0000000Z", 9, false, "10.0.0.7")
	f.Add("sv=2019-12-12&si=policy1&sr=c&sig=c2ln&rscc=no-cache&rsct=text%2Fplain", "cont", "", "", 8, false, "::1")
	f.Add("sv=2015-04-05&sr=c&sp=l&se=2024-01-01T13:00Z&SIG=x&sig=y", "cont", "", "", 8, false, "")
	f.Add("sv=2013-08-15&sr=b&sp=r&se=2024-01-02T00:00:00.1234567Z&sig=c2ln&skoid=x", "cont", "b", "", 9, false, "")
	f.Fuzz(func(t *testing.T, rawQuery, container, blob, snapshot string, op int, https bool, ip string) {
		q, err := url.ParseQuery(rawQuery)
		if err != nil {
			return
		}
		ops := allOps()
		req := SASRequest{
			Query:    q,
			Resource: Resource{Account: devAccount, Container: container, Blob: blob, Snapshot: snapshot},
			Op:       ops[((op%len(ops))+len(ops))%len(ops)],
			HTTPS:    https,
			ClientIP: net.ParseIP(ip),
			Now:      sasNow,
		}
		pol := func(c, id string) (StoredPolicy, bool) {
			if id == "policy1" {
				return StoredPolicy{ID: id, Expiry: sasEnd, Permission: "rl"}, true
			}
			return StoredPolicy{}, false
		}
		if _, err := VerifySAS(req, testAccounts(t), pol); err != nil {
			svcerrtest.ClientError(t, "VerifySAS", err)
		}

		// Sign the fuzzed fields as a client would.
		for k := range q {
			if lk := strings.ToLower(k); lk != k && sasParamNames[lk] {
				return
			}
		}
		if q.Get("sr") != "" && q.Get("sv") >= svEncScope {
			signed := signSvc(t, devKey, q, req.Resource)
			req.Query = signed
			_, err := VerifySAS(req, testAccounts(t), pol)
			if err != nil && strings.Contains(errText(err), "Signature did not match") {
				t.Fatalf("correctly signed token refused on its signature: %v", errText(err))
			}
		}

		for _, k := range []string{"st", "se"} {
			v := q.Get(k)
			tm, ok := ParseTime(v)
			if !ok {
				continue
			}
			if tm.Location() != time.UTC {
				t.Fatalf("ParseTime(%q) = %v, not UTC", v, tm)
			}
			if back, ok := ParseTime(tm.Format("2006-01-02T15:04:05.0000000Z")); !ok || !back.Equal(tm) {
				t.Fatalf("ParseTime(%q) = %v does not round trip (%v, %v)", v, tm, back, ok)
			}
		}
	})
}
