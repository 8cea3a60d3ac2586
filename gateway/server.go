// Package gateway speaks the Azure Blob Storage REST dialect: it routes Blob
// operations, authenticates them (Shared Key, SAS, public container access),
// parses headers, and ties the byte backend to the metadata store along the
// write and read paths of docs/architecture.md. Handlers glue: decisions live in leasedb, signing in
// gateway/auth. The gateway never holds a whole blob in memory, never writes
// over bytes a reader may stream, and never answers a conflict with a 5xx.
package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/blobgw/blobgw/backends"
	"github.com/blobgw/blobgw/gateway/auth"
	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

// DefaultVersion is echoed in x-ms-version when a request carries none.
const DefaultVersion = "2025-11-05"

// Options tune a Server. Zero values take the defaults noted.
type Options struct {
	// IntentTTL is how long an upload may take before its staged object
	// becomes collectable (default 24h).
	IntentTTL time.Duration
	// MaxPutBlobSize caps a single Put Blob body (default 5000 MiB).
	MaxPutBlobSize int64
	// EmulatorHosts are extra host names treated as path-style.
	EmulatorHosts []string
	// Now is the gateway's clock for Shared Key date checks and SAS
	// validity windows (default time.Now).
	Now func() time.Time
	// CopyClient fetches copy sources outside this gateway (Copy Blob and
	// the From URL operations); nil: a client with connect and header
	// timeouts that follows no redirect to another scheme (copy_dialer.go).
	CopyClient *http.Client
	// BodyIdleTimeout fails a request body that delivers no byte for this
	// long with 408 RequestTimeout (default DefaultBodyIdleTimeout;
	// limits.go).
	BodyIdleTimeout time.Duration
	// MaxUploads caps the uploads (Put Blob, Put Block, Append Block,
	// their From URL variants, Copy Blob) running at once; beyond it 503
	// ServerBusy (default DefaultMaxUploads).
	MaxUploads int
	// BlockExpiry is how long the uncommitted blocks of a blob name stay
	// after its last Put Block (default leasedb.DefaultBlockExpiry, a
	// week, as on Azure); the collector discards them after that.
	BlockExpiry time.Duration
	// ContainerDeleteRetention is each account's container soft delete
	// retention: Delete Container keeps the container and everything in
	// it, restorable (Restore Container), this long. Absent or 0: Delete
	// Container deletes at once.
	ContainerDeleteRetention map[string]time.Duration
	// PageCompactRuns: a page blob with more runs after a Put Page is
	// compacted in the background (page_compact.go; default
	// DefaultPageCompactRuns, negative: never).
	PageCompactRuns int
	// InlineMaxBytes: a Put Blob of a block blob whose body is at most
	// this many bytes keeps the bytes in the metadata row instead of a
	// backend object (blob_inline.go), and so does an Append Block while
	// the append blob's inline bytes stay within it (appendInline). 0 (the zero value) keeps every body
	// in the backend; blobgw serve's default is config.DefaultInlineMaxBytes.
	InlineMaxBytes int64
	// TrustedProxies are the peers whose X-Forwarded-Proto /
	// X-Forwarded-For / Forwarded headers are believed (proxy.go).
	TrustedProxies []netip.Prefix
}

// Server is an http.Handler serving the Blob REST API.
type Server struct {
	db       *leasedb.DB
	backend  backends.Backend
	accounts auth.Accounts
	log      *slog.Logger
	opt      Options

	corsCache *corsCache // CORS rules per account (cors.go)
	keys      *keyPool   // backend keys with recorded intents (intents.go)
	uploads   uploadLimiter
	// inlineBufs holds *inlineBuf: the body buffers of inline Put Blobs
	// (blob_inline.go).
	inlineBufs sync.Pool
	pages      pageCompactor // background page blob compactions
	metrics    *metrics      // this Server's registry (metrics.go)
	draining   atomic.Bool   // set by SetDraining: Ready fails (health.go)
}

