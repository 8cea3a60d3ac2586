package gateway_test

// A sweep of bad input over every operation the router knows: each header
// and query parameter an operation reads gets a handful of bad values
// (empty, whitespace, huge, negative, non-numeric, invalid UTF-8, 10 KB,
// given twice, a wrong date format, base64 that does not decode, base64 of
// the wrong length), sent Shared Key-signed to a real server. Each answer
// must be below 500, a 4xx must carry x-ms-error-code, the server must
// still serve a good request afterwards, and a refused request must leave
// the target blob's bytes and ETag as they were.

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"
)

// sweepValue is one bad value: how it is sent as a header (hdr, or twice
// when set) and as a query parameter (query, already escaped).
type sweepValue struct {
	name  string
	hdr   string
	twice []string
	query string
}

var sweepValues = []sweepValue{
	{name: "empty", hdr: "", query: ""},
	{name: "whitespace", hdr: "   ", query: "%20%20%20"},
	{name: "huge", hdr: "99999999999999999999999999", query: "99999999999999999999999999"},
	{name: "negative", hdr: "-1", query: "-1"},
	{name: "non-numeric", hdr: "abc", query: "abc"},
	{name: "invalid-utf8", hdr: "\xff\xfe\xfd", query: "%FF%FE%FD"},
	{name: "10KB", hdr: strings.Repeat("a", 10<<10), query: strings.Repeat("a", 10<<10)},
	{name: "twice", twice: []string{"1", "2"}, query: "1"},
	{name: "wrong-date", hdr: "2024-01-01T00:00:00Z", query: "2024-01-01T00%3A00%3A00Z"},
	{name: "bad-base64", hdr: "!!!not*base64", query: "%21%21%21not%2Abase64"},
	{name: "base64-wrong-length", hdr: "AAAA", query: "AAAA"},
	{name: "nul", hdr: "", query: "a%00b"},
}

// sweepSpecific are bad values that only mean something for one header
// or query parameter: out-of-range numbers of the right form, URLs that
// do not lead to a blob.
var sweepSpecific = map[string][]string{
	"x-ms-blob-content-length":      {"1023", "9223372036854775807", "9223372036854775296", "0"},
	"x-ms-blob-sequence-number":     {"9223372036854775807", "9223372036854775808"},
	"x-ms-lease-duration":           {"14", "61", "0", "-2"},
	"x-ms-lease-break-period":       {"61", "9223372036854775807"},
	"x-ms-range":                    {"bytes=0-9223372036854775807", "bytes=9223372036854775296-9223372036854775807", "bytes=512-1023", "bytes=0-0"},
	"Range":                         {"bytes=9223372036854775807-", "bytes=-9223372036854775808", "bytes=0-0,1-1"},
	"x-ms-source-range":             {"bytes=0-9223372036854775807", "bytes=9223372036854775807-", "bytes=2000-3000"},
	"x-ms-blob-condition-maxsize":   {"0", "9223372036854775807"},
	"x-ms-blob-condition-appendpos": {"9223372036854775807", "0"},
	"x-ms-if-sequence-number-eq":    {"9223372036854775807"},
	"x-ms-if-sequence-number-le":    {"9223372036854775808"},
	"x-ms-if-sequence-number-lt":    {"0"},
	"x-ms-copy-source": {sweepUnreachable, "not a url", "ftp://127.0.0.1/x",
		"http://127.0.0.1/%zz", "/devstoreaccount1/sweep/src", "{self}sweep/missing", "{self}sweep/src?snapshot=bad",
		"{self}sweep/src?versionid=bad", "{self}%FF/src", "{self}sweep/" + strings.Repeat("n", 2000)},
	"x-ms-previous-snapshot-url":          {"not a url", "{self}sweep/page?snapshot=2024-01-01T00:00:00.0000000Z", "{self}sweep/src"},
	"x-ms-immutability-policy-until-date": {"Mon, 01 Jan 2024 00:00:00 GMT"},
	"x-ms-tags":                           {"a=%FF", strings.Repeat("k", 200) + "=v", "a=1&a=2", "=v"},
	"x-ms-meta-k":                         {"\u00e9", "a\tb"},
	"x-ms-deleted-container-version":      {"9223372036854775807"},
	"Content-MD5":                         {"AAAAAAAAAAAAAAAAAAAAAA=="},
	"x-ms-content-crc64":                  {"AAAAAAAAAAA="},
	"x-ms-access-tier":                    {"Archive", "Premium", "P10"},
	"x-ms-page-write":                     {"Clear"},
	"x-ms-structured-body":                {"XSM/1.0; properties=crc64", "XSM/9.9"},
	"maxresults":                          {"0", "5001", "2147483648"},
	"snapshot":                            {"2024-01-01T00:00:00.0000000Z", "9999-12-31T23:59:59.9999999Z", "0001-01-01T00:00:00Z"},
	"prevsnapshot":                        {"2024-01-01T00:00:00.0000000Z"},
	"versionid":                           {"2024-01-01T00:00:00.0000000Z", "9999-12-31T23:59:59.9999999Z"},
	"blockid":                             {"QUFB", base64Of(65)},
	"where":                               {"%22k%22%3D", "%22k%22%3D%27v%27%20AND", "%40container%3D%27x%27%20OR%20%22a%22%3D%27b%27"},
	"include":                             {"snapshots,metadata,nope", "versions,deleted,tags,copy,uncommittedblobs,deletedwithversions,immutabilitypolicy,legalhold,permissions"},
	"marker":                              {"%2F%2F%2F", "%FE"},
}

