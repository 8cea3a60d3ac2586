package leasedb

import (
	"errors"
	"strings"
	"time"

	"github.com/blobgw/blobgw/svcerr"
)

// Conditions are the standard conditional headers of one request
// (If-Match, If-None-Match, If-Modified-Since, If-Unmodified-Since,
// x-ms-if-tags). Zero value: no conditions.
type Conditions struct {
	IfMatch           []string // ETags without surrounding quotes, or "*"
	IfNoneMatch       []string
	IfModifiedSince   time.Time // zero when absent or unparsable
	IfUnmodifiedSince time.Time
	// HadIMS/HadIUS record presence of a parsable header.
	HadIMS, HadIUS bool
	// IfTags is the parsed x-ms-if-tags predicate; nil when absent. It is
	// evaluated against the blob's tags with the other conditions, inside
	// the same transaction; containers ignore it.
	IfTags *TagExpr
}

// Any reports whether any standard condition is present.
func (c Conditions) Any() bool {
	return len(c.IfMatch) > 0 || len(c.IfNoneMatch) > 0 || c.HadIMS || c.HadIUS
}

// unquote strips one pair of surrounding double quotes (and a W/ prefix,
// which Azure ETags never carry but proxies sometimes add).
func unquote(s string) string {
	s = strings.TrimPrefix(s, "W/")
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return s[1 : len(s)-1]
	}
	return s
}

// UnquoteETag is an ETag as the conditional headers compare it: without
// its surrounding quotes (and W/ prefix).
func UnquoteETag(s string) string { return unquote(s) }

// ETagMatches compares a stored (quoted) ETag with a header value. The
// empty entity-tag (If-Match: "") matches nothing, not even the empty
// ETag of a resource that does not exist.
func ETagMatches(stored, value string) bool {
	return value == "*" || (value != "" && unquote(stored) == value)
}

// Resource is the state a condition is evaluated against.
type Resource struct {
	Exists       bool
	ETag         string
	LastModified time.Time
	// Tags are a blob's index tags, for x-ms-if-tags.
	Tags map[string]string
	// Container marks a container: x-ms-if-tags does not apply.
	Container bool
}

// tagsPass evaluates x-ms-if-tags against an existing resource.
func (c Conditions) tagsPass(r Resource) bool {
	return c.IfTags == nil || r.Container || c.IfTags.Match(r.Tags)
}

// FailsOnMissing reports whether a write against a missing blob fails its
// conditions (412 ConditionNotMet) rather than reporting 404: If-Match
// needs the blob, and so does x-ms-if-tags.
func (c Conditions) FailsOnMissing() bool {
	return len(c.IfMatch) > 0 || c.IfTags != nil
}

// missingBlob is the answer to a write of a blob that does not exist: 412
// ConditionNotMet when a condition needs the blob (FailsOnMissing), else
// 404 BlobNotFound.
func (c Conditions) missingBlob() error {
	if c.FailsOnMissing() {
		return svcerr.New(svcerr.ConditionNotMet)
	}
	return svcerr.New(svcerr.BlobNotFound)
}

func (c Conditions) ifMatchPasses(r Resource) bool {
	if len(c.IfMatch) == 0 {
		return true
	}
	for _, v := range c.IfMatch {
		if ETagMatches(r.ETag, v) {
			return true
		}
	}
	return false
}

func (c Conditions) ifNoneMatchPasses(r Resource) bool {
	for _, v := range c.IfNoneMatch {
		if ETagMatches(r.ETag, v) {
			return false
		}
	}
	return true
}

// Last-Modified is compared at second precision, as the HTTP date of
// If-Modified-Since and If-Unmodified-Since carries.
func (c Conditions) imsPasses(r Resource) bool {
	return r.LastModified.Truncate(time.Second).After(c.IfModifiedSince)
}

func (c Conditions) iusPasses(r Resource) bool {
	return !r.LastModified.Truncate(time.Second).After(c.IfUnmodifiedSince)
}

// EvalRead applies the read rules (Get Blob, Get Blob Properties) to an
// existing resource: If-Match, If-Unmodified-Since or x-ms-if-tags failing
// → 412 ConditionNotMet; otherwise if If-None-Match/If-Modified-Since are
// present and none passes → 304 (returned as ErrNotModified). A missing
// resource is the caller's 404 (reads of a missing blob are 404 whatever
// the conditions).
func EvalRead(c Conditions, r Resource) error {
	if !c.ifMatchPasses(r) || (c.HadIUS && !c.iusPasses(r)) || !c.tagsPass(r) {
		return svcerr.New(svcerr.ConditionNotMet)
	}
	var present, passed bool
	if len(c.IfNoneMatch) > 0 {
		present = true
		passed = passed || c.ifNoneMatchPasses(r)
	}
	if c.HadIMS {
		present = true
		passed = passed || c.imsPasses(r)
	}
	if present && !passed {
		return ErrNotModified
	}
	return nil
}

