package bench_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/blobgw/blobgw/gateway"
	"github.com/blobgw/blobgw/internal/bench"
	"github.com/blobgw/blobgw/internal/config"
	"github.com/blobgw/blobgw/internal/gwtest"
)

// gatewayURL serves a gateway on SQLite and disk for the test and returns
// its service URL.
func gatewayURL(t *testing.T) string {
	t.Helper()
	store := gwtest.OpenStore(t, filepath.Join(t.TempDir(), "meta.db"))
	gw := gwtest.Gateway(t, store, gwtest.DiskBackend(t, t.TempDir()), gateway.Options{})
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	return srv.URL + "/" + config.DevAccountName + "/"
}

// TestHook: the hook is called once per set and workload, its closing
// function sees the finished counts of the timed phase, and what it adds
// to Extra reaches the report.
func TestHook(t *testing.T) {
	ep := bench.Endpoint{URL: gatewayURL(t), Account: config.DevAccountName, Key: config.DevAccountKey}
	var mu sync.Mutex
	calls := map[string]int{}
	cfg := bench.Config{Clients: 2, Duration: 200 * time.Millisecond, Hook: func(set, workload string) func(*bench.Result) {
		mu.Lock()
		calls[set+"/"+workload]++
		mu.Unlock()
		return func(r *bench.Result) {
			r.Extra = map[string]float64{"ops-seen": float64(r.Ops)}
		}
	}}
	sets := []bench.Set{{Name: "x", Endpoints: []bench.Endpoint{ep}}, {Name: "y", Endpoints: []bench.Endpoint{ep}}}
	rep, err := bench.Run(context.Background(), cfg, []string{"put-small", "lease-cycle"}, sets)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 4 {
		t.Fatalf("hook calls %v", calls)
	}
	for k, n := range calls {
		if n != 1 {
			t.Errorf("hook called %d times for %s", n, k)
		}
	}
	for _, r := range rep.Results {
		if r.Ops == 0 || r.Extra["ops-seen"] != float64(r.Ops) {
			t.Errorf("%s on %s: %d ops, the hook saw %v", r.Workload, r.Set, r.Ops, r.Extra)
		}
	}
}