// New returns a Server.
func New(db *leasedb.DB, backend backends.Backend, accounts auth.Accounts, log *slog.Logger, opt Options) *Server {
	if opt.IntentTTL <= 0 {
		opt.IntentTTL = 24 * time.Hour
	}
	if opt.MaxPutBlobSize <= 0 {
		opt.MaxPutBlobSize = 5000 << 20
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if log == nil {
		log = slog.Default()
	}
	if opt.CopyClient == nil {
		opt.CopyClient = defaultCopyClient()
	}
	if opt.BodyIdleTimeout <= 0 {
		opt.BodyIdleTimeout = DefaultBodyIdleTimeout
	}
	if opt.MaxUploads <= 0 {
		opt.MaxUploads = DefaultMaxUploads
	}
	if opt.BlockExpiry <= 0 {
		opt.BlockExpiry = leasedb.DefaultBlockExpiry
	}
	if opt.PageCompactRuns == 0 {
		opt.PageCompactRuns = DefaultPageCompactRuns
	}
	// Observed parts for the metrics; credentials never reach the log.
	log = slog.New(RedactingHandler(log.Handler()))
	m := newMetrics()
	backend = backends.Observe(backend, m.observeBackend)
	inner := db.Store
	observed := *db
	observed.Store = observedStore{Store: inner, m: m}
	db = &observed
	m.reg.MustRegister(newStateCollector(db, inner))
	return &Server{db: db, backend: backend, accounts: accounts, log: log, opt: opt, corsCache: newCORSCache(),
		keys: newKeyPool(db, opt.IntentTTL), uploads: newUploadLimiter(opt.MaxUploads), metrics: m}
}

// Close releases what the Server holds in the metadata store: the upload
// intents recorded ahead for keys no request took. Call it after the HTTP
// server has shut down; requests that still arrive work, one intent each.
// It first cancels the background page blob compactions and waits for them.
func (s *Server) Close(ctx context.Context) error {
	if err := s.pages.wait(ctx, true); err != nil {
		return err
	}
	return s.keys.close(ctx)
}

// request is the parsed addressing of one call.
type request struct {
	id        string
	version   string
	account   string
	secondary bool // addressed as <account>-secondary (secondary.go)
	container string
	blob      string
	query     map[string]string // lowercased keys, first value
	op        *operation        // resolved before authorization (router.go)
	start     time.Time
	// How the caller was authorized: a SAS (response header overrides
	// apply), a create-only SAS (the commit refuses existing blobs), or an
	// anonymous read of a public container.
	sas, createOnly, anonymous bool
	// peer is the client's scheme and address, believing forwarded
	// headers from trusted proxies only (proxy.go).
	peer peer
	// metaNames spells x-ms-meta-* header names as the client sent them
	// (lowercased name → as sent; headercase.go); nil when unknown.
	metaNames map[string]string
	// hdr sets the response headers from one backing array of values
	// (hdrkeys.go): those every answer carries, set by ServeHTTP, and a
	// handler's own (request.headers).
	hdr headerVals
}

// headers is the response's headerVals: ServeHTTP's, whose array has
// room for a small write's headers too, or, for a request ServeHTTP did not
// prepare (a Blob Batch sub-request), a new one over w's.
func (q *request) headers(w http.ResponseWriter) *headerVals {
	if q.hdr.h == nil {
		q.hdr = newHeaderVals(w.Header(), 6)
	}
	return &q.hdr
}

func (q *request) ref() leasedb.BlobRef {
	return leasedb.BlobRef{Account: q.account, Container: q.container, Name: q.blob}
}

// served is what ServeHTTP keeps for one request, in one allocation: the
// parsed request, the writers that count the answer, the counter and the
// idle deadline of the body.
type served struct {
	req     request
	acc, rw statusWriter
	in      countingBody
	idle    idleBody
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	st := &served{}
	req := &st.req
	req.id, req.start, req.peer = newRequestID(), time.Now(), effectivePeer(r, s.opt.TrustedProxies)
	acc := &st.acc
	acc.ResponseWriter = w
	w = acc
	in := &st.in
	in.wrap(r)
	defer in.unwrap(r)
	defer s.finish(acc, r, req, in) // the access log line and metrics (accesslog.go)
	// First: the connection's record must be taken, and recording paused
	// for the body, before anything reads the body (headercase.go).
	var resumeRecording func()
	req.metaNames, resumeRecording = rawHeaderNames(r)
	defer resumeRecording()
	// The headers every answer carries (4, and Date), and room for those
	// of a small write (Put Blob's up to 7, Lease Blob's 3). Date is left
	// to net/http, which writes the same text when the handler set none:
	// one header fewer keeps a small write's answer within the 8 entries
	// a Go map holds before it grows (and net/http's copy of it likewise);
	// dateHeader still refreshes the second that httpTime reuses for
	// Last-Modified.
	req.hdr = newHeaderVals(w.Header(), 12)
	h := &req.hdr
	h.set("Server", "blobgw")
	dateHeader(req.start)
	req.version = r.Header.Get("X-Ms-Version")
	setRequestHeaders(h, r, req)
	if w = s.corsHook(w, r, req); w == nil {
		return // a CORS preflight, answered (cors.go)
	}
	rw := &st.rw
	rw.ResponseWriter = w
	if s.limitBody(&st.idle, rw, r) {
		defer st.idle.unwrap(r)
	}
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.log.Error("panic serving request", "request_id", req.id, "panic", p)
			if !rw.wrote {
				s.writeError(rw, r, req, svcerr.New(svcerr.InternalError))
			}
		}
		// The access line (accesslog.go) has the rest; the URI only at
		// debug level, its SAS signature masked.
		if s.log.Enabled(r.Context(), slog.LevelDebug) {
			s.log.Debug("request uri", "request_id", req.id, "method", r.Method, "uri", redactURI(r.RequestURI))
		}
	}()
	if err := s.serve(rw, r, req); err != nil {
		s.writeError(rw, r, req, err)
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, req *request) error {
	if v := req.version; v != "" && !validVersion(v) {
		return svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-version", v)
	}
	var err error
	if req.query, err = parseQuery(r.URL.RawQuery); err != nil {
		return err
	}
	if err := s.parseAddress(r, req); err != nil {
		return err
	}
	if err := checkHeaderText(r.Header); err != nil {
		return err
	}
	if _, ok := s.accounts.Lookup(req.account); !ok {
		return svcerr.New(svcerr.ResourceNotFound)
	}
	// One decoding of the operation for routing, SAS and anonymous
	// access alike: a request that names none is refused the same way
	// whatever its credential.
	if req.op, err = resolve(r, req); err != nil {
		return err
	}
	if err := s.authorize(r, req); err != nil {
		return err
	}
	if err := refuseSecondaryWrite(r, req); err != nil {
		return err
	}
	if err := s.refuse(r, req); err != nil {
		return err
	}
	// A structured-message body (x-ms-structured-body: the SDKs' segmented
	// CRC64 framing) is not the blob's bytes: storing it would store the
	// framing. Refuse it rather than corrupt the blob. On Get Blob it asks
	// for the answer so framed, with its CRC64s: answering the plain bytes
	// would hand them over unchecked (the SDK decodes only an answer that
	// says it is framed).
	if v := r.Header.Get("X-Ms-Structured-Body"); v != "" && (r.Method == http.MethodPut || r.Method == http.MethodGet) {
		return svcerr.Header(svcerr.UnsupportedHeader, "x-ms-structured-body", v)
	}
	if isUpload(r, req) {
		if err := s.uploads.acquire(); err != nil {
			return err
		}
		defer s.uploads.release()
	}
	return req.op.handle(s, w, r, req)
}