// sweepUnreachable is a copy source no server listens at: Azure answers
// 500 CannotVerifyCopySource for a source it cannot fetch, and so does the
// gateway (copy_test.go), so the sweep allows that answer for it alone.
const sweepUnreachable = "http://127.0.0.1:1/devstoreaccount1/sweep/src"

func base64Of(n int) string {
	return url.QueryEscape(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("b"), n)))
}

// sweepTarget is the blob an operation addresses: the sweep keeps one of
// each type with known bytes.
type sweepTarget string

const (
	tBlock  sweepTarget = "block"
	tPage   sweepTarget = "page"
	tAppend sweepTarget = "append"
	tNone   sweepTarget = "" // the service or the container
)

// sweepOp is one operation as the sweep sends it: a good request (method,
// path under the account, query, headers, body) and the headers and query
// parameters it reads.
type sweepOp struct {
	name    string
	method  string
	path    string // under the account; "{b}" is the target blob's name
	query   string // good query, without the mutated parameter
	hdr     map[string]string
	body    string
	target  sweepTarget
	headers []string
	params  []string
}

// Headers most operations read.
var (
	condHeaders  = []string{"If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since", "x-ms-if-tags"}
	commonHdrs   = []string{"x-ms-version", "x-ms-client-request-id", "x-ms-lease-id"}
	commonParams = []string{"timeout"}
	propHeaders  = []string{"x-ms-blob-content-type", "x-ms-blob-content-encoding", "x-ms-blob-content-language",
		"x-ms-blob-content-disposition", "x-ms-blob-cache-control", "x-ms-blob-content-md5"}
	cpkHeaders  = []string{"x-ms-encryption-key", "x-ms-encryption-key-sha256", "x-ms-encryption-algorithm", "x-ms-encryption-scope"}
	srcHeaders  = []string{"x-ms-source-if-match", "x-ms-source-if-none-match", "x-ms-source-if-modified-since", "x-ms-source-if-unmodified-since", "x-ms-source-range", "x-ms-source-content-md5", "x-ms-source-content-crc64", "x-ms-copy-source-authorization"}
	bodyHeaders = []string{"Content-Length", "Content-MD5", "x-ms-content-crc64", "Content-Type", "x-ms-structured-body"}
	putHeaders  = []string{"x-ms-blob-type", "x-ms-access-tier", "x-ms-tags", "x-ms-meta-k", "x-ms-blob-content-length", "x-ms-blob-sequence-number", "x-ms-immutability-policy-mode", "x-ms-immutability-policy-until-date", "x-ms-legal-hold", "Content-Encoding", "Content-Language", "Cache-Control", "Content-Disposition"}
	leaseHdrs   = []string{"x-ms-lease-action", "x-ms-lease-duration", "x-ms-lease-break-period", "x-ms-proposed-lease-id"}
	pageConds   = []string{"x-ms-if-sequence-number-eq", "x-ms-if-sequence-number-le", "x-ms-if-sequence-number-lt"}
	appendConds = []string{"x-ms-blob-condition-appendpos", "x-ms-blob-condition-maxsize"}
	listParams  = []string{"prefix", "marker", "maxresults", "include", "delimiter", "startfrom", "endbefore"}
)

