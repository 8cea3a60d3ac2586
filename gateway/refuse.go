package gateway

import (
	"encoding/xml"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

// Refuse, never ignore: a request that asks for something this gateway
// does not do (a customer-provided key, an encryption
// scope, an immutability policy or legal hold, an operation not built
// yet) is answered before its handler runs, so nothing it carries is
// stored and nothing is applied to something other than what it named.
// refuse is called once per request, after authorization (an unknown
// caller learns nothing) and before the operation's handler.
func (s *Server) refuse(r *http.Request, req *request) error {
	if err := refuseOperation(r, req); err != nil {
		return err
	}
	if v := req.query["ses"]; req.sas && v != "" && !isAccountScope(v) {
		// A SAS's signed encryption scope (ses) asks for what
		// x-ms-encryption-scope does.
		e := svcerr.Query(svcerr.UnsupportedQueryParameter, "ses", v, "")
		e.Message = "Encryption scopes other than " + accountScope + " do not exist in this gateway."
		return e
	}
	return refuseHeaders(r.Header)
}

// refuseOperation answers the operations and query forms that name a
// feature the gateway lacks: the operations not built yet (their table
// rows in router.go), first, so the headers they carry are not what the
// answer names.
func refuseOperation(r *http.Request, req *request) error {
	if req.op.missing != "" {
		return req.op.notImplementedErr()
	}
	if _, ok := req.query["versionid"]; ok && req.blob != "" {
		if _, snap := req.query["snapshot"]; snap {
			// A request names a snapshot or a version, never both
			// (the router would act on the snapshot alone).
			return svcerr.Query(svcerr.InvalidQueryParameterValue, "versionid", req.query["versionid"], "a request names a snapshot or a version, not both")
		}
	}
	if v, ok := req.query["deletetype"]; ok && req.op.name == "DeleteBlob" && targetOf(req) == blobTarget {
		// Delete Blob deletetype=permanent removes a soft-deleted
		// snapshot or version (blob_permdelete.go); on the base blob it
		// names nothing, and is never to be taken for a plain delete.
		return svcerr.Query(svcerr.InvalidQueryParameterValue, "deletetype", v, "deletetype applies to a snapshot or a version (snapshot= or versionid=), not to the base blob")
	}
	if req.op.name == "ListBlobs" {
		// List Blobs include=deletedwithversions lists the names whose
		// current version was deleted (HasVersionsOnly), flat or with
		// a delimiter. Together with include=versions Azure lists, for
		// each such name, an entry of its own version id (the
		// deletion's) after the versions, which the gateway does not
		// record: not built, and listing without those entries would
		// present an incomplete history.
		var dwv, versions bool
		for _, p := range strings.Split(req.query["include"], ",") {
			switch strings.ToLower(strings.TrimSpace(p)) {
			case "deletedwithversions":
				dwv = true
			case "versions":
				versions = true
			}
		}
		if dwv && versions {
			e := svcerr.Query(svcerr.NotImplemented, "include", req.query["include"], "deletedwithversions with versions is not implemented")
			e.Message = "Listing deleted blobs with versions (include=deletedwithversions) together with include=versions is not implemented by this gateway."
			return e
		}
	}
	return nil
}

// accountScope is the account's own encryption scope, the only one the
// gateway has (it is what List Containers and Get Container Properties
// report as the default).
const accountScope = "$account-encryption-key"

// headerRefusal is one request header whose feature the gateway lacks.
// It applies to every operation that carries it: each of these changes
// what a write stores (Put Blob, Put Block, Put Block List, Append Block,
// the From URL operations, Copy Blob, Set Blob Metadata, Snapshot Blob,
// Create Container) or what a read must check (Get Blob and Get Blob
// Properties with a customer-provided key), and none means anything
// elsewhere.
type headerRefusal struct {
	name string
	// harmless reports a value that asks for nothing beyond what the
	// gateway does (x-ms-legal-hold: false); nil: every non-empty value is
	// refused.
	harmless func(v string) bool
	why      string
}

func isFalse(v string) bool { return strings.EqualFold(strings.TrimSpace(v), "false") }

func isAccountScope(v string) bool { return strings.TrimSpace(v) == accountScope }

var refusedHeaders = []headerRefusal{
	// Customer-provided keys: the bytes would be stored unencrypted and
	// read back without the key. Azure itself refuses a key sent over
	// plain HTTP.
	{"x-ms-encryption-key", nil, "Customer-provided encryption keys are not supported by this gateway (Azure accepts them only over HTTPS)."},
	{"x-ms-encryption-key-sha256", nil, "Customer-provided encryption keys are not supported by this gateway (Azure accepts them only over HTTPS)."},
	{"x-ms-encryption-algorithm", nil, "Customer-provided encryption keys are not supported by this gateway (Azure accepts them only over HTTPS)."},
	// Encryption scopes: only the account's own exists here.
	{"x-ms-encryption-scope", isAccountScope, "Encryption scopes other than " + accountScope + " do not exist in this gateway."},
	{"x-ms-default-encryption-scope", isAccountScope, "Encryption scopes other than " + accountScope + " do not exist in this gateway."},
	{"x-ms-deny-encryption-scope-override", isFalse, "Container encryption scope policies are not supported by this gateway."},
	// Immutability: nothing would stop a delete or overwrite.
	{"x-ms-immutability-policy-until-date", nil, "Immutability policies are not supported by this gateway."},
	{"x-ms-immutability-policy-mode", nil, "Immutability policies are not supported by this gateway."},
	{"x-ms-legal-hold", isFalse, "Legal holds are not supported by this gateway."},
	{"x-ms-immutable-storage-with-versioning-enabled", isFalse, "Version-level immutability is not supported by this gateway."},
}

// refuseHeaders answers 400 UnsupportedHeader, naming the first refused
// header (in table order, so the answer is the same every time).
// refusedHeaderKeys are refusedHeaders' names in http.Header's canonical
// form, so that looking each up on every request canonicalizes nothing.
var refusedHeaderKeys = func() []string {
	keys := make([]string, len(refusedHeaders))
	for i, rh := range refusedHeaders {
		keys[i] = http.CanonicalHeaderKey(rh.name)
	}
	return keys
}()

func refuseHeaders(h http.Header) error {
	for i, rh := range refusedHeaders {
		for _, v := range h[refusedHeaderKeys[i]] {
			if v == "" || rh.harmless != nil && rh.harmless(v) {
				continue
			}
			e := svcerr.Header(svcerr.UnsupportedHeader, rh.name, v)
			if strings.HasPrefix(rh.name, "x-ms-encryption-key") {
				// Never echo key material.
				e.Details[1][1] = ""
			}
			e.Message = rh.why
			return e
		}
	}
	return nil
}

// serviceSettings are the parts of a Set Blob Service Properties document
// that turn on a feature the gateway lacks (it acts on Cors and
// DeleteRetentionPolicy: cors.go, softdelete.go).
type serviceSettings struct {
	Logging *struct {
		Read, Write, Delete string
		RetentionPolicy     *analyticsRetention
	}
	HourMetrics, MinuteMetrics *metricsSettings
	StaticWebsite              *struct {
		Enabled string
	}
}

// metricsSettings is HourMetrics or MinuteMetrics.
type metricsSettings struct {
	Enabled, IncludeAPIs string
	RetentionPolicy      *analyticsRetention
}

// analyticsRetention is the RetentionPolicy of Logging, HourMetrics and
// MinuteMetrics.
type analyticsRetention struct {
	Enabled, Days string
}

// knownServiceElems are the top-level elements of StorageServiceProperties
// in the Blob service's schema.
var knownServiceElems = map[string]bool{
	"Logging": true, "HourMetrics": true, "MinuteMetrics": true, "Cors": true,
	"DefaultServiceVersion": true, "DeleteRetentionPolicy": true, "StaticWebsite": true,
}

// refuseServiceProps refuses a Set Blob Service Properties document that
// enables what the gateway does not do, before anything is stored:
// static website (nothing would be served), Storage Analytics
// logging and metrics (no $logs or metrics would be written) and
// DefaultServiceVersion (anonymous requests keep the gateway's version).
// The same elements disabled, as SDKs and tools send them, stay accepted.
// Elements outside the schema are refused rather than stored and echoed.
func refuseServiceProps(body []byte, doc *propsDoc) error {
	if err := checkCORSShape(body); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, e := range doc.Elems {
		if !knownServiceElems[e.XMLName.Local] {
			return svcerr.Newf(svcerr.UnsupportedXmlNode, "The element %s is not part of the Blob service properties.", e.XMLName.Local)
		}
		if seen[e.XMLName.Local] {
			// Read once as two merged and stored as the last alone, a
			// setting acted on would differ from the one answered.
			return svcerr.Newf(svcerr.InvalidXmlDocument, "XML specified is not syntactically valid: the element %s appears twice.", e.XMLName.Local)
		}
		seen[e.XMLName.Local] = true
		if e.XMLName.Local == "DefaultServiceVersion" && strings.TrimSpace(string(e.Inner)) != "" {
			return svcerr.Newf(svcerr.UnsupportedXmlNode, "DefaultServiceVersion is not supported by this gateway.")
		}
	}
	var set serviceSettings
	if err := xml.Unmarshal(body, &set); err != nil {
		return svcerr.New(svcerr.InvalidXmlDocument)
	}
	// A switch is on when it is xs:boolean true in any spelling ("1"
	// too); one that is neither true nor false is refused as Azure
	// refuses it.
	var bad string
	on := func(v string) bool {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "", "false", "0":
			return false
		case "true", "1":
			return true
		}
		bad = v
		return false
	}
	// Logging's and the metrics' RetentionPolicy are stored and answered
	// (turning them on keeps nothing while logging and metrics are off),
	// so they must be what Azure stores: Days from 1 to 365 when enabled.
	var retention []*analyticsRetention
	if set.Logging != nil {
		retention = append(retention, set.Logging.RetentionPolicy)
	}
	for _, m := range []*metricsSettings{set.HourMetrics, set.MinuteMetrics} {
		if m != nil {
			on(m.IncludeAPIs) // a boolean, stored and answered
			retention = append(retention, m.RetentionPolicy)
		}
	}
	for _, rp := range retention {
		if rp == nil {
			continue
		}
		days := strings.TrimSpace(rp.Days)
		d, err := strconv.ParseInt(days, 10, 32)
		switch {
		case days != "" && err != nil:
			return svcerr.Newf(svcerr.InvalidXmlDocument, "XML specified is not syntactically valid: RetentionPolicy Days %q is not an integer.", rp.Days)
		case on(rp.Enabled) && (days == "" || d < 1 || d > leasedb.MaxRetentionDays):
			return svcerr.Newf(svcerr.InvalidXmlDocument, "XML specified is not syntactically valid: RetentionPolicy Days must be from 1 to 365 when it is enabled.")
		}
	}
	static := set.StaticWebsite != nil && on(set.StaticWebsite.Enabled)
	logging := set.Logging != nil && (on(set.Logging.Read) || on(set.Logging.Write) || on(set.Logging.Delete))
	metrics := set.HourMetrics != nil && on(set.HourMetrics.Enabled) || set.MinuteMetrics != nil && on(set.MinuteMetrics.Enabled)
	switch {
	case static:
		return svcerr.Newf(svcerr.UnsupportedXmlNode, "Static website hosting (StaticWebsite Enabled=true) is not supported by this gateway.")
	case logging:
		return svcerr.Newf(svcerr.UnsupportedXmlNode, "Storage Analytics logging is not supported by this gateway.")
	case metrics:
		return svcerr.Newf(svcerr.UnsupportedXmlNode, "Storage Analytics metrics are not supported by this gateway.")
	case bad != "":
		return svcerr.Newf(svcerr.InvalidXmlDocument, "XML specified is not syntactically valid: %q is not a boolean.", bad)
	}
	return nil
}

// versionParam returns a copy source's versionid (the name in any case,
// as Azure reads query names) and whether it names one.
func versionParam(q url.Values) (string, bool) {
	for k, vs := range q {
		if strings.EqualFold(k, "versionid") && len(vs) > 0 {
			return vs[0], true
		}
	}
	return "", false
}

// unsupportedHeader is UnsupportedHeader for the first of names that h
// holds (and that name), or nil: an operation that takes none of those
// headers refuses them rather than ignore them.
func unsupportedHeader(h http.Header, names []string) (string, *svcerr.Error) {
	for _, name := range names {
		if v := h.Get(name); v != "" {
			return name, svcerr.Header(svcerr.UnsupportedHeader, name, v)
		}
	}
	return "", nil
}
