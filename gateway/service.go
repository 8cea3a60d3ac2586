package gateway

import (
	"bytes"
	"encoding/xml"
	"io"
	"net/http"

	"github.com/blobgw/blobgw/svcerr"
)

// Get Account Information: GET|HEAD ?restype=account&comp=properties → 200,
// on the service, a container or a blob, at either endpoint. The answer
// is what every account here behaves as: x-ms-sku-name Standard_RAGRS,
// because each account's secondary endpoint serves reads
// (<account>-secondary, secondary.go), which only a read-access
// geo-redundant account has; x-ms-account-kind StorageV2 (block blob
// tiers, versioning, blob index tags); x-ms-is-hns-enabled false (no
// hierarchical namespace: x-ms-undelete-source is refused).
func (s *Server) getAccountInfo(w http.ResponseWriter, r *http.Request, req *request) error {
	h := w.Header()
	h.Set("x-ms-sku-name", "Standard_RAGRS")
	h.Set("x-ms-account-kind", "StorageV2")
	h.Set("x-ms-is-hns-enabled", "false")
	w.WriteHeader(http.StatusOK)
	return nil
}

// Blob service properties are one StorageServiceProperties document per
// account, kept in the metadata database so every replica serves the same
// document and acts on the same CORS rules (cors.go). Set Blob Service
// Properties replaces the top-level elements the request carries and keeps
// the others, as Azure does; CORS and DeleteRetentionPolicy (blob soft
// delete, softdelete.go) are acted on.

const xmlDecl = `<?xml version="1.0" encoding="utf-8"?>`

const defaultServiceProps = xmlDecl + `<StorageServiceProperties>` +
	`<Logging><Version>1.0</Version><Read>false</Read><Write>false</Write><Delete>false</Delete><RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></Logging>` +
	`<HourMetrics><Version>1.0</Version><Enabled>false</Enabled><RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></HourMetrics>` +
	`<MinuteMetrics><Version>1.0</Version><Enabled>false</Enabled><RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></MinuteMetrics>` +
	`<Cors /><DeleteRetentionPolicy><Enabled>false</Enabled></DeleteRetentionPolicy>` +
	`<StaticWebsite><Enabled>false</Enabled></StaticWebsite></StorageServiceProperties>`

// Get Blob Service Properties: GET ?restype=service&comp=properties → 200.
func (s *Server) getServiceProperties(w http.ResponseWriter, r *http.Request, req *request) error {
	doc, err := s.db.ServiceProperties(r.Context(), req.account)
	if err != nil {
		return err
	}
	if doc == "" {
		doc = defaultServiceProps
	}
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = io.WriteString(w, doc)
	}
	return nil
}

// Set Blob Service Properties: PUT ?restype=service&comp=properties → 202.
// The CORS rules must be valid (at most 5 rules, known methods, a
// non-negative max age), else 400 InvalidXmlDocument. The CORS rule cache
// of this process is cleared at once; other replicas follow within
// corsCacheTTL.
func (s *Server) setServiceProperties(w http.ResponseWriter, r *http.Request, req *request) error {
	const limit = 64 << 10
	body, err := readSmallBody(r, limit)
	if err != nil {
		return err
	}
	// Content-MD5 / x-ms-content-crc64, checked as Put Block List's.
	if _, err := bodySums(r.Header, body); err != nil {
		return err
	}
	var next propsDoc
	if err := unmarshalXMLDoc(body, &next); err != nil || next.XMLName.Local != "StorageServiceProperties" {
		return svcerr.New(svcerr.InvalidXmlDocument)
	}
	if err := refuseServiceProps(body, &next); err != nil {
		return err
	}
	if _, err := parseCORS(body); err != nil {
		return err
	}
	days, retentionSet, err := parseDeleteRetention(body)
	if err != nil {
		return err
	}
	// The stored document is merged into under its lock, so a
	// concurrent Set Blob Service Properties on any replica keeps its
	// elements. The policy's days go into the account's settings in the
	// same transaction: every replica's next commit acts on them.
	if !retentionSet {
		days = -1
	}
	err = s.db.MergeServiceProperties(r.Context(), req.account, func(old string) (string, error) {
		if old == "" {
			old = defaultServiceProps
		}
		return mergeServiceProps([]byte(old), &next)
	}, days)
	if err != nil {
		return err
	}
	s.corsCache.invalidate(req.account)
	w.WriteHeader(http.StatusAccepted)
	return nil
}

// propsDoc is a StorageServiceProperties document as its top-level
// elements, each kept verbatim.
type propsDoc struct {
	XMLName xml.Name
	Elems   []propsElem `xml:",any"`
}

type propsElem struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Inner   []byte     `xml:",innerxml"`
}

// mergeServiceProps replaces old's top-level elements by next's of the same
// name and appends next's new ones.
func mergeServiceProps(old []byte, next *propsDoc) (string, error) {
	var base propsDoc
	if err := xml.Unmarshal(old, &base); err != nil {
		// A stored document this process cannot read is replaced whole.
		base = propsDoc{}
	}
	for _, e := range next.Elems {
		replaced := false
		for i := range base.Elems {
			if base.Elems[i].XMLName.Local == e.XMLName.Local {
				base.Elems[i], replaced = e, true
				break
			}
		}
		if !replaced {
			base.Elems = append(base.Elems, e)
		}
	}
	var buf bytes.Buffer
	buf.WriteString(xmlDecl + "<StorageServiceProperties>")
	for _, e := range base.Elems {
		buf.WriteString("<" + e.XMLName.Local)
		for _, a := range e.Attrs {
			if a.Name.Space != "" {
				continue
			}
			buf.WriteString(" " + a.Name.Local + `="`)
			if err := xml.EscapeText(&buf, []byte(a.Value)); err != nil {
				return "", err
			}
			buf.WriteString(`"`)
		}
		buf.WriteString(">")
		buf.Write(e.Inner)
		buf.WriteString("</" + e.XMLName.Local + ">")
	}
	buf.WriteString("</StorageServiceProperties>")
	return buf.String(), nil
}
