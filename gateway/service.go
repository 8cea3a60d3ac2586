package gateway

import (
	"bytes"
	"encoding/xml"
	"io"
	"net/http"
	"sync"

	"github.com/blobgw/blobgw/svcerr"
)

// Get Account Information: GET|HEAD ?restype=account&comp=properties → 200.
func (s *Server) getAccountInfo(w http.ResponseWriter, r *http.Request, req *request) error {
	h := w.Header()
	h.Set("x-ms-sku-name", "Standard_LRS")
	h.Set("x-ms-account-kind", "StorageV2")
	h.Set("x-ms-is-hns-enabled", "false")
	w.WriteHeader(http.StatusOK)
	return nil
}

// serviceProps keeps each account's Blob service properties document as the
// client sent it (validated as XML), per gateway process. The document is
// echoed back by Get Blob Service Properties; nothing in the gateway acts on
// it yet (CORS, logging, soft delete belong to later work), and it is not
// shared between replicas.
type serviceProps struct {
	mu   sync.Mutex
	docs map[string][]byte
}

func newServiceProps() *serviceProps { return &serviceProps{docs: map[string][]byte{}} }

const defaultServiceProps = `<?xml version="1.0" encoding="utf-8"?><StorageServiceProperties>` +
	`<Logging><Version>1.0</Version><Read>false</Read><Write>false</Write><Delete>false</Delete><RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></Logging>` +
	`<HourMetrics><Version>1.0</Version><Enabled>false</Enabled><RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></HourMetrics>` +
	`<MinuteMetrics><Version>1.0</Version><Enabled>false</Enabled><RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></MinuteMetrics>` +
	`<Cors /><DeleteRetentionPolicy><Enabled>false</Enabled></DeleteRetentionPolicy>` +
	`<StaticWebsite><Enabled>false</Enabled></StaticWebsite></StorageServiceProperties>`

// Get Blob Service Properties: GET ?restype=service&comp=properties → 200.
func (s *Server) getServiceProperties(w http.ResponseWriter, r *http.Request, req *request) error {
	s.svcProps.mu.Lock()
	doc, ok := s.svcProps.docs[req.account]
	s.svcProps.mu.Unlock()
	if !ok {
		doc = []byte(defaultServiceProps)
	}
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(doc)
	}
	return nil
}

// Set Blob Service Properties: PUT ?restype=service&comp=properties → 202.
func (s *Server) setServiceProperties(w http.ResponseWriter, r *http.Request, req *request) error {
	const limit = 64 << 10
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return err
	}
	if len(body) > limit {
		return svcerr.New(svcerr.RequestBodyTooLarge)
	}
	var probe struct {
		XMLName xml.Name
	}
	if err := xml.Unmarshal(body, &probe); err != nil || probe.XMLName.Local != "StorageServiceProperties" {
		return svcerr.New(svcerr.InvalidXmlDocument)
	}
	if !bytes.HasPrefix(bytes.TrimSpace(body), []byte("<?xml")) {
		body = append([]byte(`<?xml version="1.0" encoding="utf-8"?>`), body...)
	}
	s.svcProps.mu.Lock()
	s.svcProps.docs[req.account] = body
	s.svcProps.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
	return nil
}
