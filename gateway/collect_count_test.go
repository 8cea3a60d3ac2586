package gateway_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/blobgw/blobgw/gateway"
	"github.com/blobgw/blobgw/internal/gwtest"
	"github.com/blobgw/blobgw/leasedb"
)

// reclaimingStore hands the keys of its first ClaimDue to one more
// ClaimDue, as a second collector re-claiming entries whose first
// collector held them past reclaimAfter would receive them.
type reclaimingStore struct {
	leasedb.Store
	mu      sync.Mutex
	claimed []string
	calls   int
}

func (s *reclaimingStore) ClaimDue(ctx context.Context, limit int, reclaimAfter time.Duration) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	switch s.calls {
	case 1:
		keys, err := s.Store.ClaimDue(ctx, limit, reclaimAfter)
		s.claimed = keys
		return keys, err
	case 2:
		return s.claimed, nil
	}
	return nil, nil
}

// TestCollectCountsForgottenOnce: blobgw_collector_deleted_total counts an
// object once although two collectors deleted it (the second re-claimed
// its entry after reclaimAfter): only the collection whose Forget removed
// the queue entry counts it.
func TestCollectCountsForgottenOnce(t *testing.T) {
	forKinds(t, []string{"sqlite+disk", "postgres+disk"}, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "gcc")
		for _, body := range []string{"first", "second"} {
			if _, err := b.client.UploadBuffer(ctx, "gcc", "b", []byte(body), nil); err != nil {
				t.Fatal(err)
			}
		}
		rs := &reclaimingStore{Store: b.stores[0]}
		first, err := gateway.Collect(ctx, rs, b.backend, gwtest.Discard())
		if err != nil {
			t.Fatal(err)
		}
		if first != 1 || len(rs.claimed) != 1 {
			t.Fatalf("first collector deleted %d (claimed %v), want the replaced object", first, rs.claimed)
		}
		second, err := gateway.Collect(ctx, rs, b.backend, gwtest.Discard())
		if err != nil {
			t.Fatal(err)
		}
		if second != 0 {
			t.Fatalf("the collector that re-claimed an entry already forgotten counted %d deletions, want 0", second)
		}
	})
}
