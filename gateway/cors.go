package gateway

import (
	"context"
	"encoding/xml"
	"io"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/blobgw/blobgw/svcerr"
)

// CORS for browsers (Azure's "CORS support for the Storage services"). The
// rules live in the account's Blob service properties (service.go), shared
// by every replica through the metadata database:
//
//   - Rules are evaluated in order: the first whose AllowedOrigins holds
//     the request's origin (an exact, case-sensitive match; "*" allows
//     every origin, and nothing else is a wildcard, so
//     "https://*.contoso.com" is only that literal string) and whose
//     AllowedMethods holds its method is selected, and no later rule is
//     looked at. A preflight whose requested headers that rule does not
//     allow fails, even when a later rule would allow them.
//   - A preflight (OPTIONS on any URL) needs no authentication. It carries
//     Origin and Access-Control-Request-Method (and maybe
//     Access-Control-Request-Headers); a selected rule allowing every
//     requested header answers 200 with the Access-Control-Allow-*
//     headers. Otherwise 403 CorsPreflightFailure.
//   - An actual request with an Origin that a rule allows together with the
//     request's method gets Access-Control-Allow-Origin,
//     Access-Control-Expose-Headers (the rule's exposed headers; a prefix
//     rule such as x-ms-* lists the response's headers that match) and
//     Access-Control-Allow-Credentials when the origin is not "*", on
//     success and error responses alike. A GET or HEAD without Origin that
//     a rule allowing every origin selects gets Access-Control-Allow-Origin
//     "*" and the exposed headers too.
//   - Vary: Origin is set on GET and HEAD responses only (the others are
//     not cached by user agents, and preflights are OPTIONS), while the
//     account has rules, unless the selected rule allows every origin:
//     caches then keep per-origin answers apart.
//
// The parsed rules are cached per account for corsCacheTTL, so requests do
// not read the database each time; Set Blob Service Properties clears this
// process's cache at once.

// corsCacheTTL is how long a replica serves CORS rules it has read.
const corsCacheTTL = 5 * time.Second

// maxCORSRules is Azure's limit of CORS rules per service.
const maxCORSRules = 5

// Azure's limits on a rule's lists: at most 64 allowed origins, 64
// literal and 2 prefixed ("x-ms-meta-*") headers in each of AllowedHeaders
// and ExposedHeaders, 256 characters per entry, and 2 KiB for the text of
// all the rules' elements together.
const (
	maxCORSOrigins     = 64
	maxCORSLiteral     = 64
	maxCORSPrefixed    = 2
	maxCORSEntryLen    = 256
	maxCORSSettingsLen = 2 << 10
)

// corsMethods are the methods a CORS rule may allow.
var corsMethods = map[string]bool{
	"DELETE": true, "GET": true, "HEAD": true, "MERGE": true,
	"POST": true, "OPTIONS": true, "PUT": true, "PATCH": true,
}

type corsRule struct {
	origins        []string // as configured (matched case-sensitively); "*" allows any
	methods        []string // uppercased
	allowedHeaders []string // lowercased; "x-ms-meta-*" is a prefix, "*" any
	exposedHeaders []string // as configured
	maxAge         int
}

func (c *corsRule) anyOrigin() bool {
	for _, o := range c.origins {
		if o == "*" {
			return true
		}
	}
	return false
}

func (c *corsRule) allowsOrigin(origin string) bool {
	origin = strings.TrimSpace(origin)
	for _, o := range c.origins {
		if o == "*" || o == origin {
			return true
		}
	}
	return false
}

func (c *corsRule) allowsMethod(m string) bool {
	for _, x := range c.methods {
		if x == m {
			return true
		}
	}
	return false
}

