package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
	"github.com/blobgw/blobgw/leasedb/postgres"
)

// A store whose DSN reaches a hot standby (no target_session_attrs, or a
// failover in progress) reads, and refuses writes as an outage
// (leasedb.ErrUnavailable, which the gateway answers 503 ServerBusy), not
// as a failure of the request (500).
func TestUpdateOnStandbyIsUnavailable(t *testing.T) {
	ctx := context.Background()
	s := openStandby(t, false)
	if err := s.View(ctx, func(leasedb.Tx) error { return nil }); err != nil {
		t.Fatalf("View on the standby: %v", err)
	}
	checkRefusedAtBegin(t, "Update", s.Update(ctx, func(leasedb.Tx) error { return nil }))
}

// openStandby starts a primary with a hot standby, creates a database
// named for the test and opens a store on the standby, closed when the
// test ends. With schema the primary migrates the database first (the
// standby cannot), and the standby replays it in its own time.
func openStandby(t *testing.T, schema bool) *postgres.Store {
	t.Helper()
	pair := pgtest.StartPair(t)
	ctx := context.Background()
	name, _, err := pair.CreateDatabase(ctx, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	if schema {
		open(t, pair.Primary.DSN(name))
	}
	s, err := postgres.Open(ctx, pair.Standby.DSN(name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// checkRefusedAtBegin fails the test unless err, what a write on the
// standby returned, is a refusal at BEGIN: an outage
// (leasedb.ErrUnavailable), certainly not committed.
func checkRefusedAtBegin(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, leasedb.ErrUnavailable) {
		t.Errorf("%s on the standby: %v, want leasedb.ErrUnavailable", what, err)
	}
	if leasedb.MayHaveCommitted(err) {
		t.Errorf("%s refused at BEGIN is marked as maybe committed: %v", what, err)
	}
}
