package postgres_test

import (
	"testing"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
	"github.com/blobgw/blobgw/leasedb/storetest"
)

// TestConformanceSimpleProtocol runs the store's conformance suite with
// default_query_exec_mode=simple_protocol in the DSN (what a
// transaction-pooling proxy needs): there pgx knows no parameter's type,
// and every argument must still encode (the write paths pass pointer
// arguments, args.go) and every row still decode (rawscan.go's text
// fallback). Put Blob refused every write there before the pointer
// arguments had Value methods.
func TestConformanceSimpleProtocol(t *testing.T) {
	if testing.Short() {
		t.Skip("the whole conformance suite a second time")
	}
	storetest.Run(t, func(t *testing.T) leasedb.Store {
		return open(t, pgtest.Start(t)+"&default_query_exec_mode=simple_protocol")
	})
}
