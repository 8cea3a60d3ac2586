// Package postgrestest opens migrated Postgres metadata stores for the
// tests of the driver and of the layers above it, among them statement-
// counting stores for the tests that count the SQL an operation costs
// (the driver's own and the gateway's statement ceilings).
package postgrestest

import (
	"context"
	"testing"

	"github.com/blobgw/blobgw/leasedb/postgres"
)

// Open opens a store (postgres.Open) on dsn and migrates it; closed when
// tb ends.
func Open(tb testing.TB, dsn string) *postgres.Store {
	tb.Helper()
	return migrated(tb, dsn, postgres.Open)
}

// OpenCounting opens a statement-counting store (postgres.OpenCounting) on
// dsn and migrates it; closed when tb ends.
func OpenCounting(tb testing.TB, dsn string) *postgres.Store {
	tb.Helper()
	return migrated(tb, dsn, postgres.OpenCounting)
}

func migrated(tb testing.TB, dsn string, open func(context.Context, string) (*postgres.Store, error)) *postgres.Store {
	tb.Helper()
	ctx := context.Background()
	s, err := open(ctx, dsn)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	if _, _, err := s.Migrate(ctx); err != nil {
		tb.Fatal(err)
	}
	return s
}