// validVersion reports whether v has x-ms-version's form, dddd-dd-dd
// (ASCII digits), without a regular expression per request.
func validVersion(v string) bool {
	if len(v) != len("2025-11-05") {
		return false
	}
	for i := 0; i < len(v); i++ {
		if i == 4 || i == 7 {
			if v[i] != '-' {
				return false
			}
		} else if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	return true
}

// parseAddress splits the URL into account, container and blob:
// path-style (http://host/account/container/blob, as Azurite) for IP
// literals, dot-free hosts and configured emulator names; host-style
// (account.blob.core.windows.net, the first DNS label) otherwise.
func (s *Server) parseAddress(r *http.Request, req *request) error {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	path := strings.TrimPrefix(r.URL.Path, "/")
	pathStyle := host == "" || net.ParseIP(host) != nil || !strings.Contains(host, ".")
	for _, e := range s.opt.EmulatorHosts {
		if strings.EqualFold(e, host) {
			pathStyle = true
		}
	}
	if pathStyle {
		acct, rest, _ := strings.Cut(path, "/")
		req.account, path = acct, rest
	} else {
		req.account = strings.ToLower(strings.SplitN(host, ".", 2)[0])
	}
	if req.account == "" {
		return svcerr.New(svcerr.InvalidUri)
	}
	req.account, req.secondary = s.primaryOf(req.account)
	container, blob, _ := strings.Cut(path, "/")
	if container == "" && blob != "" {
		// An empty container segment ("//blob"): the blob name would be
		// dropped and the request run as a service-level operation.
		return svcerr.New(svcerr.InvalidUri)
	}
	req.container = container
	req.blob = strings.ReplaceAll(blob, `\`, "/")
	if req.container != "" {
		if err := checkContainerName(req.container); err != nil {
			return err
		}
	}
	// A blob name is text: one that is not UTF-8 after %-decoding can be
	// neither stored nor listed. Nor can one with a control character
	// (Azure's naming rules refuse them) or U+FFFE / U+FFFF: XML 1.0 has
	// no form for most of them, so List Blobs would name another blob.
	if req.blob != "" && (leasedb.Unlistable(req.blob) || !utf8.ValidString(req.blob)) {
		return svcerr.New(svcerr.InvalidResourceName)
	}
	// Longer than 1,024 UTF-16 code units: 400 OutOfRangeInput, as Azure
	// answers it (512 characters outside the BMP fit, 1,024 of the BMP);
	// so is a name longer than the stores hold (leasedb.MaxBlobNameBytes).
	if !leasedb.BlobNameFits(req.blob) {
		return svcerr.New(svcerr.OutOfRangeInput)
	}
	return nil
}

// containerNameChars reports whether n is letters a-z, digits and
// dashes, starting and ending with a letter or digit, with no two dashes
// together (^[a-z0-9](?:[a-z0-9]|-[a-z0-9])*$), without a regular
// expression per request.
func containerNameChars(n string) bool {
	for i := 0; i < len(n); i++ {
		switch c := n[i]; {
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
		case c == '-' && i > 0 && i < len(n)-1 && n[i-1] != '-':
		default:
			return false
		}
	}
	return n != ""
}

// validContainerName: 3–63 of a-z0-9-, starting and ending with a letter or
// digit, no "--" (Azure's container naming rules), or one of Azure's
// special containers: $root (the implicit container), $logs and $web
// (which Azure's analytics logging and static websites use, and which may
// be created and used as any container).
func validContainerName(n string) bool {
	return checkContainerName(n) == nil
}

// checkContainerName answers a name of the wrong length with 400
// OutOfRangeInput and one with other characters with 400
// InvalidResourceName, as Azure does.
func checkContainerName(n string) error {
	switch n {
	case "$root", "$logs", "$web":
		return nil
	}
	if len(n) < 3 || len(n) > 63 {
		return svcerr.Newf(svcerr.OutOfRangeInput, "The specified resource name length is not within the permissible limits.")
	}
	if !containerNameChars(n) {
		return svcerr.New(svcerr.InvalidResourceName)
	}
	return nil
}

// lastDate is the Date header of the current second, formatted once a
// second instead of once a request.
var lastDate atomic.Pointer[formattedDate]

type formattedDate struct {
	sec int64
	s   string
}

// dateHeader is now in http.TimeFormat (whole seconds, as the format has).
func dateHeader(now time.Time) string {
	sec := now.Unix()
	if d := lastDate.Load(); d != nil && d.sec == sec {
		return d.s
	}
	d := &formattedDate{sec: sec, s: now.UTC().Format(http.TimeFormat)}
	lastDate.Store(d)
	return d.s
}

// newKey returns a fresh backend key. 128 random bits: never reused.
func newKey() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	x := hex.EncodeToString(b[:])
	return "b/" + x[:2] + "/" + x[2:4] + "/" + x
}

type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
	n      int64 // body bytes written
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.status, w.wrote = 200, true
	}
	n, err := w.ResponseWriter.Write(p)
	w.n += int64(n)
	return n, err
}

// ReadFrom keeps the underlying writer's io.ReaderFrom reachable, so a read
// from a disk object reaches the socket with sendfile(2) instead of a copy
// through user space.
func (w *statusWriter) ReadFrom(r io.Reader) (int64, error) {
	if !w.wrote {
		w.status, w.wrote = 200, true
	}
	var n int64
	var err error
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(r)
	} else {
		n, err = io.Copy(struct{ io.Writer }{w.ResponseWriter}, r)
	}
	w.n += n
	return n, err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// RunCollector deletes due backend objects every interval until ctx ends.
func (s *Server) RunCollector(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := s.Collect(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("collector", "err", err)
			s.metrics.collectorPass.WithLabelValues("error").Inc()
		} else if err == nil {
			s.metrics.collectorPass.WithLabelValues("ok").Inc()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
