package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

// testQueueStats: a store that summarizes its queue (leasedb.QueueStatser)
// counts replaced objects and intents apart, and reports the due time of
// the oldest due entry not yet claimed (none for entries due later).
func testQueueStats(t *testing.T, s leasedb.Store) {
	qs, ok := s.(leasedb.QueueStatser)
	if !ok {
		t.Skip("the store has no QueueStats")
	}
	stats := func() leasedb.QueueStats {
		t.Helper()
		st, err := qs.QueueStats(ctxT(t))
		if err != nil {
			t.Fatalf("QueueStats: %v", err)
		}
		return st
	}
	if st := stats(); st.Pending != 0 || st.Intents != 0 || !st.OldestDue.IsZero() || st.Now.IsZero() {
		t.Fatalf("empty queue: %+v", st)
	}
	now := dbNow(t, s)
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		if err := tx.AddGC(ctx, []string{"gc/old"}, now.Add(-time.Hour)); err != nil {
			return err
		}
		if err := tx.AddGC(ctx, []string{"gc/older"}, now.Add(-2*time.Hour)); err != nil {
			return err
		}
		if err := tx.AddGC(ctx, []string{"gc/later"}, now.Add(time.Hour)); err != nil {
			return err
		}
		return tx.AddIntent(ctx, "intent/q", now.Add(time.Hour))
	})
	st := stats()
	if st.Pending != 3 || st.Intents != 1 {
		t.Fatalf("pending %d intents %d, want 3 and 1", st.Pending, st.Intents)
	}
	if d := st.OldestDue.Sub(now.Add(-2 * time.Hour)); d < -time.Second || d > time.Second {
		t.Fatalf("oldest due %v, want %v", st.OldestDue, now.Add(-2*time.Hour))
	}
	if age := st.Now.Sub(st.OldestDue); age < 2*time.Hour-time.Second {
		t.Fatalf("oldest due only %v ago", age)
	}
	// Claimed entries are being collected: no longer "due and waiting".
	if got := claim(t, s, 10, 0); len(got) != 2 {
		t.Fatalf("claimed %v", got)
	}
	if st := stats(); !st.OldestDue.IsZero() || st.Pending != 3 {
		t.Fatalf("after claiming: %+v", st)
	}
}
