package gateway

import (
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/blobgw/blobgw/svcerr"
)

// checkHeaderText refuses a request header that is not UTF-8 where the
// gateway keeps or compares its value: metadata (x-ms-meta-*, which would
// otherwise be stored with U+FFFD in place of the bytes sent), content
// headers stored as blob properties, tags and tag conditions, the copy
// source, the conditional headers. The stores cannot hold such text, and
// a store's refusal would surface as a 500 that SDKs retry. Headers the
// gateway never reads (User-Agent, ...) are left alone.
func checkHeaderText(h http.Header) error {
	for k, vs := range h {
		for _, v := range vs {
			if utf8.ValidString(v) {
				continue
			}
			// Only an invalid value costs the name lookup: this runs
			// on every request.
			lk := strings.ToLower(k)
			if !textHeader(lk) {
				break
			}
			shown := strings.ToValidUTF8(v, "\uFFFD")
			if strings.HasPrefix(lk, metaPrefix) {
				// Set Blob Metadata, Put Blob, Create Container, ...:
				// a metadata value must be text.
				e := svcerr.Header(svcerr.InvalidMetadata, k, shown)
				e.Message = "The metadata value of " + k + " is not valid UTF-8."
				return e
			}
			return svcerr.Header(svcerr.InvalidHeaderValue, k, shown)
		}
	}
	return nil
}

func textHeader(lk string) bool {
	switch {
	case strings.HasPrefix(lk, "x-ms-"), strings.HasPrefix(lk, "content-"), strings.HasPrefix(lk, "if-"):
		return true
	}
	return lk == "cache-control" || lk == "range"
}

// textURL reports whether a copy source URL names its blob, snapshot and
// SAS fields in UTF-8 once %-decoded, and its query parses: a source in
// this gateway is looked up by that name, and a version or snapshot
// parameter dropped by a lenient parse would read another blob.
func textURL(u *url.URL) bool {
	if !utf8.ValidString(u.Path) {
		return false
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return false
	}
	for k, vs := range q {
		if !utf8.ValidString(k) {
			return false
		}
		for _, v := range vs {
			if !utf8.ValidString(v) {
				return false
			}
		}
	}
	return true
}
