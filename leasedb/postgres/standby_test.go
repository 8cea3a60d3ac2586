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
	pair := pgtest.StartPair(t)
	ctx := context.Background()
	name, _, err := pair.CreateDatabase(ctx, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	s, err := postgres.Open(ctx, pair.Standby.DSN(name))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.View(ctx, func(leasedb.Tx) error { return nil }); err != nil {
		t.Fatalf("View on the standby: %v", err)
	}
	err = s.Update(ctx, func(leasedb.Tx) error { return nil })
	if !errors.Is(err, leasedb.ErrUnavailable) {
		t.Fatalf("Update on the standby: %v, want leasedb.ErrUnavailable", err)
	}
	if leasedb.MayHaveCommitted(err) {
		t.Fatalf("Update refused at BEGIN is marked as maybe committed: %v", err)
	}
}
