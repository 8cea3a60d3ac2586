// Package postgrestest opens Postgres metadata stores for tests that count
// the SQL an operation costs (the driver's own tests and the gateway's
// statement ceilings).
package postgrestest

import (
	"context"
	"testing"

	"github.com/blobgw/blobgw/leasedb/postgres"
)

// OpenCounting opens a statement-counting store (postgres.OpenCounting) on
// dsn and migrates it; closed when tb ends.
func OpenCounting(tb testing.TB, dsn string) *postgres.Store {
	tb.Helper()
	ctx := context.Background()
	s, err := postgres.OpenCounting(ctx, dsn)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	if _, _, err := s.Migrate(ctx); err != nil {
		tb.Fatal(err)
	}
	return s
}
