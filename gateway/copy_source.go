package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/blobgw/blobgw/backends"
	"github.com/blobgw/blobgw/gateway/auth"
	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

// copySpec is what a copy request says about its source.
type copySpec struct {
	op  copyOp
	raw string // x-ms-copy-source as sent
	u   *url.URL
	// cond are the x-ms-source-if-* conditions, evaluated against the
	// source; fwd the same headers in their plain spelling, sent to a
	// remote source.
	cond leasedb.Conditions
	fwd  http.Header
	// The requested window (x-ms-source-range): [start, end], end -1 for
	// "to the end of the source".
	ranged     bool
	start, end int64
	// authz is x-ms-copy-source-authorization.
	authz string
	// leaseID is x-ms-source-lease-id: the copy reads the source only
	// while this lease is active on it ("" when absent).
	leaseID string
	// max is the largest source length the operation accepts.
	max int64
	// want are the source digests Put Block, Append Block and Put Page
	// From URL check (x-ms-source-content-md5 / -crc64; sourceSums).
	want sums
}

// copySource is an opened source: a body and what is known about it.
type copySource struct {
	body io.ReadCloser
	// size is the number of bytes body yields; -1 when unknown (a remote
	// source without Content-Length).
	size int64
	// typ is the source's blob type ("" when the source is not a blob).
	typ        string
	props      leasedb.Props
	meta       map[string]string
	tags       map[string]string // local sources only
	remoteTags int               // a remote source's x-ms-tag-count (its Get Blob has no tags)
	blockCount int               // local append blobs
	sealed     bool              // a sealed append blob
	seq        int64             // a local page blob's sequence number
	remote     bool
	// A local source read whole: its name and extents, so Copy Blob can
	// share them instead of copying the bytes.
	ref     leasedb.BlobRef
	extents []leasedb.Extent
}

func (c *copySource) Close() error { return c.body.Close() }