func join(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

const sweepBlockID = "YmxvY2stMDAwMQ==" // "block-0001"

func sweepOps(srcURL string) []sweepOp {
	blockList := `<?xml version="1.0" encoding="utf-8"?><BlockList><Latest>` + sweepBlockID + `</Latest></BlockList>`
	acl := `<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers></SignedIdentifiers>`
	tags := `<?xml version="1.0" encoding="utf-8"?><Tags><TagSet><Tag><Key>k</Key><Value>v</Value></Tag></TagSet></Tags>`
	svc := `<?xml version="1.0" encoding="utf-8"?><StorageServiceProperties></StorageServiceProperties>`
	udk := `<?xml version="1.0" encoding="utf-8"?><KeyInfo><Start>2024-01-01T00:00:00Z</Start><Expiry>2024-01-02T00:00:00Z</Expiry></KeyInfo>`
	page := strings.Repeat("p", 512)
	copySrc := map[string]string{"x-ms-copy-source": srcURL}
	return []sweepOp{
		{name: "GetAccountInformation", method: "GET", path: "", query: "restype=account&comp=properties", headers: commonHdrs, params: commonParams},
		{name: "ListContainers", method: "GET", path: "", query: "comp=list", headers: commonHdrs, params: join(commonParams, []string{"prefix", "marker", "maxresults", "include"})},
		{name: "FindBlobsByTags", method: "GET", path: "", query: "comp=blobs&where=%22k%22%3D%27v%27", headers: commonHdrs, params: join(commonParams, []string{"where", "marker", "maxresults"})},
		{name: "GetBlobServiceProperties", method: "GET", path: "", query: "restype=service&comp=properties", headers: commonHdrs, params: commonParams},
		{name: "SetBlobServiceProperties", method: "PUT", path: "", query: "restype=service&comp=properties", body: svc, headers: join(commonHdrs, bodyHeaders), params: commonParams},
		{name: "GetBlobServiceStats", method: "GET", path: "", query: "restype=service&comp=stats", headers: commonHdrs, params: commonParams},
		{name: "GetUserDelegationKey", method: "POST", path: "", query: "restype=service&comp=userdelegationkey", body: udk, headers: join(commonHdrs, bodyHeaders), params: commonParams},

		{name: "CreateContainer", method: "PUT", path: "sweepnew", query: "restype=container", headers: join(commonHdrs, []string{"x-ms-blob-public-access", "x-ms-meta-k", "x-ms-default-encryption-scope", "x-ms-deny-encryption-scope-override"}), params: commonParams},
		{name: "GetContainerProperties", method: "GET", path: "sweep", query: "restype=container", headers: commonHdrs, params: commonParams},
		{name: "GetContainerMetadata", method: "GET", path: "sweep", query: "restype=container&comp=metadata", headers: commonHdrs, params: commonParams},
		{name: "SetContainerMetadata", method: "PUT", path: "sweep", query: "restype=container&comp=metadata", headers: join(commonHdrs, []string{"x-ms-meta-k", "If-Modified-Since"}), params: commonParams},
		{name: "GetContainerACL", method: "GET", path: "sweep", query: "restype=container&comp=acl", headers: commonHdrs, params: commonParams},
		{name: "SetContainerACL", method: "PUT", path: "sweep", query: "restype=container&comp=acl", body: acl, headers: join(commonHdrs, bodyHeaders, []string{"x-ms-blob-public-access", "If-Modified-Since", "If-Unmodified-Since"}), params: commonParams},
		{name: "ListBlobs", method: "GET", path: "sweep", query: "restype=container&comp=list", headers: commonHdrs, params: join(commonParams, listParams)},
		{name: "FindBlobsByTagsInContainer", method: "GET", path: "sweep", query: "restype=container&comp=blobs&where=%22k%22%3D%27v%27", headers: commonHdrs, params: join(commonParams, []string{"where", "marker", "maxresults"})},
		{name: "RestoreContainer", method: "PUT", path: "sweepgone", query: "restype=container&comp=undelete", hdr: map[string]string{"x-ms-deleted-container-name": "sweepgone", "x-ms-deleted-container-version": "01D60F8BB59A4652"}, headers: join(commonHdrs, []string{"x-ms-deleted-container-name", "x-ms-deleted-container-version"}), params: commonParams},
		{name: "LeaseContainer", method: "PUT", path: "sweep", query: "restype=container&comp=lease", hdr: map[string]string{"x-ms-lease-action": "acquire", "x-ms-lease-duration": "15"}, headers: join(commonHdrs, leaseHdrs, []string{"If-Modified-Since", "If-Unmodified-Since"}), params: commonParams},
		{name: "DeleteContainer", method: "DELETE", path: "sweepdel", query: "restype=container", headers: join(commonHdrs, []string{"If-Modified-Since", "If-Unmodified-Since"}), params: commonParams},

		{name: "GetBlob", method: "GET", target: tBlock, headers: join(commonHdrs, condHeaders, cpkHeaders, []string{"Range", "x-ms-range", "x-ms-range-get-content-md5", "x-ms-range-get-content-crc64", "If-Range", "x-ms-structured-body"}), params: join(commonParams, []string{"snapshot", "versionid"})},
		{name: "GetBlobProperties", method: "HEAD", target: tBlock, headers: join(commonHdrs, condHeaders, cpkHeaders), params: join(commonParams, []string{"snapshot", "versionid"})},
		{name: "GetBlobMetadata", method: "GET", query: "comp=metadata", target: tBlock, headers: join(commonHdrs, condHeaders), params: join(commonParams, []string{"snapshot", "versionid"})},
		{name: "PutBlob", method: "PUT", target: tBlock, hdr: map[string]string{"x-ms-blob-type": "BlockBlob"}, body: "new bytes", headers: join(commonHdrs, condHeaders, bodyHeaders, putHeaders, propHeaders, cpkHeaders), params: commonParams},
		{name: "PutBlobPage", method: "PUT", target: tPage, hdr: map[string]string{"x-ms-blob-type": "PageBlob", "x-ms-blob-content-length": "1024"}, headers: join(commonHdrs, condHeaders, putHeaders), params: commonParams},
		{name: "PutBlobAppend", method: "PUT", target: tAppend, hdr: map[string]string{"x-ms-blob-type": "AppendBlob"}, headers: join(commonHdrs, condHeaders, putHeaders), params: commonParams},
		{name: "PutBlobFromURL", method: "PUT", target: tBlock, hdr: map[string]string{"x-ms-blob-type": "BlockBlob", "x-ms-copy-source": srcURL}, headers: join(commonHdrs, condHeaders, srcHeaders, putHeaders, []string{"x-ms-copy-source", "x-ms-copy-source-blob-properties", "x-ms-copy-source-tag-option", "x-ms-source-if-tags"}), params: commonParams},
		{name: "CopyBlob", method: "PUT", target: tBlock, hdr: copySrc, headers: join(commonHdrs, condHeaders, srcHeaders, []string{"x-ms-copy-source", "x-ms-requires-sync", "x-ms-access-tier", "x-ms-tags", "x-ms-meta-k", "x-ms-source-lease-id", "x-ms-copy-source-tag-option", "x-ms-rehydrate-priority", "x-ms-seal-blob", "x-ms-source-if-tags"}), params: commonParams},
		{name: "UndeleteBlob", method: "PUT", query: "comp=undelete", target: tBlock, headers: commonHdrs, params: commonParams},
		{name: "DeleteBlob", method: "DELETE", path: "sweep/gone", headers: join(commonHdrs, condHeaders, []string{"x-ms-delete-snapshots", "x-ms-delete-type-permanent"}), params: join(commonParams, []string{"snapshot", "versionid", "deletetype"})},
		{name: "SetBlobMetadata", method: "PUT", query: "comp=metadata", target: tBlock, hdr: map[string]string{"x-ms-meta-k": "v"}, headers: join(commonHdrs, condHeaders, cpkHeaders, []string{"x-ms-meta-k"}), params: commonParams},
		{name: "SetBlobProperties", method: "PUT", query: "comp=properties", target: tBlock, headers: join(commonHdrs, condHeaders, propHeaders, []string{"x-ms-blob-content-length", "x-ms-sequence-number-action", "x-ms-blob-sequence-number"}), params: commonParams},
		{name: "SetBlobPropertiesPage", method: "PUT", query: "comp=properties", target: tPage, hdr: map[string]string{"x-ms-blob-content-length": "2048"}, headers: []string{"x-ms-blob-content-length", "x-ms-sequence-number-action", "x-ms-blob-sequence-number"}},
		{name: "LeaseBlob", method: "PUT", query: "comp=lease", target: tBlock, hdr: map[string]string{"x-ms-lease-action": "acquire", "x-ms-lease-duration": "15"}, headers: join(commonHdrs, condHeaders, leaseHdrs), params: join(commonParams, []string{"snapshot"})},
		{name: "PutBlock", method: "PUT", query: "comp=block&blockid=" + url.QueryEscape(sweepBlockID), target: tBlock, body: "block bytes", headers: join(commonHdrs, bodyHeaders, cpkHeaders), params: join(commonParams, []string{"blockid"})},
		{name: "PutBlockFromURL", method: "PUT", query: "comp=block&blockid=" + url.QueryEscape(sweepBlockID), target: tBlock, hdr: copySrc, headers: join(commonHdrs, srcHeaders, []string{"x-ms-copy-source"}), params: join(commonParams, []string{"blockid"})},
		{name: "PutBlockList", method: "PUT", query: "comp=blocklist", target: tBlock, body: blockList, headers: join(commonHdrs, condHeaders, bodyHeaders, propHeaders, []string{"x-ms-access-tier", "x-ms-tags", "x-ms-meta-k"}), params: commonParams},
		{name: "GetBlockList", method: "GET", query: "comp=blocklist&blocklisttype=all", target: tBlock, headers: join(commonHdrs, []string{"x-ms-if-tags"}), params: join(commonParams, []string{"blocklisttype", "snapshot", "versionid"})},
		{name: "AppendBlock", method: "PUT", query: "comp=appendblock", target: tAppend, body: "more", headers: join(commonHdrs, condHeaders, bodyHeaders, appendConds), params: commonParams},
		{name: "AppendBlockFromURL", method: "PUT", query: "comp=appendblock", target: tAppend, hdr: copySrc, headers: join(commonHdrs, srcHeaders, appendConds, []string{"x-ms-copy-source"}), params: commonParams},
		{name: "AppendBlobSeal", method: "PUT", query: "comp=seal", target: tAppend, headers: join(commonHdrs, condHeaders, []string{"x-ms-blob-condition-appendpos"}), params: commonParams},
		{name: "GetBlobTags", method: "GET", query: "comp=tags", target: tBlock, headers: join(commonHdrs, []string{"x-ms-if-tags"}), params: join(commonParams, []string{"snapshot", "versionid"})},
		{name: "SetBlobTags", method: "PUT", query: "comp=tags", target: tBlock, body: tags, headers: join(commonHdrs, bodyHeaders, []string{"x-ms-if-tags"}), params: join(commonParams, []string{"versionid"})},
		{name: "SetBlobTier", method: "PUT", query: "comp=tier", target: tBlock, hdr: map[string]string{"x-ms-access-tier": "Cool"}, headers: join(commonHdrs, []string{"x-ms-access-tier", "x-ms-rehydrate-priority", "x-ms-if-tags"}), params: join(commonParams, []string{"versionid", "snapshot"})},
		{name: "AbortCopyBlob", method: "PUT", query: "comp=copy&copyid=00000000-0000-0000-0000-000000000000", target: tBlock, hdr: map[string]string{"x-ms-copy-action": "abort"}, headers: join(commonHdrs, []string{"x-ms-copy-action"}), params: join(commonParams, []string{"copyid"})},
		{name: "SnapshotBlob", method: "PUT", query: "comp=snapshot", target: tBlock, headers: join(commonHdrs, condHeaders, []string{"x-ms-meta-k"}), params: commonParams},
		{name: "PutPage", method: "PUT", query: "comp=page", target: tPage, hdr: map[string]string{"x-ms-page-write": "update", "x-ms-range": "bytes=0-511"}, body: page, headers: join(commonHdrs, condHeaders, bodyHeaders, pageConds, []string{"x-ms-page-write", "x-ms-range", "Range"}), params: commonParams},
		{name: "ClearPage", method: "PUT", query: "comp=page", target: tPage, hdr: map[string]string{"x-ms-page-write": "clear", "x-ms-range": "bytes=0-511"}, headers: join(pageConds, []string{"x-ms-page-write", "x-ms-range", "Content-Length"}), params: commonParams},
		{name: "PutPageFromURL", method: "PUT", query: "comp=page", target: tPage, hdr: map[string]string{"x-ms-page-write": "update", "x-ms-range": "bytes=0-511", "x-ms-source-range": "bytes=0-511", "x-ms-copy-source": srcURL}, headers: join(commonHdrs, srcHeaders, pageConds, []string{"x-ms-page-write", "x-ms-range", "x-ms-copy-source"}), params: commonParams},
		{name: "GetPageRanges", method: "GET", query: "comp=pagelist", target: tPage, headers: join(commonHdrs, condHeaders, []string{"x-ms-range", "Range"}), params: join(commonParams, []string{"snapshot", "prevsnapshot", "marker", "maxresults"})},
		{name: "GetPageRangesDiff", method: "GET", query: "comp=pagelist", target: tPage, hdr: map[string]string{"x-ms-previous-snapshot-url": srcURL}, headers: []string{"x-ms-previous-snapshot-url"}, params: []string{"prevsnapshot"}},
		{name: "IncrementalCopyBlob", method: "PUT", query: "comp=incrementalcopy", target: tPage, hdr: copySrc, headers: join(commonHdrs, condHeaders, []string{"x-ms-copy-source"}), params: commonParams},
		{name: "BlobBatch", method: "POST", path: "", query: "comp=batch", hdr: map[string]string{"Content-Type": "multipart/mixed; boundary=batch_x"}, body: "--batch_x--\r\n", headers: join(commonHdrs, []string{"Content-Type", "Content-Length"}), params: commonParams},
	}
}

// sweepBadBodies are bodies sent in place of a good one to the operations
// that parse XML.
var sweepBadBodies = map[string]string{
	"empty":        "",
	"not-xml":      "this is not xml",
	"invalid-utf8": "<?xml version=\"1.0\"?><A>\xff\xfe</A>",
	"truncated":    "<?xml version=\"1.0\"?><BlockList><Latest>",
	"wrong-root":   "<?xml version=\"1.0\"?><Nope/>",
	"deep":         strings.Repeat("<a>", 5000) + strings.Repeat("</a>", 5000),
	"huge-number":  "<?xml version=\"1.0\"?><KeyInfo><Start>99999999999999999999</Start><Expiry>-1</Expiry></KeyInfo>",
}

type sweepState struct {
	etag  string
	bytes []byte
}

type sweeper struct {
	t      *testing.T
	b      *bundle
	states map[sweepTarget]sweepState
	// seen counts answers by status class (0: hung up).
	seen [6]int
}

func (s *sweeper) blobPath(tg sweepTarget) string { return "sweep/" + string(tg) }

// reset makes the target blob as the sweep knows it, with no lease, and
// records its ETag.
func (s *sweeper) reset(tg sweepTarget) {
	t := s.t
	t.Helper()
	// Break any lease a good request took.
	s.b.do(t, "PUT", s.blobPath(tg)+"?comp=lease", "", map[string]string{"x-ms-lease-action": "break", "x-ms-lease-break-period": "0"})
	hdr := map[string]string{}
	body := ""
	switch tg {
	case tBlock:
		hdr["x-ms-blob-type"], body = "BlockBlob", "the block blob's bytes"
	case tPage:
		hdr["x-ms-blob-type"], hdr["x-ms-blob-content-length"] = "PageBlob", "1024"
	case tAppend:
		hdr["x-ms-blob-type"] = "AppendBlob"
	}
	resp, _ := s.b.do(t, "PUT", s.blobPath(tg), body, hdr)
	wantStatus(t, resp, http.StatusCreated, "", "reset "+string(tg))
	if tg == tPage {
		resp, _ = s.b.do(t, "PUT", s.blobPath(tg)+"?comp=page", strings.Repeat("x", 512), map[string]string{"x-ms-page-write": "update", "x-ms-range": "bytes=0-511"})
		wantStatus(t, resp, http.StatusCreated, "", "reset page")
	}
	if tg == tAppend {
		resp, _ = s.b.do(t, "PUT", s.blobPath(tg)+"?comp=appendblock", "append bytes", nil)
		wantStatus(t, resp, http.StatusCreated, "", "reset append")
	}
	s.states[tg] = s.read(tg)
}

func (s *sweeper) read(tg sweepTarget) sweepState {
	s.t.Helper()
	resp, body := s.b.do(s.t, "GET", s.blobPath(tg), "", nil)
	wantStatus(s.t, resp, http.StatusOK, "", "read "+string(tg))
	return sweepState{etag: resp.Header.Get("ETag"), bytes: []byte(body)}
}

// send sends op with the mutation applied and checks the answer; it
// returns the status.
func (s *sweeper) send(op sweepOp, what string, mutate func(r *http.Request, q *string, body *string)) int {
	t := s.t
	t.Helper()
	path := op.path
	if op.target != tNone {
		path = s.blobPath(op.target)
	}
	q, body := op.query, op.body
	req, err := http.NewRequest(op.method, s.b.serviceURL(0)+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range op.hdr {
		req.Header.Set(k, v)
	}
	mutate(req, &q, &body)
	req.URL.RawQuery = q
	req.Body = io.NopCloser(strings.NewReader(body))
	req.ContentLength = int64(len(body))
	if _, ok := req.Header["Content-Length"]; ok {
		// The mutated Content-Length goes on the wire as given.
		req.ContentLength = -1
	}
	s.b.sign(t, req)
	if req.ContentLength == -1 {
		// net/http writes Content-Length itself; a bad one is sent by
		// the raw path.
		return s.sendRaw(op, what, req, body)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("%s: %v", what, err)
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	s.check(what, resp.StatusCode, resp.Header.Get("x-ms-error-code"))
	return resp.StatusCode
}

// sendRaw writes req on a fresh connection byte by byte, keeping its
// Content-Length header as the sweep set it.
func (s *sweeper) sendRaw(op sweepOp, what string, req *http.Request, body string) int {
	t := s.t
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n", req.Method, req.URL.RequestURI(), req.URL.Host)
	for k, vs := range req.Header {
		for _, v := range vs {
			fmt.Fprintf(&buf, "%s: %s\r\n", k, v)
		}
	}
	buf.WriteString("\r\n")
	buf.WriteString(body)
	status, code, err := rawExchange(req.URL.Host, buf.Bytes())
	if err != nil {
		t.Errorf("%s: %v", what, err)
		return 0
	}
	if status == 0 {
		// The server closed without an answer (a body shorter than its
		// Content-Length): a hang-up, not a 5xx.
		return 0
	}
	// net/http refuses a malformed Content-Length before the gateway
	// sees the request, with a 400 of its own that has no error code.
	if status != http.StatusBadRequest || code != "" {
		s.check(what, status, code)
	}
	return status
}

func (s *sweeper) check(what string, status int, code string) {
	t := s.t
	t.Helper()
	switch {
	case status == http.StatusNotImplemented && code == "NotImplemented":
		// A feature the gateway lacks, refused as refuse.go does.
	case status == http.StatusInternalServerError && code == "CannotVerifyCopySource" && strings.Contains(what, sweepUnreachable):
	case status >= 500:
		t.Errorf("%s: status %d %s, want < 500", what, status, code)
	case status >= 400 && code == "" && status != http.StatusRequestHeaderFieldsTooLarge:
		t.Errorf("%s: status %d with no x-ms-error-code", what, status)
	}
}

// after checks, when the request was refused, that its target is
// unchanged; a request that succeeded resets what it may have changed.
func (s *sweeper) after(op sweepOp, what string, status int) {
	t := s.t
	t.Helper()
	s.seen[status/100]++
	if os.Getenv("BLOBGW_SWEEP_DUMP") != "" {
		// Every answer, to read what the gateway accepts.
		fmt.Fprintf(os.Stderr, "SWEEP %d %s\n", status, what)
	}
	if op.target == tNone {
		if status < 400 && status != 0 {
			// A good container lease is broken, a created container removed.
			s.b.do(t, "PUT", "sweep?restype=container&comp=lease", "", map[string]string{"x-ms-lease-action": "break", "x-ms-lease-break-period": "0"})
			s.b.do(t, "DELETE", "sweepnew?restype=container", "", nil)
		}
		return
	}
	if status < 400 && status != 0 {
		s.reset(op.target)
		return
	}
	if got, want := s.read(op.target), s.states[op.target]; got.etag != want.etag || !bytes.Equal(got.bytes, want.bytes) {
		t.Errorf("%s: refused with %d, yet %s changed (ETag %s → %s)", what, status, op.target, want.etag, got.etag)
		s.reset(op.target)
	}
}

// sweepBadContainers and sweepBadBlobs are bad names, escaped as they go
// in the path.
var (
	sweepBadContainers = []string{"%FF", "a%00b", "AB", "ab", strings.Repeat("a", 64), "-ab", "a--b", "%2E%2E", "a%20b", "%C0%80", "$logs", "$root%FF"}
	sweepBadBlobs      = []string{"%FF", "a%00b", strings.Repeat("n", 1025), "a%2F..%2F..%2Fb", "..", ".", "%C0%80", "trail.", "a//b", "%EF%BF%BF", "%5C", "block%00", "a%0Ab", "%ED%A0%80"}
)

// names sends the blob and container operations at bad names; the sweep's
// block blob beside them must stay as it is.
func (s *sweeper) names() int {
	n := 0
	try := func(method, path, body string, hdr map[string]string) {
		what := method + " " + trim(path)
		req, err := http.NewRequest(method, s.b.serviceURL(0)+path, strings.NewReader(body))
		if err != nil {
			// A path Go cannot even send is no test of the server.
			return
		}
		req.ContentLength = int64(len(body))
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		s.b.sign(s.t, req)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			s.t.Errorf("%s: %v", what, err)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		s.check(what, resp.StatusCode, resp.Header.Get("x-ms-error-code"))
		s.after(sweepOp{target: tBlock}, what, resp.StatusCode)
		n++
	}
	put := map[string]string{"x-ms-blob-type": "BlockBlob"}
	for _, c := range sweepBadContainers {
		try("PUT", c+"?restype=container", "", nil)
		try("GET", c+"?restype=container", "", nil)
		try("GET", c+"?restype=container&comp=list", "", nil)
		try("DELETE", c+"?restype=container", "", nil)
		try("PUT", c+"/b", "x", put)
		try("PUT", "sweep/dst", "", map[string]string{"x-ms-copy-source": s.b.serviceURL(0) + c + "/src"})
	}
	for _, bl := range sweepBadBlobs {
		try("PUT", "sweep/"+bl, "x", put)
		try("GET", "sweep/"+bl, "", nil)
		try("HEAD", "sweep/"+bl, "", nil)
		try("DELETE", "sweep/"+bl, "", nil)
		try("PUT", "sweep/"+bl+"?comp=metadata", "", map[string]string{"x-ms-meta-k": "v"})
		try("PUT", "sweep/"+bl+"?comp=block&blockid="+url.QueryEscape(sweepBlockID), "x", nil)
		try("PUT", "sweep/dst", "", map[string]string{"x-ms-copy-source": s.b.serviceURL(0) + "sweep/" + bl})
		try("PUT", "sweep/"+bl, "", map[string]string{"x-ms-copy-source": s.b.serviceURL(0) + "sweep/src"})
	}
	s.alive("bad names")
	return n
}

// alive checks the server still serves a good request.
func (s *sweeper) alive(what string) {
	s.t.Helper()
	resp, _ := s.b.do(s.t, "GET", "?comp=list", "", nil)
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("after %s: a good List Containers answers %d", what, resp.StatusCode)
	}
}

func TestBadInputSweep(t *testing.T) {
	kinds := []string{"sqlite+disk"}
	if !testing.Short() {
		kinds = append(kinds, "postgres+disk")
	}
	forKinds(t, kinds, func(t *testing.T, kind string) {
		start := time.Now()
		b := setup(t, kind)
		createContainers(t, b.client, "sweep", "sweepdel")
		// A public source for the From URL operations and Copy Blob.
		resp, _ := b.do(t, "PUT", "sweep?restype=container&comp=acl", "", map[string]string{"x-ms-blob-public-access": "blob"})
		wantStatus(t, resp, http.StatusOK, "", "public source")
		resp, _ = b.do(t, "PUT", "sweep/src", strings.Repeat("s", 1024), map[string]string{"x-ms-blob-type": "BlockBlob"})
		wantStatus(t, resp, http.StatusCreated, "", "source blob")
		srcURL := b.serviceURL(0) + "sweep/src"
		s := &sweeper{t: t, b: b, states: map[sweepTarget]sweepState{}}
		for _, tg := range []sweepTarget{tBlock, tPage, tAppend} {
			s.reset(tg)
		}
		ops := sweepOps(srcURL)
		pg := strings.HasPrefix(kind, "postgres")
		n := 0
		for _, op := range ops {
			values := sweepValues
			if pg {
				// Postgres: the values that reach the store.
				values = []sweepValue{sweepValues[2], sweepValues[5], sweepValues[6]}
			}
			for _, h := range op.headers {
				for _, v := range values {
					if v.name == "nul" {
						continue
					}
					what := fmt.Sprintf("%s header %s=%s", op.name, h, v.name)
					status := s.send(op, what, func(r *http.Request, q *string, body *string) {
						if v.twice != nil {
							r.Header.Del(h)
							for _, x := range v.twice {
								r.Header.Add(h, x)
							}
							return
						}
						r.Header.Set(h, v.hdr)
					})
					s.after(op, what, status)
					n++
				}
				for _, v := range sweepSpecific[h] {
					v = strings.ReplaceAll(v, "{self}", b.serviceURL(0))
					what := fmt.Sprintf("%s header %s=%q", op.name, h, trim(v))
					status := s.send(op, what, func(r *http.Request, q *string, body *string) { r.Header.Set(h, v) })
					s.after(op, what, status)
					n++
				}
				s.alive(op.name + " header " + h)
			}
			for _, p := range op.params {
				for _, v := range values {
					what := fmt.Sprintf("%s query %s=%s", op.name, p, v.name)
					status := s.send(op, what, func(r *http.Request, q *string, body *string) {
						add := p + "=" + v.query
						if v.twice != nil {
							add += "&" + p + "=2"
						}
						if *q != "" {
							*q += "&"
						}
						*q += add
					})
					s.after(op, what, status)
					n++
				}
				for _, v := range sweepSpecific[p] {
					what := fmt.Sprintf("%s query %s=%q", op.name, p, trim(v))
					status := s.send(op, what, func(r *http.Request, q *string, body *string) {
						if *q != "" {
							*q += "&"
						}
						*q += p + "=" + v
					})
					s.after(op, what, status)
					n++
				}
				s.alive(op.name + " query " + p)
			}
			if op.body != "" && strings.Contains(op.body, "<?xml") {
				for name, body := range sweepBadBodies {
					what := fmt.Sprintf("%s body %s", op.name, name)
					status := s.send(op, what, func(r *http.Request, q *string, b *string) { *b = body })
					s.after(op, what, status)
					n++
				}
				s.alive(op.name + " bodies")
			}
		}
		n += s.names()
		t.Logf("%s: %d bad requests in %v; by status class (0: hung up) %v", kind, n, time.Since(start), s.seen)
	})
}

func trim(v string) string {
	if len(v) > 80 {
		return v[:80] + "..."
	}
	return v
}

// rawExchange sends one request's bytes on a new connection and reads
// the answer's status and x-ms-error-code (status 0 when the server hung
// up without one).
func rawExchange(host string, raw []byte) (int, string, error) {
	c, err := net.DialTimeout("tcp", host, 5*time.Second)
	if err != nil {
		return 0, "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(raw); err != nil {
		return 0, "", nil
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, "", nil
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("x-ms-error-code"), nil
}
