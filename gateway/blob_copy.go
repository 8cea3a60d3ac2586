package gateway

import (
	"bytes"
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/blobgw/blobgw/backends"
	"github.com/blobgw/blobgw/gateway/auth"
	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
	"github.com/google/uuid"
)

// Copy Blob (PUT with x-ms-copy-source and no x-ms-blob-type), Copy Blob
// From URL (the same with x-ms-requires-sync: true), Put Blob From URL,
// Put Block From URL, Append Block From URL and Abort Copy Blob (contract
// §1.3, §3.8, §5.4).
//
// Every copy is finished before the answer: Copy Blob answers 202 with
// x-ms-copy-status: success, never pending, so there is nothing to poll and
// nothing to abort. The source is streamed — from this gateway's own
// backend when the URL names a blob it serves (the source authorized as
// Azure does: its SAS, a public container, or a Shared Key request of the
// same account), else fetched over HTTP(S) — into a NEW immutable object
// through s.stage, and committed by the usual PutBlob / StageBlock /
// AppendBlock transaction with the destination's lease and conditions.
//
// Bytes are copied, never shared: source and destination rows never point
// at the same backend object. A shared extent would need reference
// counting, which the collector does not have (it deletes a replaced or
// deleted row's keys after the grace period, whoever else points at them).
// Copying costs the bytes once more in the backend; it never buffers a
// whole blob in memory.

// copyOp says which copy operation a request is.
type copyOp int

const (
	opCopyBlob        copyOp = iota // Copy Blob (async on Azure)
	opCopyBlobSync                  // Copy Blob From URL
	opPutBlobFromURL                // Put Blob From URL
	opPutBlockFromURL               // Put Block From URL
	opAppendFromURL                 // Append Block From URL
)

// fromURL reports whether the operation is one of the "From URL" family,
// whose source failures are all CannotVerifyCopySource (a missing source
// included); an async Copy Blob reports a missing source in this account as
// 404 BlobNotFound, as Azure does.
func (op copyOp) fromURL() bool { return op != opCopyBlob }

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
	// max is the largest source length the operation accepts.
	max int64
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
	blockCount int               // local append blobs
	sealed     bool              // a sealed append blob
	remote     bool
	// A local source read whole: its name and extents, so a copy onto the
	// same name (a restore from a snapshot) can share them.
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
	if op == opPutBlockFromURL || op == opAppendFromURL {
		if v := r.Header.Get("x-ms-source-range"); v != "" {
			if spec.start, spec.end, err = parseSourceRange(v); err != nil {
				return nil, err
			}
			spec.ranged = true
		}
	}
	spec.authz = r.Header.Get("x-ms-copy-source-authorization")
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

// rangeLen is the requested window's length, -1 when open-ended.
func (spec *copySpec) rangeLen() int64 {
	if !spec.ranged || spec.end < 0 {
		return -1
	}
	return spec.end - spec.start + 1
}

// cannotVerify is CannotVerifyCopySource with the status the source
// answered (or would have: 403 refused, 404 missing, 416 bad range).
func cannotVerify(status int, format string, args ...any) *svcerr.Error {
	e := svcerr.Newf(svcerr.CannotVerifyCopySource, format, args...)
	e.HTTPStatus = status
	return e
}

// redactURL hides a SAS signature before a URL goes into a message or a log.
// anyAdopted reports whether one of the extents is an object adopted from
// the bucket (blobgw import s3): those back one blob name only (migration
// 0006), so a copy of them copies the bytes.
func (s *Server) anyAdopted(extents []leasedb.Extent) bool {
	a := backends.FeaturesOf(s.backend).AdoptedKeys
	if a == nil {
		return false
	}
	for _, e := range extents {
		if a.IsAdopted(e.Key) {
			return true
		}
	}
	return false
}

