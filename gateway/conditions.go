package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

// Conditional headers are parsed here, at the edge; leasedb evaluates the
// typed leasedb.Conditions under the row lock and never sees a header.

// conditionHeaders names the headers one operation reads its conditions
// from. Operations spell the same five conditions differently: the plain
// If-* headers on most reads and writes, x-ms-blob-if-* on Get/Set Blob
// Tags (where the plain ones would be about the tags), x-ms-source-if-* for
// a copy source. An empty name is a condition the operation does not read.
type conditionHeaders struct {
	ifMatch, ifNoneMatch, ifModifiedSince, ifUnmodifiedSince, ifTags string
}

var (
	// standardConditions: If-Match, If-None-Match, If-Modified-Since,
	// If-Unmodified-Since and x-ms-if-tags.
	standardConditions = conditionHeaders{"If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since", "x-ms-if-tags"}
	// ifTagsOnly: Set Blob Tier and Get Block List accept only x-ms-if-tags.
	ifTagsOnly = conditionHeaders{ifTags: "x-ms-if-tags"}
	// noConditions: Put Block, Put Block From URL and Undelete Blob
	// accept none.
	noConditions = conditionHeaders{}
	// blobTagConditions: Get/Set Blob Tags take the standard conditions in
	// their x-ms-blob-if-* spelling (newer SDKs send them there).
	blobTagConditions = conditionHeaders{"x-ms-blob-if-match", "x-ms-blob-if-none-match",
		"x-ms-blob-if-modified-since", "x-ms-blob-if-unmodified-since", "x-ms-if-tags"}
	// sourceConditions: Copy Blob, Put Blob From URL and Put Block From URL
	// evaluate x-ms-source-if-* against the copy source.
	sourceConditions = conditionHeaders{"x-ms-source-if-match", "x-ms-source-if-none-match",
		"x-ms-source-if-modified-since", "x-ms-source-if-unmodified-since", "x-ms-source-if-tags"}
)

// names lists the header names in a fixed order (If-Match, If-None-Match,
// If-Modified-Since, If-Unmodified-Since, x-ms-if-tags), so two spellings
// pair up by index.
func (n conditionHeaders) names() [5]string {
	return [5]string{n.ifMatch, n.ifNoneMatch, n.ifModifiedSince, n.ifUnmodifiedSince, n.ifTags}
}

// parseConditions reads the standard conditional headers.
func parseConditions(h http.Header) (leasedb.Conditions, error) {
	return standardConditions.parse(h)
}

// parse reads the headers n names. ETag lists may be comma-separated and
// repeated. Unparsable dates are ignored, as Azure does; a repeated date
// or x-ms-if-tags header is 400 InvalidHeaderValue naming the header sent.
func (n conditionHeaders) parse(h http.Header) (leasedb.Conditions, error) {
	var c leasedb.Conditions
	c.IfMatch = splitETags(values(h, n.ifMatch))
	c.IfNoneMatch = splitETags(values(h, n.ifNoneMatch))
	var err error
	if c.IfModifiedSince, c.HadIMS, err = parseConditionDate(n.ifModifiedSince, values(h, n.ifModifiedSince)); err != nil {
		return c, err
	}
	if c.IfUnmodifiedSince, c.HadIUS, err = parseConditionDate(n.ifUnmodifiedSince, values(h, n.ifUnmodifiedSince)); err != nil {
		return c, err
	}
	if c.IfTags, err = parseIfTags(n.ifTags, values(h, n.ifTags)); err != nil {
		return c, err
	}
	return c, nil
}

// parseOnly is parse for a write that takes only the conditions n names
// (ifTagsOnly, noConditions, blobTagConditions; Get Blob Tags too, whose
// answer carries no validator): a standard condition header it does not
// name is 400 ConditionHeadersNotSupported naming it, never ignored, so
// what the client meant to guard is not done unguarded. Reads (Get Block
// List) keep parse: a browser's cache adds If-None-Match and
// If-Modified-Since to a GET it revalidates, and Azure answers those.
func (n conditionHeaders) parseOnly(h http.Header) (leasedb.Conditions, error) {
	own := n.names()
	for i, name := range standardConditions.names() {
		if own[i] != name {
			if vs := values(h, name); len(vs) > 0 {
				return leasedb.Conditions{}, svcerr.Header(svcerr.ConditionHeadersNotSupported, name, strings.Join(vs, ","))
			}
		}
	}
	return n.parse(h)
}

// values is h.Values(name), nothing for an unnamed condition.
func values(h http.Header, name string) []string {
	if name == "" {
		return nil
	}
	return h[hdrKey(name)]
}

// parseConditionDate reads one If-Modified-Since / If-Unmodified-Since
// style header: ok is false when it is absent or unparsable (ignored, as
// Azure does); a repeated header is 400 InvalidHeaderValue.
func parseConditionDate(name string, vals []string) (t time.Time, ok bool, err error) {
	switch len(vals) {
	case 0:
		return time.Time{}, false, nil
	case 1:
		t, err := http.ParseTime(strings.TrimSpace(vals[0]))
		if err != nil {
			return time.Time{}, false, nil
		}
		return t.UTC(), true, nil
	}
	return time.Time{}, false, svcerr.Header(svcerr.InvalidHeaderValue, name, strings.Join(vals, ","))
}

// parseIfTags reads an x-ms-if-tags (or x-ms-source-if-tags) predicate:
// nil when absent; a repeated header or one that does not parse is 400
// InvalidHeaderValue, with the parser's reason in the message.
func parseIfTags(name string, vals []string) (*leasedb.TagExpr, error) {
	switch len(vals) {
	case 0:
		return nil, nil
	case 1:
	default:
		return nil, svcerr.Header(svcerr.InvalidHeaderValue, name, strings.Join(vals, ","))
	}
	e, err := leasedb.ParseTagCondition(vals[0])
	if err != nil {
		return nil, &svcerr.Error{Code: svcerr.InvalidHeaderValue, Message: name + ": " + tagParseMessage(err),
			Details: [][2]string{{"HeaderName", name}, {"HeaderValue", vals[0]}}}
	}
	return e, nil
}

// tagParseMessage words a tag expression's parse error as Azure does
// ("Error parsing query at or near character position N: ...").
func tagParseMessage(err error) string {
	var te *leasedb.TagExprError
	switch {
	case !errors.As(err, &te):
		return "Error parsing query: " + err.Error()
	case te.Pos == 0:
		return "Error parsing query: " + te.Msg
	}
	return fmt.Sprintf("Error parsing query at or near character position %d: %s", te.Pos, te.Msg)
}

// splitETags reads If-Match / If-None-Match values: comma-separated lists,
// possibly repeated, each ETag with its quotes (and any W/ prefix) removed.
func splitETags(vals []string) []string {
	var out []string
	for _, v := range vals {
		// strings.Cut, not Split: no slice of parts per header.
		for v != "" {
			var p string
			p, v, _ = strings.Cut(v, ",")
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, leasedb.UnquoteETag(p))
			}
		}
	}
	return out
}
