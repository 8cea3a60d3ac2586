package gateway

import (
	"bytes"
	"encoding/xml"
	"net"
	"testing"
	"time"
)

// Every test of this package runs with the inline body buffers poisoned
// when given back: a read of one after its return shows as wrong bytes.
func init() { poisonInlineBufs = true }

// PooledKeys returns the keys whose intents are recorded and waiting in the
// Server's key pool: queue entries that belong to no upload yet.
func (s *Server) PooledKeys() []string { return s.keys.pooled() }

// AcceptAll accepts a listener's connections onto a channel (connlimit_test.go).
var AcceptAll = acceptAll

// HeaderRecordMax is the bound of a connection's header record.
const HeaderRecordMax = headerRecordMax

// FindMetaNames is the header-block finder of ServeHTTP (headercase.go).
var FindMetaNames = findMetaNames

// HeaderRecordStats reports, for a connection accepted through
// PreserveHeaderCase, its record now, the longest the record has been and
// every byte ever copied into it.
func HeaderRecordStats(c net.Conn) (rec []byte, peak int, copied int64, ok bool) {
	rc, ok := c.(*recordingConn)
	if !ok {
		return nil, 0, 0, false
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return bytes.Clone(rc.buf), rc.peak, rc.copied, true
}

// ParseQuery is the request query normalization of serve (query.go).
var ParseQuery = parseQuery

// RefuseHeaders and RefuseServiceProps are the refusal tables of refuse.go.
var RefuseHeaders = refuseHeaders

func RefuseServiceProps(body string) error {
	var doc propsDoc
	if err := xml.Unmarshal([]byte(body), &doc); err != nil {
		return err
	}
	return refuseServiceProps([]byte(body), &doc)
}

// SetCommitTimeout sets the bound of a commit detached from its client
// (blob_put.go) until t ends. Tests that call it must not run in parallel.
func SetCommitTimeout(t testing.TB, d time.Duration) {
	old := commitTimeout
	commitTimeout = d
	t.Cleanup(func() { commitTimeout = old })
}