// parseCopySpec reads x-ms-copy-source, the source conditions and, where
// the operation takes one, x-ms-source-range.
func parseCopySpec(r *http.Request, op copyOp, max int64) (*copySpec, error) {
	spec := &copySpec{op: op, raw: r.Header.Get("x-ms-copy-source"), end: -1, max: max}
	u, err := url.Parse(spec.raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || !textURL(u) {
		return nil, svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-copy-source", redactURL(spec.raw))
	}
	spec.u = u
	spec.fwd = http.Header{}
	// The x-ms-source-if-* headers become the headers a read of the
	// source carries.
	std := standardConditions.names()
	for i, name := range sourceConditions.names() {
		if vs := r.Header.Values(name); len(vs) > 0 {
			spec.fwd[http.CanonicalHeaderKey(std[i])] = vs
		}
	}
	if spec.cond, err = sourceConditions.parse(r.Header); err != nil {
		return nil, err
	}
	if op == opPutBlockFromURL || op == opAppendFromURL || op == opPutPageFromURL {
		if spec.want, err = sourceSums(r.Header); err != nil {
			return nil, err
		}
		if v := r.Header.Get("x-ms-source-range"); v != "" {
			if spec.start, spec.end, err = parseSourceRange(v); err != nil {
				return nil, err
			}
			spec.ranged = true
		}
	}
	if v := r.Header.Get("x-ms-source-content-crc64"); v != "" && spec.want.crc64 == nil {
		// Copy Blob, Copy Blob From URL and Put Blob From URL take
		// x-ms-source-content-md5 only: a CRC64 they would not check
		// is refused, not dropped.
		return nil, svcerr.Header(svcerr.UnsupportedHeader, "x-ms-source-content-crc64", v)
	}
	spec.authz = r.Header.Get("x-ms-copy-source-authorization")
	if spec.leaseID, err = parseLeaseID("x-ms-source-lease-id", leaseHeader(r.Header, "x-ms-source-lease-id"), false); err != nil {
		return nil, err
	}
	return spec, nil
}

// parseSourceRange reads x-ms-source-range: "bytes=a-b" or "bytes=a-".
// Unlike Range on a read, a malformed value is an error.
func parseSourceRange(v string) (start, end int64, err error) {
	bad := svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-source-range", v)
	spec, ok := strings.CutPrefix(strings.TrimSpace(v), "bytes=")
	if !ok {
		return 0, 0, bad
	}
	a, b, ok := strings.Cut(spec, "-")
	if !ok {
		return 0, 0, bad
	}
	start, perr := strconv.ParseInt(a, 10, 64)
	if perr != nil || start < 0 {
		return 0, 0, bad
	}
	if b == "" {
		return start, -1, nil
	}
	end, perr = strconv.ParseInt(b, 10, 64)
	if perr != nil || end < start {
		return 0, 0, bad
	}
	return start, end, nil
}

// rangeLen is the requested window's length, -1 when open-ended. It
// saturates: "bytes=0-9223372036854775807" is longer than any block, not
// a negative length.
func (spec *copySpec) rangeLen() int64 {
	if !spec.ranged || spec.end < 0 {
		return -1
	}
	if n := spec.end - spec.start; n < math.MaxInt64 {
		return n + 1
	}
	return math.MaxInt64
}

// cannotVerify is CannotVerifyCopySource with the status the source
// answered (or would have: 403 refused, 404 missing, 416 bad range).
func cannotVerify(status int, format string, args ...any) *svcerr.Error {
	e := svcerr.Newf(svcerr.CannotVerifyCopySource, format, args...)
	e.HTTPStatus = status
	return e
}

// redactURL hides a SAS signature before a URL goes into a message or a log.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	q := u.Query()
	for k := range q {
		if strings.EqualFold(k, "sig") {
			q.Set(k, "REDACTED")
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// openSource resolves and opens the copy source: this gateway's own store
// when the URL names a blob it serves, an HTTP GET otherwise.
func (s *Server) openSource(ctx context.Context, r *http.Request, req *request, spec *copySpec) (*copySource, error) {
	if ref, ok := s.localSource(r, req.peer.https, spec.u); ok {
		return s.openLocal(ctx, r, req, spec, ref)
	}
	return s.openRemote(ctx, r, spec)
}

// splitHostPort lowercases the host and splits off an explicit port ("" if
// none).
func splitHostPort(hostport string) (host, port string) {
	host = hostport
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		host, port = h, p
	}
	return strings.ToLower(strings.Trim(host, "[]")), port
}

func defaultPort(scheme string) string {
	if scheme == "https" {
		return "443"
	}
	return "80"
}

// pathStyleHost mirrors parseAddress: IP literals, dot-free names and the
// configured emulator names address the account in the path.
func (s *Server) pathStyleHost(host string) bool {
	if host == "" || net.ParseIP(host) != nil || !strings.Contains(host, ".") {
		return true
	}
	for _, e := range s.opt.EmulatorHosts {
		if strings.EqualFold(e, host) {
			return true
		}
	}
	return false
}

// localSource reports whether u names a blob this gateway serves: the same
// endpoint as the request (host, and port when both sides name one), or,
// host-style, a sibling host (<account>.<same suffix>) of an account it
// serves. Anything else is fetched over HTTP, even if it happens to loop
// back here. https is the scheme the client used (effectivePeer): behind a
// TLS-terminating trusted proxy the request arrives over plain HTTP, but a
// Host without a port then means 443, the port the client spoke to.
func (s *Server) localSource(r *http.Request, https bool, u *url.URL) (leasedb.BlobRef, bool) {
	rh, rp := splitHostPort(r.Host)
	uh, up := splitHostPort(u.Host)
	reqScheme := "http"
	if https {
		reqScheme = "https"
	}
	samePort := rp == up
	if rp != up && (rp == "" || up == "") {
		if rp == "" {
			rp = defaultPort(reqScheme)
		}
		if up == "" {
			up = defaultPort(u.Scheme)
		}
		samePort = rp == up
	}
	if !samePort {
		return leasedb.BlobRef{}, false
	}
	same := rh == uh
	if !same && !s.pathStyleHost(rh) && !s.pathStyleHost(uh) {
		_, rs, _ := strings.Cut(rh, ".")
		_, us, _ := strings.Cut(uh, ".")
		same = rs == us
	}
	if !same {
		return leasedb.BlobRef{}, false
	}
	var src request
	err := s.parseAddress(&http.Request{Host: u.Host, URL: u}, &src)
	if _, known := s.accounts.Lookup(src.account); !known && rh != uh {
		// A sibling host of an account not served here: somebody
		// else's; fetch it.
		return leasedb.BlobRef{}, false
	}
	if err != nil || src.container == "" || src.blob == "" {
		// This endpoint, but no blob: a missing source (openLocal).
		return leasedb.BlobRef{}, true
	}
	// An unknown account on this endpoint is a missing source too.
	return leasedb.BlobRef{Account: src.account, Container: src.container, Name: src.blob}, true
}

// authorizeSource decides whether the caller may read a source in this
// gateway, in Azure's order: the source URL's own SAS; else
// x-ms-copy-source-authorization (an OAuth token, which blobgw cannot
// verify); else a public container; else a Shared Key request of the
// source's own account (Azure allows same-account copies without source
// authorization). Anything else is 403 CannotVerifyCopySource.
func (s *Server) authorizeSource(ctx context.Context, r *http.Request, req *request, spec *copySpec, ref leasedb.BlobRef) error {
	q := spec.u.Query()
	if auth.IsSAS(q) {
		// A token naming a stored access policy finds it in the source
		// container's ACL, as on a direct read (acl.go).
		var dbErr error
		policies := s.sasPolicies(r, &request{account: ref.Account}, &dbErr)
		_, err := auth.VerifySAS(auth.SASRequest{
			Query:    q,
			Resource: auth.Resource{Account: ref.Account, Container: ref.Container, Blob: ref.Name, Snapshot: q.Get("snapshot")},
			Op:       auth.OpReadBlob,
			HTTPS:    spec.u.Scheme == "https",
			ClientIP: req.peer.clientIP(),
			Now:      s.opt.Now(),
		}, s.accounts, policies)
		if dbErr != nil {
			return dbErr
		}
		if err != nil {
			msg := err.Error()
			if e, ok := svcerr.As(err); ok {
				msg = string(e.Code) + ": " + e.Message
			}
			return cannotVerify(http.StatusForbidden, "The copy source's shared access signature was refused (%s).", msg)
		}
		return nil
	}
	if spec.authz != "" {
		scheme, _, _ := strings.Cut(spec.authz, " ")
		return cannotVerify(http.StatusForbidden, "x-ms-copy-source-authorization (%s) cannot be verified for a source in this gateway; use a SAS on the source URL.", scheme)
	}
	if c, _, err := s.db.GetContainer(ctx, ref.Account, ref.Container, ""); err == nil && (c.PublicAccess == "blob" || c.PublicAccess == "container") {
		return nil
	} else if err != nil && !svcerr.HasCode(err, svcerr.ContainerNotFound) {
		return err
	}
	if r.Header.Get("Authorization") != "" && ref.Account == req.account && spec.op != opIncrementalCopy {
		// (Incremental Copy Blob: "the source must be public or
		// authorized with a shared access signature", same account
		// or not.)
		// authorize verified the Shared Key signature for req.account.
		return nil
	}
	return cannotVerify(http.StatusForbidden, "The copy source is not readable by this request: give it a SAS, or copy within one account with Shared Key.")
}

// rehydrateByCopy reports whether an archived source may be read: Copy
// Blob (the async form) of an archived blob to another blob of the same
// account with x-ms-access-tier set to an online tier is how Azure
// rehydrates by copy. The gateway keeps the archived bytes online, so the
// copy completes at once.
func rehydrateByCopy(r *http.Request, req *request, spec *copySpec, ref leasedb.BlobRef) bool {
	tier, ok := leasedb.CanonicalTier(r.Header.Get("x-ms-access-tier"))
	return ok && tier != leasedb.TierArchive && spec.op == opCopyBlob &&
		ref.Account == req.account && ref != req.ref()
}

// openLocal reads a source blob of this gateway: authorization, the
// source conditions against its row, then its extents from the backend.
func (s *Server) openLocal(ctx context.Context, r *http.Request, req *request, spec *copySpec, ref leasedb.BlobRef) (*copySource, error) {
	q := spec.u.Query()
	var snapshot string
	if v := q.Get("snapshot"); v != "" {
		var err error
		if snapshot, err = leasedb.ParseSnapshot(v); err != nil {
			if spec.op.fromURL() {
				return nil, cannotVerify(http.StatusBadRequest, "The copy source's snapshot %q is not a snapshot time.", v)
			}
			return nil, svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-copy-source", redactURL(spec.raw))
		}
	}
	if ref.Name == "" {
		if spec.op.fromURL() {
			return nil, cannotVerify(http.StatusNotFound, "The copy source does not name a blob.")
		}
		return nil, svcerr.New(svcerr.BlobNotFound)
	}
	if err := s.authorizeSource(ctx, r, req, spec, ref); err != nil {
		return nil, err
	}
	// A source version (restoring an old version is a copy of it onto
	// the base blob) is read as that version, never as the current blob.
	var version string
	if v, ok := versionParam(q); ok {
		var err error
		if version, err = leasedb.ParseVersionID(v); err != nil || snapshot != "" {
			if spec.op.fromURL() {
				return nil, cannotVerify(http.StatusBadRequest, "The copy source's versionid %q is not a version id of a blob.", v)
			}
			return nil, svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-copy-source", redactURL(spec.raw))
		}
	}
	var b *leasedb.Blob
	var now time.Time
	var err error
	if snapshot != "" {
		b, now, err = s.db.GetSnapshot(ctx, ref, snapshot, spec.cond)
	} else if version != "" {
		b, now, err = s.db.GetVersion(ctx, ref, version, "", spec.cond)
	} else {
		b, now, err = s.db.GetBlob(ctx, ref, "", spec.cond)
	}
	switch {
	case err == nil:
	case leasedb.IsNotModified(err) || svcerr.HasCode(err, svcerr.ConditionNotMet):
		return nil, svcerr.New(svcerr.SourceConditionNotMet)
	case svcerr.HasCode(err, svcerr.BlobNotFound), svcerr.HasCode(err, svcerr.ContainerNotFound):
		if spec.op.fromURL() {
			e, _ := svcerr.As(err)
			return nil, cannotVerify(http.StatusNotFound, "%s", e.Message)
		}
		return nil, err
	default:
		return nil, err
	}
	// x-ms-source-lease-id: the source's active lease must be this one
	// (a snapshot or version has none), as x-ms-lease-id on a read.
	if err := leasedb.CheckReadLease(b.Lease, spec.leaseID, leasedb.BlobTarget, now); err != nil {
		return nil, err
	}
	if b.AccessTier == leasedb.TierArchive && !rehydrateByCopy(r, req, spec, ref) {
		return nil, svcerr.New(svcerr.BlobArchived)
	}
	start, end := int64(0), b.Size // [start, end)
	if spec.ranged {
		start = spec.start
		if spec.end >= 0 && spec.end < b.Size {
			end = spec.end + 1 // (compared first: end+1 overflows for the largest int64)
		}
		if start >= b.Size {
			return nil, cannotVerify(http.StatusRequestedRangeNotSatisfiable, "The source range %d-%d is outside the source blob's %d bytes.", spec.start, spec.end, b.Size)
		}
	}
	src := &copySource{
		body:       &extentReader{ctx: ctx, be: s.backend, ext: leasedb.Segments(b), start: start, end: end},
		size:       end - start,
		typ:        b.Type,
		props:      b.Props,
		meta:       b.Metadata,
		tags:       b.Tags,
		blockCount: b.BlockCount,
		sealed:     b.Sealed,
		seq:        b.SequenceNumber,
	}
	if start == 0 && end == b.Size {
		// A page blob's extents are its runs (holes between them):
		// only a page blob copy may share them (Copy Blob).
		src.ref, src.extents = ref, b.Extents
		if b.Type == "PageBlob" && src.extents == nil {
			src.extents = []leasedb.Extent{} // no page written: nothing to share
		}
	}
	return src, nil
}

// extentReader reads the window [start, end) of the blob formed by ext,
// opening one extent at a time (memory stays at the caller's buffer).
type extentReader struct {
	ctx        context.Context
	be         backends.Backend
	ext        []leasedb.Extent
	i          int   // current extent
	off        int64 // blob offset of ext[i]
	start, end int64 // what is still to be opened
	cur        io.ReadCloser
	left       int64 // bytes still expected from cur
}

func (e *extentReader) Read(p []byte) (int, error) {
	for {
		if e.cur != nil {
			if e.left == 0 {
				e.cur.Close()
				e.cur = nil
				continue
			}
			if int64(len(p)) > e.left {
				p = p[:e.left]
			}
			n, err := e.cur.Read(p)
			e.left -= int64(n)
			if err == io.EOF {
				if e.left > 0 {
					return n, fmt.Errorf("copy source extent: %w", io.ErrUnexpectedEOF)
				}
				err = nil
			}
			if n > 0 || err != nil {
				return n, err
			}
			continue
		}
		if e.start >= e.end {
			return 0, io.EOF
		}
		for e.i < len(e.ext) && e.off+e.ext[e.i].Size <= e.start {
			e.off += e.ext[e.i].Size
			e.i++
		}
		if e.i == len(e.ext) {
			return 0, fmt.Errorf("copy source: extents end before byte %d", e.start)
		}
		x := e.ext[e.i]
		from := e.start - e.off
		n := min(x.Size, e.end-e.off) - from
		if x.Inline() {
			// A small blob's bytes, kept in its row.
			e.cur, e.left = io.NopCloser(bytes.NewReader(x.Data[from:from+n])), n
			e.start += n
			continue
		}
		if x.Key == "" {
			// A page blob's hole reads as zeros.
			e.cur, e.left = io.NopCloser(io.LimitReader(zeroReader{}, n)), n
			e.start += n
			continue
		}
		rc, err := e.be.Open(e.ctx, x.Key, x.Off+from, n)
		if err != nil {
			return 0, fmt.Errorf("open copy source extent %s: %w", x.Key, err)
		}
		e.cur, e.left = rc, n
		e.start += n
	}
}

// zeroReader reads zeros forever.
type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func (e *extentReader) Close() error {
	if e.cur != nil {
		err := e.cur.Close()
		e.cur = nil
		return err
	}
	return nil
}

// openRemote fetches the source with a GET: the source conditions and
// range travel as the standard headers, an OAuth token in
// x-ms-copy-source-authorization as Authorization.
func (s *Server) openRemote(ctx context.Context, r *http.Request, spec *copySpec) (*copySource, error) {
	ctx, cancel := context.WithCancel(ctx)
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, spec.raw, nil)
	if err != nil {
		cancel()
		return nil, svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-copy-source", redactURL(spec.raw))
	}
	for k, vs := range spec.fwd {
		hreq.Header[k] = vs
	}
	hreq.Header.Set("x-ms-version", DefaultVersion)
	hreq.Header.Set("User-Agent", "blobgw-copy")
	if spec.leaseID != "" {
		// x-ms-source-lease-id is the source read's x-ms-lease-id.
		hreq.Header.Set("x-ms-lease-id", spec.leaseID)
	}
	if spec.authz != "" {
		if scheme, _, _ := strings.Cut(spec.authz, " "); !strings.EqualFold(scheme, "Bearer") {
			cancel()
			return nil, svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-copy-source-authorization", scheme+" ...")
		}
		hreq.Header.Set("Authorization", spec.authz)
	}
	if spec.ranged {
		if spec.end >= 0 {
			hreq.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", spec.start, spec.end))
		} else {
			hreq.Header.Set("Range", fmt.Sprintf("bytes=%d-", spec.start))
		}
	}
	resp, err := s.opt.CopyClient.Do(hreq)
	if err != nil {
		cancel()
		if r.Context().Err() != nil {
			return nil, r.Context().Err()
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its URL may carry the SAS signature
		}
		return nil, cannotVerify(http.StatusInternalServerError, "Fetching the copy source %s failed: %v", redactURL(spec.raw), err)
	}
	fail := func(e error) (*copySource, error) {
		resp.Body.Close()
		cancel()
		return nil, e
	}
	switch resp.StatusCode {
	case http.StatusOK, http.StatusPartialContent:
	case http.StatusNotModified, http.StatusPreconditionFailed:
		return fail(svcerr.New(svcerr.SourceConditionNotMet))
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusRequestedRangeNotSatisfiable:
		status := resp.StatusCode
		if status == http.StatusUnauthorized {
			status = http.StatusForbidden
		}
		return fail(cannotVerify(status, "The copy source %s answered %s.", redactURL(spec.raw), resp.Status))
	default:
		return fail(cannotVerify(http.StatusConflict, "The copy source %s answered %s.", redactURL(spec.raw), resp.Status))
	}
	src := &copySource{size: resp.ContentLength, remote: true}
	idle := newIdleReader(resp.Body, resp.Body, cancel, copyIdleTimeout)
	src.body = idle
	if spec.ranged && resp.StatusCode == http.StatusOK {
		// The source ignored Range: cut the window out of the whole body.
		if resp.ContentLength >= 0 && spec.start >= resp.ContentLength {
			idle.Close()
			return nil, cannotVerify(http.StatusRequestedRangeNotSatisfiable, "The source range starts past the copy source's %d bytes.", resp.ContentLength)
		}
		if _, err := io.CopyN(io.Discard, idle, spec.start); err != nil {
			idle.Close()
			if r.Context().Err() != nil {
				return nil, r.Context().Err()
			}
			return nil, cannotVerify(http.StatusInternalServerError, "Reading the copy source failed: %v", err)
		}
		n := int64(math.MaxInt64)
		if l := spec.rangeLen(); l >= 0 {
			n = l
		}
		src.size = -1 // at most n: the source may be shorter
		if resp.ContentLength >= 0 {
			n = min(n, resp.ContentLength-spec.start)
			src.size = n
		}
		src.body = struct {
			io.Reader
			io.Closer
		}{io.LimitReader(idle, n), idle}
	}
	src.typ, src.props, src.meta = remoteBlob(resp.Header, resp.StatusCode == http.StatusOK && !spec.ranged)
	src.sealed = strings.EqualFold(resp.Header.Get("x-ms-blob-sealed"), "true")
	src.remoteTags, _ = strconv.Atoi(resp.Header.Get("x-ms-tag-count"))
	if src.typ == "PageBlob" {
		// Get Blob of a page blob reports its sequence number.
		src.seq, _ = strconv.ParseInt(resp.Header.Get("x-ms-blob-sequence-number"), 10, 64)
		src.seq = max(src.seq, 0)
	}
	return src, nil
}

// remoteBlob reads what a GET of an Azure blob (or any HTTP object) says
// about it. whole: the body is the entire object, so Content-MD5 is the
// object's.
func remoteBlob(h http.Header, whole bool) (typ string, p leasedb.Props, meta map[string]string) {
	typ = h.Get("x-ms-blob-type")
	p = leasedb.Props{
		ContentType:        h.Get("Content-Type"),
		ContentEncoding:    h.Get("Content-Encoding"),
		ContentLanguage:    h.Get("Content-Language"),
		ContentDisposition: h.Get("Content-Disposition"),
		CacheControl:       h.Get("Cache-Control"),
	}
	md5h := "x-ms-blob-content-md5"
	if whole {
		md5h = "Content-MD5"
	}
	if v := h.Get(md5h); v != "" {
		if sum, err := decodeMD5(v); err == nil {
			p.ContentMD5 = sum
		}
	}
	meta = map[string]string{}
	for k, vs := range h {
		lk := strings.ToLower(k)
		if name, ok := strings.CutPrefix(lk, metaPrefix); ok && validMetaName(name) {
			meta[name] = strings.Join(vs, ",")
		}
	}
	return typ, p, meta
}

// idleReader cancels the fetch when no byte arrived for idle, so a source
// that stalls cannot hold the request (and its staged object) forever.
type idleReader struct {
	r      io.Reader
	c      io.Closer
	cancel context.CancelFunc
	idle   time.Duration
	timer  *time.Timer
}

func newIdleReader(r io.Reader, c io.Closer, cancel context.CancelFunc, idle time.Duration) *idleReader {
	return &idleReader{r: r, c: c, cancel: cancel, idle: idle, timer: time.AfterFunc(idle, cancel)}
}

func (ir *idleReader) Read(p []byte) (int, error) {
	n, err := ir.r.Read(p)
	if n > 0 {
		ir.timer.Reset(ir.idle)
	}
	return n, err
}

func (ir *idleReader) Close() error {
	ir.timer.Stop()
	err := ir.c.Close()
	ir.cancel()
	return err
}