// ErrNotModified is the read outcome 304 Not Modified (x-ms-error-code:
// ConditionNotMet, no body). It is its own type, not a *svcerr.Error:
// svcerr.Error matches any error of the same code through errors.Is, so a
// *svcerr.Error here would make every 412 ConditionNotMet a 304. It unwraps
// to its ConditionNotMet for svcerr.As and svcerr.HasCode.
var ErrNotModified error = &notModified{svcerr.Error{Code: svcerr.ConditionNotMet, Message: "not modified"}}

type notModified struct{ err svcerr.Error }

func (e *notModified) Error() string { return e.err.Error() }

// Unwrap gives the ConditionNotMet a 304 carries in x-ms-error-code; a
// fresh copy, so a caller that edits it cannot change ErrNotModified.
func (e *notModified) Unwrap() error { c := e.err; return &c }

// IsNotModified reports whether err is (or wraps) the 304 outcome.
func IsNotModified(err error) bool { return errors.Is(err, ErrNotModified) }

// ValidateWrite applies the documented header-combination rule for writes
// (Specifying conditional headers for Blob service operations): at most
// one of the four headers, except the pairs {If-Match, If-Unmodified-Since}
// and {If-None-Match, If-Modified-Since}; at most one ETag per header.
// Violations are 400 MultipleConditionHeadersNotSupported. Only enforced in
// strict mode: whether today's service still refuses other combinations is
// unconfirmed (Azurite does), and evaluating every given condition (the
// non-strict default) is never weaker.
func ValidateWrite(c Conditions) error {
	if len(c.IfMatch) > 1 || len(c.IfNoneMatch) > 1 {
		return svcerr.New(svcerr.MultipleConditionHeadersNotSupported)
	}
	n := 0
	for _, b := range []bool{len(c.IfMatch) > 0, len(c.IfNoneMatch) > 0, c.HadIMS, c.HadIUS} {
		if b {
			n++
		}
	}
	switch {
	case n <= 1:
		return nil
	case n == 2 && len(c.IfMatch) > 0 && c.HadIUS:
		return nil
	case n == 2 && len(c.IfNoneMatch) > 0 && c.HadIMS:
		return nil
	}
	return svcerr.New(svcerr.MultipleConditionHeadersNotSupported)
}

// WriteKind says how If-None-Match: * on an existing resource fails.
type WriteKind int

const (
	// UpdateWrite: Set Properties/Metadata, Delete, Append ... → 412.
	UpdateWrite WriteKind = iota
	// CreateWrite: Put Blob, Put Block List, Copy destination → 409
	// BlobAlreadyExists.
	CreateWrite
)

// EvalWrite applies the write rules of the conditional headers. Every given
// condition must pass (AND). Against a missing resource If-Match fails and
// the date conditions are ignored; so does x-ms-if-tags (a missing blob has
// no tags to match).
func EvalWrite(c Conditions, r Resource, kind WriteKind) error {
	if !r.Exists {
		if len(c.IfMatch) > 0 || (c.IfTags != nil && !r.Container) {
			return svcerr.New(svcerr.ConditionNotMet)
		}
		return nil
	}
	if !c.ifMatchPasses(r) {
		return svcerr.New(svcerr.ConditionNotMet)
	}
	if c.HadIUS && !c.iusPasses(r) {
		return svcerr.New(svcerr.ConditionNotMet)
	}
	if c.HadIMS && !c.imsPasses(r) {
		return svcerr.New(svcerr.ConditionNotMet)
	}
	if !c.tagsPass(r) {
		return svcerr.New(svcerr.ConditionNotMet)
	}
	for _, v := range c.IfNoneMatch {
		if v == "*" {
			if kind == CreateWrite {
				return svcerr.New(svcerr.BlobAlreadyExists)
			}
			return svcerr.New(svcerr.ConditionNotMet)
		}
	}
	if !c.ifNoneMatchPasses(r) {
		return svcerr.New(svcerr.ConditionNotMet)
	}
	return nil
}