// allowsHeaders reports whether every header of an
// Access-Control-Request-Headers value is allowed.
func (c *corsRule) allowsHeaders(list string) bool {
	for _, h := range splitList(list) {
		h = strings.ToLower(h)
		ok := false
		for _, a := range c.allowedHeaders {
			if a == h || strings.HasSuffix(a, "*") && strings.HasPrefix(h, a[:len(a)-1]) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// allowOrigin is the Access-Control-Allow-Origin value for origin.
func (c *corsRule) allowOrigin(origin string) string {
	if c.anyOrigin() {
		return "*"
	}
	return origin
}

// exposeHeaders is the Access-Control-Expose-Headers value: every response
// header matching a prefix entry ("x-ms-*"), then the literal entries.
func (c *corsRule) exposeHeaders(h http.Header) string {
	var out []string
	seen := map[string]bool{}
	var names []string
	for name := range h {
		names = append(names, strings.ToLower(name))
	}
	sort.Strings(names)
	for _, e := range c.exposedHeaders {
		le := strings.ToLower(e)
		if !strings.HasSuffix(le, "*") {
			continue
		}
		for _, n := range names {
			if strings.HasPrefix(n, le[:len(le)-1]) && !seen[n] && !strings.HasPrefix(n, "access-control-") {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	for _, e := range c.exposedHeaders {
		le := strings.ToLower(e)
		if !strings.HasSuffix(le, "*") && !seen[le] {
			seen[le] = true
			out = append(out, e)
		}
	}
	return strings.Join(out, ",")
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

type corsRuleXML struct {
	AllowedOrigins  string `xml:"AllowedOrigins"`
	AllowedMethods  string `xml:"AllowedMethods"`
	AllowedHeaders  string `xml:"AllowedHeaders"`
	ExposedHeaders  string `xml:"ExposedHeaders"`
	MaxAgeInSeconds string `xml:"MaxAgeInSeconds"`
}

// corsRuleElems are the children of a CorsRule in Set Blob Service
// Properties: each is required (AllowedHeaders, ExposedHeaders and
// MaxAgeInSeconds may be empty), in any order (the SDKs send them in
// different orders).
var corsRuleElems = [...]string{"AllowedOrigins", "AllowedMethods", "AllowedHeaders", "ExposedHeaders", "MaxAgeInSeconds"}

// checkCORSShape refuses a Set Blob Service Properties body whose Cors
// holds anything but CorsRule elements, or a CorsRule without one of
// corsRuleElems, with one twice, or with another child: 400
// InvalidXmlDocument, as Azure answers a rule that lacks one. parseCORS
// reads stored documents too, which may predate this check, so the
// shape is checked on what a client sends alone.
func checkCORSShape(body []byte) error {
	type child struct{ XMLName xml.Name }
	var v struct {
		Cors *struct {
			Elems []struct {
				XMLName xml.Name
				Elems   []child `xml:",any"`
			} `xml:",any"`
		} `xml:"Cors"`
	}
	if err := xml.Unmarshal(body, &v); err != nil {
		return svcerr.New(svcerr.InvalidXmlDocument)
	}
	if v.Cors == nil {
		return nil
	}
	bad := func(format string, args ...any) error {
		return svcerr.Newf(svcerr.InvalidXmlDocument, "XML specified is not syntactically valid: "+format, args...)
	}
	for i, r := range v.Cors.Elems {
		n := i + 1
		if r.XMLName.Local != "CorsRule" {
			return bad("Cors holds %s; only CorsRule elements belong there.", r.XMLName.Local)
		}
		var seen [len(corsRuleElems)]bool
		for _, c := range r.Elems {
			k := slices.Index(corsRuleElems[:], c.XMLName.Local)
			switch {
			case k < 0:
				return bad("CORS rule %d holds %s, which is not part of a CorsRule.", n, c.XMLName.Local)
			case seen[k]:
				return bad("CORS rule %d holds %s twice.", n, c.XMLName.Local)
			}
			seen[k] = true
		}
		for k, ok := range seen {
			if !ok {
				return bad("CORS rule %d has no %s element.", n, corsRuleElems[k])
			}
		}
	}
	return nil
}

// parseCORS reads and validates the CORS rules of a StorageServiceProperties
// document (none when it has no Cors element). Invalid rules are 400
// InvalidXmlDocument.
func parseCORS(doc []byte) ([]corsRule, error) {
	var v struct {
		Cors *struct {
			Rules []corsRuleXML `xml:"CorsRule"`
		} `xml:"Cors"`
	}
	if err := xml.Unmarshal(doc, &v); err != nil {
		return nil, svcerr.New(svcerr.InvalidXmlDocument)
	}
	if v.Cors == nil {
		return nil, nil
	}
	bad := func(format string, args ...any) error {
		return svcerr.Newf(svcerr.InvalidXmlDocument, "XML specified is not syntactically valid: CORS rule "+format, args...)
	}
	if len(v.Cors.Rules) > maxCORSRules {
		return nil, bad("count %d exceeds the limit of %d.", len(v.Cors.Rules), maxCORSRules)
	}
	var rules []corsRule
	settings := 0
	for i, x := range v.Cors.Rules {
		n := i + 1
		settings += len(x.AllowedOrigins) + len(x.AllowedMethods) + len(x.AllowedHeaders) + len(x.ExposedHeaders) + len(x.MaxAgeInSeconds)
		var r corsRule
		r.origins = splitList(x.AllowedOrigins)
		for _, m := range splitList(x.AllowedMethods) {
			m = strings.ToUpper(m)
			if !corsMethods[m] {
				return nil, bad("%d: %q is not a method a CORS rule can allow.", n, m)
			}
			r.methods = append(r.methods, m)
		}
		for _, h := range splitList(x.AllowedHeaders) {
			r.allowedHeaders = append(r.allowedHeaders, strings.ToLower(h))
		}
		r.exposedHeaders = splitList(x.ExposedHeaders)
		switch {
		case len(r.origins) == 0:
			return nil, bad("%d has no AllowedOrigins.", n)
		case len(r.methods) == 0:
			return nil, bad("%d has no AllowedMethods.", n)
		case len(r.origins) > maxCORSOrigins:
			return nil, bad("%d lists more than %d allowed origins.", n, maxCORSOrigins)
		}
		for _, list := range [][]string{r.origins, r.allowedHeaders, r.exposedHeaders} {
			for _, e := range list {
				if len(e) > maxCORSEntryLen {
					return nil, bad("%d has an entry longer than %d characters.", n, maxCORSEntryLen)
				}
			}
		}
		for _, list := range [][]string{r.allowedHeaders, r.exposedHeaders} {
			prefixed := 0
			for _, h := range list {
				if strings.HasSuffix(h, "*") {
					prefixed++
				}
			}
			if prefixed > maxCORSPrefixed || len(list)-prefixed > maxCORSLiteral {
				return nil, bad("%d lists more than %d literal or %d prefixed headers.", n, maxCORSLiteral, maxCORSPrefixed)
			}
		}
		if age := strings.TrimSpace(x.MaxAgeInSeconds); age != "" {
			// An Int32 in Azure's schema (and the SDKs' models).
			a, err := strconv.ParseInt(age, 10, 32)
			if err != nil || a < 0 {
				return nil, bad("%d: MaxAgeInSeconds %q is not a non-negative integer.", n, age)
			}
			r.maxAge = int(a)
		}
		rules = append(rules, r)
	}
	if settings > maxCORSSettingsLen {
		return nil, bad("settings total %d characters, more than %d.", settings, maxCORSSettingsLen)
	}
	return rules, nil
}

// corsCache holds each account's parsed rules for corsCacheTTL. gen makes an
// invalidation win over a read that started before it.
type corsCache struct {
	mu      sync.Mutex
	gen     uint64
	entries map[string]corsEntry
}

type corsEntry struct {
	rules []corsRule
	at    time.Time
}

func newCORSCache() *corsCache { return &corsCache{entries: map[string]corsEntry{}} }

func (c *corsCache) invalidate(account string) {
	c.mu.Lock()
	c.gen++
	delete(c.entries, account)
	c.mu.Unlock()
}

// corsRules returns the account's CORS rules, from the cache when fresh.
func (s *Server) corsRules(ctx context.Context, account string) ([]corsRule, error) {
	c := s.corsCache
	c.mu.Lock()
	e, ok := c.entries[account]
	gen := c.gen
	c.mu.Unlock()
	if ok && time.Since(e.at) < corsCacheTTL {
		return e.rules, nil
	}
	doc, err := s.db.ServiceProperties(ctx, account)
	if err != nil {
		return nil, err
	}
	var rules []corsRule
	if doc != "" {
		if rules, err = parseCORS([]byte(doc)); err != nil {
			// Stored documents were validated when set; one that no
			// longer parses enables nothing.
			s.log.Warn("stored CORS rules do not parse", "account", account, "err", err)
			rules = nil
		}
	}
	c.mu.Lock()
	if c.gen == gen {
		c.entries[account] = corsEntry{rules: rules, at: time.Now()}
	}
	c.mu.Unlock()
	return rules, nil
}

// corsAccount is the account a request addresses, "" when none is known.
// The rest of the URL does not matter: a preflight for a malformed name
// is answered like any other (the actual request then fails on its own).
func (s *Server) corsAccount(r *http.Request) string {
	var tmp request
	_ = s.parseAddress(r, &tmp)
	if _, ok := s.accounts.Lookup(tmp.account); tmp.account == "" || !ok {
		return ""
	}
	return tmp.account
}

// corsHook is ServeHTTP's CORS hook. It answers a preflight itself and returns
// nil; otherwise it returns the writer the request is served through, which
// adds the CORS response headers when a rule allows the request's origin.
func (s *Server) corsHook(w http.ResponseWriter, r *http.Request, req *request) http.ResponseWriter {
	if r.Method == http.MethodOptions {
		if err := s.preflight(w, r); err != nil {
			s.writeError(w, r, req, err)
		}
		return nil
	}
	origin := r.Header.Get("Origin")
	get := r.Method == http.MethodGet || r.Method == http.MethodHead
	if origin == "" && !get {
		return w
	}
	account := s.corsAccount(r)
	if account == "" {
		return w
	}
	rules, err := s.corsRules(r.Context(), account)
	if err != nil {
		// The request itself will meet the same database; CORS headers
		// are left off rather than failing it here.
		s.log.Warn("reading CORS rules", "request_id", req.id, "err", err)
		return w
	}
	if len(rules) == 0 {
		return w
	}
	// Azure's table of GET/HEAD responses: the first rule that allows
	// the request's method and its origin (for a request without one, a
	// rule allowing every origin) is selected. A rule allowing every
	// origin answers all of them alike: Access-Control-Allow-Origin "*"
	// and no Vary. A rule naming the origin, or no rule while rules
	// exist, answers Vary: Origin. Other methods never get Vary.
	rule := selectCORSRule(rules, origin, r.Method)
	if get && (rule == nil || !rule.anyOrigin()) {
		w.Header().Add("Vary", "Origin")
	}
	if rule == nil {
		return w
	}
	return &corsWriter{ResponseWriter: w, rule: rule, origin: origin}
}

// selectCORSRule is the first rule allowing origin and method: the one
// that decides (nil when none does). An empty origin (an actual request
// without Origin) is allowed by a rule allowing every origin only.
func selectCORSRule(rules []corsRule, origin, method string) *corsRule {
	for i := range rules {
		rule := &rules[i]
		if !rule.allowsMethod(method) {
			continue
		}
		if origin == "" && rule.anyOrigin() || origin != "" && rule.allowsOrigin(origin) {
			return rule
		}
	}
	return nil
}

// preflight answers an OPTIONS request (Preflight Blob Request).
func (s *Server) preflight(w http.ResponseWriter, r *http.Request) error {
	// Without Origin or Access-Control-Request-Method Azure answers 400
	// InvalidHeaderValue "A required CORS header is not present."
	missing := func(name string) error {
		e := svcerr.Header(svcerr.InvalidHeaderValue, name, "")
		e.Message = "A required CORS header is not present."
		return e
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return missing("Origin")
	}
	method := r.Header.Get("Access-Control-Request-Method")
	if method == "" {
		return missing("Access-Control-Request-Method")
	}
	reqHeaders := r.Header.Values("Access-Control-Request-Headers")
	headerList := strings.Join(reqHeaders, ",")
	account := s.corsAccount(r)
	if account == "" {
		return svcerr.New(svcerr.CorsPreflightFailure)
	}
	rules, err := s.corsRules(r.Context(), account)
	if err != nil {
		return err
	}
	// The rule the origin and method select decides alone: headers it does
	// not allow fail the preflight, whatever a later rule allows.
	if rule := selectCORSRule(rules, origin, method); rule != nil && rule.allowsHeaders(headerList) {
		h := w.Header()
		allow := rule.allowOrigin(origin)
		h.Set("Access-Control-Allow-Origin", allow)
		h.Set("Access-Control-Allow-Methods", method)
		if hs := splitList(headerList); len(hs) > 0 {
			h.Set("Access-Control-Allow-Headers", strings.Join(hs, ","))
		}
		h.Set("Access-Control-Max-Age", strconv.Itoa(rule.maxAge))
		if allow != "*" {
			h.Set("Access-Control-Allow-Credentials", "true")
		}
		h.Set("Content-Length", "0")
		w.WriteHeader(http.StatusOK)
		return nil
	}
	return svcerr.New(svcerr.CorsPreflightFailure)
}

// corsWriter adds the CORS headers of an allowed actual request just before
// the status line is written, when the response's own headers are known.
type corsWriter struct {
	http.ResponseWriter
	rule    *corsRule
	origin  string
	applied bool
}

func (w *corsWriter) apply() {
	if w.applied {
		return
	}
	w.applied = true
	h := w.ResponseWriter.Header()
	allow := w.rule.allowOrigin(w.origin)
	h.Set("Access-Control-Allow-Origin", allow)
	if allow != "*" {
		h.Set("Access-Control-Allow-Credentials", "true")
	}
	if exp := w.rule.exposeHeaders(h); exp != "" {
		h.Set("Access-Control-Expose-Headers", exp)
	}
}

func (w *corsWriter) WriteHeader(code int) {
	w.apply()
	w.ResponseWriter.WriteHeader(code)
}

func (w *corsWriter) Write(p []byte) (int, error) {
	w.apply()
	return w.ResponseWriter.Write(p)
}

// ReadFrom keeps the underlying writer's io.ReaderFrom (sendfile) usable
// for responses that carry CORS headers.
func (w *corsWriter) ReadFrom(r io.Reader) (int64, error) {
	w.apply()
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{w.ResponseWriter}, r)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *corsWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