// withoutSignature is a copy source URL as recorded on the destination
// (x-ms-copy-source): a SAS keeps its fields but loses its signature.
func withoutSignature(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	q := u.Query()
	for k := range q {
		if strings.EqualFold(k, "sig") {
			q.Del(k)
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

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

// ---- opening a source ----

// openSource resolves and opens the copy source: this gateway's own store
// when the URL names a blob it serves, an HTTP GET otherwise.
func (s *Server) openSource(ctx context.Context, r *http.Request, req *request, spec *copySpec) (*copySource, error) {
	if ref, ok := s.localSource(r, spec.u); ok {
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
// back here.
func (s *Server) localSource(r *http.Request, u *url.URL) (leasedb.BlobRef, bool) {
	rh, rp := splitHostPort(r.Host)
	uh, up := splitHostPort(u.Host)
	reqScheme := "http"
	if r.TLS != nil {
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
			ClientIP: clientIP(r),
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
	if r.Header.Get("Authorization") != "" && ref.Account == req.account {
		// authorize verified the Shared Key signature for req.account.
		return nil
	}
	return cannotVerify(http.StatusForbidden, "The copy source is not readable by this request: give it a SAS, or copy within one account with Shared Key.")
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
	if namesVersion(q) {
		// The gateway keeps no versions: a source version is a missing
		// source, never the current blob.
		if spec.op.fromURL() {
			return nil, cannotVerify(http.StatusNotFound, "The copy source's blob version does not exist: this gateway keeps no blob versions.")
		}
		return nil, svcerr.Newf(svcerr.BlobNotFound, "The copy source's blob version does not exist: this gateway keeps no blob versions.")
	}
	var b *leasedb.Blob
	var err error
	if snapshot != "" {
		b, _, err = s.db.GetSnapshot(ctx, ref, snapshot, spec.cond)
	} else {
		b, _, err = s.db.GetBlob(ctx, ref, "", spec.cond)
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
	if b.AccessTier == leasedb.TierArchive {
		return nil, svcerr.New(svcerr.BlobArchived)
	}
	start, end := int64(0), b.Size // [start, end)
	if spec.ranged {
		start = spec.start
		if spec.end >= 0 {
			end = min(spec.end+1, b.Size)
		}
		if start >= b.Size {
			return nil, cannotVerify(http.StatusRequestedRangeNotSatisfiable, "The source range %d-%d is outside the source blob's %d bytes.", spec.start, spec.end, b.Size)
		}
	}
	src := &copySource{
		body:       &extentReader{ctx: ctx, be: s.backend, ext: b.Extents, start: start, end: end},
		size:       end - start,
		typ:        b.Type,
		props:      b.Props,
		meta:       b.Metadata,
		tags:       b.Tags,
		blockCount: b.BlockCount,
		sealed:     b.Sealed,
	}
	if start == 0 && end == b.Size {
		src.ref, src.extents = ref, b.Extents
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
		rc, err := e.be.Open(e.ctx, x.Key, from, n)
		if err != nil {
			return 0, fmt.Errorf("open copy source extent %s: %w", x.Key, err)
		}
		e.cur, e.left = rc, n
		e.start += n
	}
}

func (e *extentReader) Close() error {
	if e.cur != nil {
		err := e.cur.Close()
		e.cur = nil
		return err
	}
	return nil
}

// Timeouts of the default copy client and of a remote source's body.
const (
	copyDialTimeout   = 30 * time.Second
	copyHeaderTimeout = 2 * time.Minute
	copyIdleTimeout   = 2 * time.Minute
)

// defaultCopyClient fetches remote copy sources. It never decompresses
// (the bytes are copied as stored), bounds connecting and waiting for the
// headers, and follows at most five redirects, none to another scheme. The
// body has no overall deadline (sources may be large); an idle read times
// out instead (idleReader).
func defaultCopyClient() *http.Client {
	dialer := &net.Dialer{Timeout: copyDialTimeout, KeepAlive: 30 * time.Second, Control: refuseLinkLocal}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   15 * time.Second,
		ResponseHeaderTimeout: copyHeaderTimeout,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConnsPerHost:   16,
		DisableCompression:    true,
		ForceAttemptHTTP2:     true,
	}
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(next *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("stopped after 5 redirects")
			}
			if next.URL.Scheme != via[0].URL.Scheme {
				return fmt.Errorf("redirect from %s to %s refused", via[0].URL.Scheme, next.URL.Scheme)
			}
			return nil
		},
	}
}

// refuseLinkLocal keeps copy sources off link-local, multicast and
// unspecified addresses: a caller allowed to write a blob must not be able
// to have the gateway fetch a cloud metadata endpoint (169.254.169.254,
// fe80::/10) into a blob it can read back. Loopback and private networks
// stay reachable (another gateway, an emulator); a deployment that needs a
// stricter policy sets Options.CopyClient.
func refuseLinkLocal(network, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		host = address
	}
	ip := net.ParseIP(host)
	if ip != nil && (ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified()) {
		return fmt.Errorf("copy source address %s refused", ip)
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
		return nil, cannotVerify(http.StatusBadGateway, "Fetching the copy source %s failed: %v", redactURL(spec.raw), err)
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
			return nil, cannotVerify(http.StatusBadGateway, "Reading the copy source failed: %v", err)
		}
		n := int64(math.MaxInt64)
		if spec.end >= 0 {
			n = spec.end - spec.start + 1
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

// ---- copying the bytes ----

var errSourceTooLarge = errors.New("copy source exceeds the operation's size limit")

// sourceReader passes the source through to s.stage and remembers how the
// source failed, so a broken source is told apart from a broken backend.
type sourceReader struct {
	r    io.Reader
	size int64 // expected, -1 unknown
	max  int64
	n    int64
	err  error
}

func (sr *sourceReader) Read(p []byte) (int, error) {
	n, err := sr.r.Read(p)
	sr.n += int64(n)
	switch {
	case sr.n > sr.max:
		sr.err = errSourceTooLarge
		return n, sr.err
	case err == io.EOF && sr.size >= 0 && sr.n < sr.size:
		sr.err = io.ErrUnexpectedEOF
		return n, sr.err
	case err != nil && err != io.EOF:
		sr.err = err
	}
	return n, err
}

// copyBytes streams src into a new object (an upload intent first, as every
// write) and returns its extent and the MD5 of the bytes. With dropEmpty an
// empty source yields no object (Extent.Key ""). On failure nothing stays
// behind.
func (s *Server) copyBytes(ctx context.Context, src *copySource, max int64, dropEmpty bool) (leasedb.Extent, []byte, error) {
	if src.size > max {
		return leasedb.Extent{}, nil, svcerr.New(svcerr.RequestBodyTooLarge)
	}
	if src.size == 0 && dropEmpty {
		return leasedb.Extent{}, md5.New().Sum(nil), nil
	}
	sr := &sourceReader{r: src.body, size: src.size, max: max}
	ext, got, err := s.stage(ctx, sr, src.size, true, false)
	sum := got.md5
	if err != nil {
		if sr.err == nil {
			return leasedb.Extent{}, nil, err
		}
		switch {
		case errors.Is(sr.err, errSourceTooLarge):
			return leasedb.Extent{}, nil, svcerr.New(svcerr.RequestBodyTooLarge)
		case ctx.Err() != nil:
			return leasedb.Extent{}, nil, ctx.Err()
		case src.remote:
			return leasedb.Extent{}, nil, cannotVerify(http.StatusBadGateway, "The copy source failed after %d bytes: %v", sr.n, sr.err)
		}
		return leasedb.Extent{}, nil, fmt.Errorf("reading copy source: %w", sr.err)
	}
	if ext.Size == 0 && dropEmpty {
		s.discard(ext.Key)
		return leasedb.Extent{}, sum, nil
	}
	return ext, sum, nil
}

// copyChecked is copyBytes of a whole source (an empty one yields no
// object) followed by the x-ms-source-content-md5 check, which discards the
// copy when it fails.
func (s *Server) copyChecked(ctx context.Context, r *http.Request, src *copySource, max int64) (leasedb.Extent, []byte, error) {
	ext, sum, err := s.copyBytes(ctx, src, max, true)
	if err != nil {
		return ext, nil, err
	}
	if err := checkSourceMD5(r.Header, sum); err != nil {
		s.discardAll(extentsOf(ext))
		return leasedb.Extent{}, nil, err
	}
	return ext, sum, nil
}

// extentsOf is the extent list of a blob made of ext: none when ext holds
// no object (an empty copy).
func extentsOf(ext leasedb.Extent) []leasedb.Extent {
	if ext.Key == "" {
		return nil
	}
	return []leasedb.Extent{ext}
}

// checkSourceMD5 compares x-ms-source-content-md5, when sent, with the MD5
// of the bytes copied.
func checkSourceMD5(h http.Header, sum []byte) error {
	v := h.Get("x-ms-source-content-md5")
	if v == "" {
		return nil
	}
	want, err := decodeMD5(v)
	if err != nil {
		return svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-source-content-md5", v)
	}
	if !bytes.Equal(want, sum) {
		return svcerr.New(svcerr.Md5Mismatch)
	}
	return nil
}

// zeroBody refuses a From URL request that carries a body (Content-Length
// must be 0: the bytes come from the source).
func zeroBody(r *http.Request) error {
	if r.ContentLength > 0 {
		return svcerr.Header(svcerr.InvalidHeaderValue, "Content-Length", strconv.FormatInt(r.ContentLength, 10))
	}
	return nil
}

// targetCond renames a destination condition failure for the operations
// that report it as TargetConditionNotMet (Put Blob From URL, contract
// §3.8).
func targetCond(err error) error {
	if svcerr.HasCode(err, svcerr.ConditionNotMet) {
		return svcerr.New(svcerr.TargetConditionNotMet)
	}
	return err
}

// ---- handlers ----

// Copy Blob: PUT with x-ms-copy-source → 202, x-ms-copy-status: success.
// With x-ms-requires-sync: true it is Copy Blob From URL, same path and
// answer. The destination takes the source's type, properties and (unless
// the request sends x-ms-meta-*) metadata; its own lease is checked and
// kept (§5.4, §5.5); tags come from x-ms-tags (or the source's with
// x-ms-copy-source-tag-option: COPY on the sync form). A whole blob (or
// snapshot) of this gateway is copied by sharing its backend objects (a
// key is collected when the last blob name referencing it lets go);
// ranges, external sources and adopted objects are streamed into new
// objects.
//
// The destination records the copy (id, source without its SAS signature,
// status success, progress, completion time): Get Blob / Get Blob
// Properties report it as x-ms-copy-* and List Blobs with include=copy,
// until a Put Blob, Put Block List or Set Blob Properties changes the blob.
func (s *Server) copyBlob(w http.ResponseWriter, r *http.Request, req *request) error {
	ctx := r.Context()
	op := opCopyBlob
	if strings.EqualFold(r.Header.Get("x-ms-requires-sync"), "true") {
		op = opCopyBlobSync
	}
	spec, err := parseCopySpec(r, op, math.MaxInt64)
	if err != nil {
		return err
	}
	meta, err := parseMetadata(r.Header, req.metaNames)
	if err != nil {
		return err
	}
	cond, leaseID, err := writeConds(r)
	if err != nil {
		return err
	}
	preq := leasedb.PutBlobRequest{Ref: req.ref(), LeaseID: leaseID, Cond: cond, CreateOnly: req.createOnly,
		Copy: leasedb.CopyTarget{InfiniteLeaseOnly: op == opCopyBlob}}
	if preq.Tags, err = parseTagsHeader(r.Header); err != nil {
		return err
	}
	copyTags, err := copyTagOption(r.Header, op)
	if err != nil {
		return err
	}
	if preq.PutLease, err = parsePutLease(r, leaseID); err != nil {
		return err
	}
	if err := s.db.Precheck(ctx, preq); err != nil {
		return err
	}

	src, err := s.openSource(ctx, r, req, spec)
	if err != nil {
		return err
	}
	defer src.Close()
	preq.Type = src.typ
	switch preq.Type {
	case "":
		preq.Type = "BlockBlob" // a plain HTTP object
	case "BlockBlob", "AppendBlob":
	default:
		return svcerr.Newf(svcerr.InvalidBlobType, "Copying a %s is not supported by this gateway.", preq.Type)
	}
	preq.Copy.SameType = true
	if preq.AccessTier, err = parseTierHeader(r.Header, preq.Type); err != nil {
		return err
	}
	preq.Props = src.props
	preq.Metadata = meta
	if len(meta) == 0 {
		preq.Metadata = src.meta
	}
	if copyTags {
		preq.Tags = src.tags
	}
	if preq.Type == "AppendBlob" {
		preq.Copy.BlockCount = src.blockCount
		// A sealed source makes a sealed copy, unless x-ms-seal-blob
		// says otherwise (it may also seal the copy of an open one).
		preq.Copy.Sealed = src.sealed
		if v := r.Header.Get("x-ms-seal-blob"); v != "" {
			if preq.Copy.Sealed, err = strconv.ParseBool(v); err != nil {
				return svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-seal-blob", v)
			}
		}
	}
	// A whole source in this gateway shares its extents with the new row:
	// nothing is copied. When the source changes before the commit, the
	// bytes are copied after all.
	var b *leasedb.Blob
	var leaseRes leasedb.LeaseResult
	var sum []byte
	copyID := uuid.NewString()
	record := func(n int64) *leasedb.CopyInfo {
		return &leasedb.CopyInfo{ID: copyID, Source: withoutSignature(spec.raw), Status: "success",
			Progress: fmt.Sprintf("%d/%d", n, n)}
	}
	// (The sync form answers with the bytes' MD5, and x-ms-source-content-md5
	// is checked against it: both need the stored MD5, or a copy.)
	knownMD5 := src.props.ContentMD5 != nil || op == opCopyBlob && r.Header.Get("x-ms-source-content-md5") == ""
	if src.extents != nil && knownMD5 && !s.anyAdopted(src.extents) {
		shared := preq
		shared.Extents = src.extents
		shared.Copy.SharedExtents = true
		shared.Copy.Source = src.ref
		shared.Copy.Info = record(src.size)
		sum = src.props.ContentMD5
		if err := checkSourceMD5(r.Header, sum); err != nil {
			return err
		}
		err := s.commit(ctx, nil, func(ctx context.Context) (err error) {
			b, leaseRes, err = s.db.PutBlob(ctx, shared)
			return err
		})
		if err != nil && !errors.Is(err, leasedb.ErrSourceGone) {
			return err
		}
	}
	if b == nil {
		ext, digest, err := s.copyChecked(ctx, r, src, spec.max)
		if err != nil {
			return err
		}
		sum = digest
		preq.Extents = extentsOf(ext)
		if preq.Type == "AppendBlob" && src.remote && ext.Size > 0 {
			preq.Copy.BlockCount = 1
		}
		preq.Copy.Info = record(ext.Size)
		err = s.commit(ctx, preq.Extents, func(ctx context.Context) (err error) {
			b, leaseRes, err = s.db.PutBlob(ctx, preq)
			return err
		})
		if err != nil {
			return err
		}
	}
	h := w.Header()
	setETagLM(h, b.ETag, b.LastModified)
	h.Set("x-ms-copy-id", copyID)
	h.Set("x-ms-copy-status", "success")
	if op == opCopyBlobSync && sum != nil {
		h.Set("Content-MD5", b64(sum))
	}
	if preq.LeaseAction == leasedb.PutLeaseAcquire {
		h.Set("x-ms-lease-id", leaseRes.ID)
	}
	w.WriteHeader(http.StatusAccepted)
	return nil
}

// copyTagOption reads x-ms-copy-source-tag-option: REPLACE (default: tags
// from x-ms-tags) or COPY (the source's tags; sync forms only).
func copyTagOption(h http.Header, op copyOp) (bool, error) {
	v := h.Get("x-ms-copy-source-tag-option")
	switch {
	case v == "" || strings.EqualFold(v, "REPLACE"):
		return false, nil
	case strings.EqualFold(v, "COPY") && op != opCopyBlob:
		if h.Get("x-ms-tags") != "" {
			return false, svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-tags", h.Get("x-ms-tags"))
		}
		return true, nil
	}
	return false, svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-copy-source-tag-option", v)
}

// Put Blob From URL: PUT with x-ms-blob-type: BlockBlob and
// x-ms-copy-source → 201. A Put Blob whose body is the source: the blob's
// properties are the source's (unless x-ms-copy-source-blob-properties:
// false), each overridden by an x-ms-blob-content-* header sent; metadata
// and tags are the request's (tags: the source's with
// x-ms-copy-source-tag-option: COPY). A destination condition that fails is
// 412 TargetConditionNotMet (§3.8).
func (s *Server) putBlobFromURL(w http.ResponseWriter, r *http.Request, req *request) error {
	ctx := r.Context()
	if bt := r.Header.Get("x-ms-blob-type"); bt != "BlockBlob" {
		return svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-blob-type", bt)
	}
	if err := zeroBody(r); err != nil {
		return err
	}
	spec, err := parseCopySpec(r, opPutBlobFromURL, s.opt.MaxPutBlobSize)
	if err != nil {
		return err
	}
	reqProps, err := parseBlobProps(r.Header, false)
	if err != nil {
		return err
	}
	copyProps := !strings.EqualFold(r.Header.Get("x-ms-copy-source-blob-properties"), "false")
	meta, err := parseMetadata(r.Header, req.metaNames)
	if err != nil {
		return err
	}
	cond, leaseID, err := writeConds(r)
	if err != nil {
		return err
	}
	preq := leasedb.PutBlobRequest{Ref: req.ref(), Type: "BlockBlob", BlobContent: leasedb.BlobContent{Metadata: meta}, LeaseID: leaseID, Cond: cond, CreateOnly: req.createOnly}
	if preq.Tags, err = parseTagsHeader(r.Header); err != nil {
		return err
	}
	copyTags, err := copyTagOption(r.Header, opPutBlobFromURL)
	if err != nil {
		return err
	}
	if preq.AccessTier, err = parseTierHeader(r.Header, "BlockBlob"); err != nil {
		return err
	}
	if preq.PutLease, err = parsePutLease(r, leaseID); err != nil {
		return err
	}
	if err := s.db.Precheck(ctx, preq); err != nil {
		return targetCond(err)
	}

	src, err := s.openSource(ctx, r, req, spec)
	if err != nil {
		return err
	}
	defer src.Close()
	if copyProps {
		preq.Props = src.props
	}
	overrideProps(&preq.Props, reqProps, r.Header)
	if copyTags {
		preq.Tags = src.tags
	}
	ext, sum, err := s.copyChecked(ctx, r, src, spec.max)
	if err != nil {
		return err
	}
	preq.Extents = extentsOf(ext)
	if reqProps.ContentMD5 == nil {
		// The whole blob's MD5 is known: the bytes just went through.
		preq.Props.ContentMD5 = sum
	}
	var b *leasedb.Blob
	var leaseRes leasedb.LeaseResult
	err = s.commit(ctx, preq.Extents, func(ctx context.Context) (err error) {
		b, leaseRes, err = s.db.PutBlob(ctx, preq)
		return err
	})
	if err != nil {
		return targetCond(err)
	}
	h := w.Header()
	setETagLM(h, b.ETag, b.LastModified)
	h.Set("Content-MD5", b64(sum))
	h.Set("x-ms-request-server-encrypted", "true")
	if preq.LeaseAction == leasedb.PutLeaseAcquire {
		h.Set("x-ms-lease-id", leaseRes.ID)
	}
	w.WriteHeader(http.StatusCreated)
	return nil
}

// overrideProps lays the x-ms-blob-content-* headers the request sent over
// the source's properties.
func overrideProps(p *leasedb.Props, req leasedb.Props, h http.Header) {
	sent := func(name string) bool { _, ok := h[http.CanonicalHeaderKey(name)]; return ok }
	if sent("x-ms-blob-content-type") {
		p.ContentType = req.ContentType
	}
	if sent("x-ms-blob-content-encoding") {
		p.ContentEncoding = req.ContentEncoding
	}
	if sent("x-ms-blob-content-language") {
		p.ContentLanguage = req.ContentLanguage
	}
	if sent("x-ms-blob-content-disposition") {
		p.ContentDisposition = req.ContentDisposition
	}
	if sent("x-ms-blob-cache-control") {
		p.CacheControl = req.CacheControl
	}
	if req.ContentMD5 != nil {
		p.ContentMD5 = req.ContentMD5
	}
}

// Put Block From URL: PUT ?comp=block&blockid=<id> with x-ms-copy-source →
// 201. The block is the source (or its x-ms-source-range), staged as its
// own object like any block.
func (s *Server) putBlockFromURL(w http.ResponseWriter, r *http.Request, req *request) error {
	ctx := r.Context()
	id, err := parseBlockID(req)
	if err != nil {
		return err
	}
	if err := zeroBody(r); err != nil {
		return err
	}
	spec, err := parseCopySpec(r, opPutBlockFromURL, maxBlockSize)
	if err != nil {
		return err
	}
	if n := spec.rangeLen(); n > maxBlockSize {
		return svcerr.New(svcerr.RequestBodyTooLarge)
	}
	leaseID, err := leaseIDHeader(r.Header)
	if err != nil {
		return err
	}
	if err := s.db.PrecheckBlock(ctx, req.ref(), leaseID); err != nil {
		return err
	}
	src, err := s.openSource(ctx, r, req, spec)
	if err != nil {
		return err
	}
	defer src.Close()
	ext, sum, err := s.copyBytes(ctx, src, spec.max, false)
	if err != nil {
		return err
	}
	if err := checkSourceMD5(r.Header, sum); err != nil {
		s.discard(ext.Key)
		return err
	}
	err = s.commit(ctx, []leasedb.Extent{ext}, func(ctx context.Context) error {
		return s.db.StageBlock(ctx, leasedb.StageBlockRequest{
			Ref: req.ref(), LeaseID: leaseID,
			Block: leasedb.Block{ID: id, Key: ext.Key, Size: ext.Size},
		})
	})
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-MD5", b64(sum))
	h.Set("x-ms-request-server-encrypted", "true")
	w.WriteHeader(http.StatusCreated)
	return nil
}

// Append Block From URL: PUT ?comp=appendblock with x-ms-copy-source → 201.
// Append Block (§7.5) whose block is the source or its x-ms-source-range,
// at most 100 MiB.
func (s *Server) appendBlockFromURL(w http.ResponseWriter, r *http.Request, req *request) error {
	ctx := r.Context()
	if err := zeroBody(r); err != nil {
		return err
	}
	spec, err := parseCopySpec(r, opAppendFromURL, maxAppendBlockSize)
	if err != nil {
		return err
	}
	if n := spec.rangeLen(); n > maxAppendBlockSize {
		return svcerr.New(svcerr.RequestBodyTooLarge)
	}
	areq, err := parseAppendRequest(r, req)
	if err != nil {
		return err
	}
	if err := s.db.PrecheckAppend(ctx, areq, max(spec.rangeLen(), 0)); err != nil {
		return err
	}
	src, err := s.openSource(ctx, r, req, spec)
	if err != nil {
		return err
	}
	defer src.Close()
	if src.size == 0 {
		return svcerr.Newf(svcerr.InvalidInput, "The copy source range is empty; an appended block must have at least one byte.")
	}
	ext, sum, err := s.copyBytes(ctx, src, spec.max, false)
	if err != nil {
		return err
	}
	if err := checkSourceMD5(r.Header, sum); err != nil {
		s.discard(ext.Key)
		return err
	}
	if ext.Size == 0 {
		s.discard(ext.Key)
		return svcerr.Newf(svcerr.InvalidInput, "The copy source range is empty; an appended block must have at least one byte.")
	}
	return s.commitAppend(ctx, w, areq, ext, sums{md5: sum})
}

// Abort Copy Blob: PUT ?comp=copy&copyid=<id> with x-ms-copy-action: abort.
// Copies finish before Copy Blob answers, so there is never a pending copy:
// an existing destination whose lease the request satisfies gets 409
// NoPendingCopyOperation.
func (s *Server) abortCopy(w http.ResponseWriter, r *http.Request, req *request) error {
	switch v := r.Header.Get("x-ms-copy-action"); {
	case v == "":
		return svcerr.Header(svcerr.MissingRequiredHeader, "x-ms-copy-action", "")
	case !strings.EqualFold(v, "abort"):
		return svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-copy-action", v)
	}
	if req.query["copyid"] == "" {
		return svcerr.Query(svcerr.InvalidQueryParameterValue, "copyid", "", "a copy id is required")
	}
	leaseID, err := leaseIDHeader(r.Header)
	if err != nil {
		return err
	}
	b, now, err := s.db.GetBlob(r.Context(), req.ref(), "", leasedb.Conditions{})
	if err != nil {
		return err
	}
	// The destination's lease is checked as for a write (§5.4).
	if _, err := leasedb.CheckWriteLease(b.Lease, leaseID, leasedb.BlobTarget, now); err != nil {
		return err
	}
	return svcerr.New(svcerr.NoPendingCopyOperation)
}
