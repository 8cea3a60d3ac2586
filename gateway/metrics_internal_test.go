package gateway

import (
	"context"
	"errors"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/blobgw/blobgw/leasedb"
)

// runsStore is a Store whose Update and View run fn runs times (as a
// store retries a serialization failure), the first runs-1 failing.
type runsStore struct {
	leasedb.Store
	runs int
}

var errRetry = errors.New("retry")

func (s runsStore) Update(ctx context.Context, fn func(leasedb.Tx) error) error {
	var err error
	for i := range s.runs {
		if err = fn(nil); err == nil && i < s.runs-1 {
			err = errRetry
		}
	}
	return err
}

func (s runsStore) View(ctx context.Context, fn func(leasedb.Tx) error) error {
	return s.Update(ctx, fn)
}

// The transaction metrics count every run of fn after the first as a
// retry, also for transactions that nest (fn starting another) and for
// ones that follow each other on the pooled counters.
func TestObservedStoreRetries(t *testing.T) {
	m := newMetrics()
	retries := func(kind string) float64 {
		var mm dto.Metric
		if err := m.txRetries.WithLabelValues(kind).Write(&mm); err != nil {
			t.Fatal(err)
		}
		return mm.GetCounter().GetValue()
	}
	ctx := context.Background()
	three := observedStore{Store: runsStore{runs: 3}, m: m}
	one := observedStore{Store: runsStore{runs: 1}, m: m}
	calls := 0
	for range 10 {
		if err := three.Update(ctx, func(leasedb.Tx) error { calls++; return nil }); err != nil {
			t.Fatal(err)
		}
		if err := one.Update(ctx, func(leasedb.Tx) error { calls++; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if got := retries("update"); got != 20 || calls != 40 {
		t.Fatalf("update: %v retries, %d runs of fn; want 20 and 40", got, calls)
	}
	// A view that runs an update inside each of its three runs.
	if err := three.View(ctx, func(leasedb.Tx) error {
		return one.Update(ctx, func(leasedb.Tx) error { return nil })
	}); err != nil {
		t.Fatal(err)
	}
	if v, u := retries("view"), retries("update"); v != 2 || u != 20 {
		t.Fatalf("nested: %v view and %v update retries, want 2 and 20", v, u)
	}
}
