package gateway

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/dbopen"
)

func poolDB(t *testing.T) *leasedb.DB {
	t.Helper()
	store, err := dbopen.Open(context.Background(), filepath.Join(t.TempDir(), "pool.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return &leasedb.DB{Store: store}
}

func queued(t *testing.T, db *leasedb.DB) []string {
	t.Helper()
	keys, err := db.Store.CollectionKeys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	return keys
}

// Every key handed out has its intent recorded before take returns; keys
// are never handed out twice, even to 8 concurrent takers; close forgets
// exactly the keys nobody took.
func TestKeyPool(t *testing.T) {
	ctx := context.Background()
	db := poolDB(t)
	p := newKeyPool(db, time.Hour)
	var mu sync.Mutex
	var taken []string
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				k, err := p.take(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				taken = append(taken, k)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	slices.Sort(taken)
	if len(slices.Compact(slices.Clone(taken))) != 200 {
		t.Fatalf("%d distinct keys of %d taken", len(slices.Compact(slices.Clone(taken))), len(taken))
	}
	inQueue := queued(t, db)
	for _, k := range taken {
		if _, ok := slices.BinarySearch(inQueue, k); !ok {
			t.Fatalf("taken key %s has no recorded intent", k)
		}
	}
	// A refill may still be running; close waits for it, then forgets
	// every key still pooled, leaving the taken ones.
	if err := p.close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := queued(t, db); !slices.Equal(got, taken) {
		t.Fatalf("after close: %d entries, want the %d taken keys", len(got), len(taken))
	}
	// After close each take records its own intent.
	k, err := p.take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := slices.BinarySearch(queued(t, db), k); !ok || len(p.pooled()) != 0 {
		t.Fatalf("take after close: intent recorded %v, pooled %d", ok, len(p.pooled()))
	}
}

// Keys older than maxAge are not handed out: their deadline is too near.
func TestKeyPoolAges(t *testing.T) {
	ctx := context.Background()
	p := newKeyPool(poolDB(t), time.Hour)
	first, err := p.take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waiting := p.pooled()
	if len(waiting) == 0 {
		t.Fatal("nothing pooled after the first refill")
	}
	p.mu.Lock()
	for i := range p.keys {
		p.keys[i].made = p.keys[i].made.Add(-2 * p.maxAge)
	}
	p.mu.Unlock()
	next, err := p.take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if next == first || slices.Contains(waiting, next) {
		t.Fatalf("an aged key was handed out: %s", next)
	}
}

// A refill that fails reaches the waiting request as an error, not a hang.
func TestKeyPoolFailure(t *testing.T) {
	ctx := context.Background()
	store, err := dbopen.Open(ctx, filepath.Join(t.TempDir(), "pool.db"))
	if err != nil {
		t.Fatal(err)
	}
	p := newKeyPool(&leasedb.DB{Store: store}, time.Hour)
	store.Close()
	tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := p.take(tctx); err == nil || tctx.Err() != nil {
		t.Fatalf("take on a closed store: %v (context %v)", err, tctx.Err())
	}
}
