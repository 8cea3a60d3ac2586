package gateway

import (
	"encoding/base64"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

const metaPrefix = "x-ms-meta-"

// parseMetadata collects x-ms-meta-* headers. Names must be valid C#
// identifiers (Azure's rule). Azure keeps the case a name was sent in and
// compares names ignoring case; Go's server canonicalizes header names, so
// raw (lowercased header name → as sent, from rawHeaderNames in
// headercase.go) gives the spelling back. A name raw does not spell (a
// connection without a record, a header block it could not find) is
// lowercased, as before. A name sent twice, in one spelling or several
// (Go merges them into one header), is 400 InvalidMetadata, as Azure
// answers two metadata headers of one name.
func parseMetadata(h http.Header, raw map[string]string) (map[string]string, error) {
	meta := map[string]string{}
	size := 0
	for k, vs := range h {
		// Lowercase only the metadata names: every other header of the
		// request would cost a copy.
		if !hasPrefixFold(k, metaPrefix) {
			continue
		}
		lk := strings.ToLower(k)
		name := lk[len(metaPrefix):]
		if s, ok := raw[lk]; ok && strings.EqualFold(s, k) {
			k, name = s, s[len(metaPrefix):]
		}
		if !validMetaName(name) {
			return nil, svcerr.Header(svcerr.InvalidMetadata, k, strings.Join(vs, ","))
		}
		if len(vs) > 1 {
			e := svcerr.Header(svcerr.InvalidMetadata, k, strings.Join(vs, ","))
			e.Message = "The metadata name " + name + " is given more than once."
			return nil, e
		}
		v := vs[0]
		if !asciiText(v) {
			// Azure refuses a value beyond ASCII (its message, this
			// code's default) rather than store what a header cannot
			// carry everywhere.
			return nil, svcerr.Header(svcerr.InvalidMetadata, k, v)
		}
		meta[name] = v
		size += len(name) + len(v)
	}
	if size > 8<<10 {
		return nil, svcerr.New(svcerr.MetadataTooLarge)
	}
	return meta, nil
}

// asciiText reports whether s is ASCII alone.
func asciiText(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func validMetaName(n string) bool {
	if n == "" || len(n) > 256 {
		return false
	}
	for i, c := range n {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func writeMetadata(h http.Header, meta map[string]string) {
	for k, v := range meta {
		h[metaPrefix+k] = []string{v}
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// parseBlobProps reads the x-ms-blob-content-* headers; on Put Blob the
// standard Content-* headers stand in when the x-ms-blob form is absent,
// as Azure's Put Blob does.
func parseBlobProps(h http.Header, fallback bool) (leasedb.Props, error) {
	get := func(xms, std string) string {
		if v, ok := h[hdrKey(xms)]; ok {
			return strings.Join(v, ",")
		}
		if fallback && std != "" {
			return h.Get(std)
		}
		return ""
	}
	p := leasedb.Props{
		ContentType:        get("x-ms-blob-content-type", "Content-Type"),
		ContentEncoding:    get("x-ms-blob-content-encoding", "Content-Encoding"),
		ContentLanguage:    get("x-ms-blob-content-language", "Content-Language"),
		ContentDisposition: get("x-ms-blob-content-disposition", ""),
		CacheControl:       get("x-ms-blob-cache-control", "Cache-Control"),
	}
	if v := h.Get("X-Ms-Blob-Content-Md5"); v != "" {
		md5, err := decodeMD5(v)
		if err != nil {
			return p, svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-blob-content-md5", v)
		}
		p.ContentMD5 = md5
	}
	return p, nil
}

func decodeMD5(v string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil || len(b) != 16 {
		return nil, svcerr.New(svcerr.InvalidHeaderValue)
	}
	return b, nil
}

// httpTime formats t as an HTTP date. A time in the second the Date header
// was last formatted for (a write's Last-Modified, almost always) takes
// that string instead of formatting it again.
func httpTime(t time.Time) string {
	if d := lastDate.Load(); d != nil && d.sec == t.Unix() {
		return d.s
	}
	return t.UTC().Format(http.TimeFormat)
}

func setETagLM(h http.Header, etag string, lm time.Time) {
	h.Set("Etag", etag)
	h.Set("Last-Modified", httpTime(lm))
}

// setETagLM is setETagLM through hv.
func (hv *headerVals) setETagLM(etag string, lm time.Time) {
	hv.set("Etag", etag)
	hv.set("Last-Modified", httpTime(lm))
}

// writeBlobHeaders sets the property headers of Get Blob / Get Blob
// Properties.
func writeBlobHeaders(h http.Header, b *leasedb.Blob, now time.Time) {
	hv := newHeaderVals(h, 12)
	hv.set("Etag", b.ETag) // setETagLM's two
	hv.set("Last-Modified", httpTime(b.LastModified))
	hv.set("X-Ms-Creation-Time", httpTime(b.Created))
	hv.set("X-Ms-Blob-Type", b.Type)
	ct := b.Props.ContentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	hv.set("Content-Type", ct)
	for _, kv := range [][2]string{
		{"Content-Encoding", b.Props.ContentEncoding},
		{"Content-Language", b.Props.ContentLanguage},
		{"Content-Disposition", b.Props.ContentDisposition},
		{"Cache-Control", b.Props.CacheControl},
	} {
		if kv[1] != "" {
			hv.set(kv[0], kv[1])
		}
	}
	status, state, duration := b.Lease.Headers(now)
	hv.set("X-Ms-Lease-Status", status)
	hv.set("X-Ms-Lease-State", state)
	if duration != "" {
		hv.set("X-Ms-Lease-Duration", duration)
	}
	hv.set("X-Ms-Server-Encrypted", "true")
	hv.set("Accept-Ranges", "bytes")
	if b.Type == "AppendBlob" {
		hv.set("X-Ms-Blob-Committed-Block-Count", strconv.Itoa(b.BlockCount))
		hv.set("X-Ms-Blob-Sealed", strconv.FormatBool(b.Sealed))
	}
	if b.Type == "PageBlob" {
		hv.set("X-Ms-Blob-Sequence-Number", strconv.FormatInt(b.SequenceNumber, 10))
	}
	if c := b.Copy; c != nil {
		hv.set("X-Ms-Copy-Id", c.ID)
		hv.set("X-Ms-Copy-Source", c.Source)
		hv.set("X-Ms-Copy-Status", c.Status)
		hv.set("X-Ms-Copy-Progress", c.Progress)
		hv.set("X-Ms-Copy-Completion-Time", httpTime(c.Completed))
		if c.Incremental {
			// Incremental Copy Blob's destination and its snapshots.
			hv.set("X-Ms-Incremental-Copy", "true")
			hv.set("X-Ms-Copy-Destination-Snapshot", c.DestinationSnapshot)
		}
	}
	writeTierTagHeaders(h, b)
	writeMetadata(h, b.Metadata)
	if b.VersionID != "" && b.Snapshot == "" {
		// Get Blob / Get Blob Properties of a version: which one, and
		// whether it is the current blob.
		hv.set("X-Ms-Version-Id", b.VersionID)
		hv.set("X-Ms-Is-Current-Version", strconv.FormatBool(!b.NonCurrent))
	}
}

// setVersionID answers a write that created a version (Put Blob, Put
// Block List, Copy Blob, the From-URL puts, Set Blob Metadata with
// versioning on) with its id; without versioning the header is absent.
func setVersionID(h http.Header, b *leasedb.Blob) {
	if b.VersionID != "" {
		h.Set("X-Ms-Version-Id", b.VersionID)
	}
}

func writeContainerHeaders(h http.Header, c *leasedb.Container, now time.Time) {
	setETagLM(h, c.ETag, c.LastModified)
	for _, p := range containerProps(c, now) {
		h.Set(p.header, p.value)
	}
	writeMetadata(h, c.Metadata)
}

// containerProp is one of a container's lease, access and encryption
// properties: the header Get Container Properties sends it as and the
// element List Containers writes it as.
type containerProp struct{ header, elem, value string }

// containerProps are c's lease, access and encryption properties in the
// order of List Containers' Properties element.
func containerProps(c *leasedb.Container, now time.Time) []containerProp {
	status, state, duration := c.Lease.Headers(now)
	ps := []containerProp{
		{"X-Ms-Lease-Status", "LeaseStatus", status},
		{"X-Ms-Lease-State", "LeaseState", state},
	}
	if duration != "" {
		ps = append(ps, containerProp{"X-Ms-Lease-Duration", "LeaseDuration", duration})
	}
	if c.PublicAccess != "" {
		ps = append(ps, containerProp{"X-Ms-Blob-Public-Access", "PublicAccess", c.PublicAccess})
	}
	return append(ps,
		containerProp{"X-Ms-Default-Encryption-Scope", "DefaultEncryptionScope", "$account-encryption-key"},
		containerProp{"X-Ms-Deny-Encryption-Scope-Override", "DenyEncryptionScopeOverride", "false"},
		containerProp{"X-Ms-Has-Immutability-Policy", "HasImmutabilityPolicy", "false"},
		containerProp{"X-Ms-Has-Legal-Hold", "HasLegalHold", "false"},
		// The service reports it for every container (x-ms-version
		// 2020-10-02 on); blobgw has no version-level immutability, and
		// Create Container refuses to enable it.
		containerProp{"X-Ms-Immutable-Storage-With-Versioning-Enabled", "ImmutableStorageWithVersioningEnabled", "false"})
}

func parsePublicAccess(h http.Header) (string, error) {
	v := h.Get("X-Ms-Blob-Public-Access")
	switch v {
	case "", "blob", "container":
		return v, nil
	}
	return "", svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-blob-public-access", v)
}

// setRequestHeaders sets the headers every answer carries about its
// request (each Blob Batch sub-request's too): x-ms-request-id,
// x-ms-version (the request's, else DefaultVersion) and the
// x-ms-client-request-id echoed when it is at most 1,024 characters.
func setRequestHeaders(h *headerVals, r *http.Request, req *request) {
	h.set("X-Ms-Request-Id", req.id)
	if req.version == "" {
		h.set("X-Ms-Version", DefaultVersion)
	} else {
		h.set("X-Ms-Version", req.version)
	}
	if id := r.Header.Get("X-Ms-Client-Request-Id"); id != "" && len(id) <= 1024 {
		h.set("X-Ms-Client-Request-Id", id)
	}
}

// boolHeader reads a header that is "true" or "false" (any case): set
// says it was sent; any other value is 400 InvalidHeaderValue.
func boolHeader(h http.Header, name string) (v, set bool, err error) {
	s := hdrGet(h, name)
	switch {
	case s == "":
		return false, false, nil
	case strings.EqualFold(s, "true"):
		return true, true, nil
	case strings.EqualFold(s, "false"):
		return false, true, nil
	}
	return false, true, svcerr.Header(svcerr.InvalidHeaderValue, name, s)
}

// rehydratePriority checks x-ms-rehydrate-priority (Set Blob Tier, Copy
// Blob): Standard or High, in any case, when sent; the gateway keeps
// archived bytes online, so either is met at once.
func rehydratePriority(h http.Header) error {
	if p := hdrGet(h, "x-ms-rehydrate-priority"); p != "" && !strings.EqualFold(p, "Standard") && !strings.EqualFold(p, "High") {
		return svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-rehydrate-priority", p)
	}
	return nil
}
