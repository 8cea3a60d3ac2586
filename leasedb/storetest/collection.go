package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

// dbNow is the store's clock, for due times relative to it.
func dbNow(t *testing.T, s leasedb.Store) time.Time {
	t.Helper()
	var now time.Time
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		var err error
		now, err = tx.Now(ctx)
		return err
	})
	return now
}

func keysOf(t *testing.T, s leasedb.Store) []string {
	t.Helper()
	keys, err := s.CollectionKeys(ctxT(t))
	if err != nil {
		t.Fatalf("CollectionKeys: %v", err)
	}
	return keys
}

func take(t *testing.T, s leasedb.Store, key string) bool {
	t.Helper()
	var ok bool
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		var err error
		ok, err = tx.TakeIntent(ctx, key)
		return err
	})
	return ok
}

func claim(t *testing.T, s leasedb.Store, limit int, reclaimAfter time.Duration) []string {
	t.Helper()
	keys, err := s.ClaimDue(ctxT(t), limit, reclaimAfter)
	if err != nil {
		t.Fatalf("ClaimDue: %v", err)
	}
	return sortedCopy(keys)
}

func testIntentTakeOnce(t *testing.T, s leasedb.Store) {
	now := dbNow(t, s)
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		return tx.AddIntent(ctx, "intent/1", now.Add(time.Hour))
	})
	if got := keysOf(t, s); !reflect.DeepEqual(got, []string{"intent/1"}) {
		t.Errorf("CollectionKeys = %q, want the intent", got)
	}
	ctx := ctxT(t)
	err := s.Update(ctx, func(tx leasedb.Tx) error { return tx.AddIntent(ctx, "intent/1", now) })
	if !errors.Is(err, leasedb.ErrExists) {
		t.Errorf("AddIntent twice: got %v, want ErrExists", err)
	}
	if !take(t, s, "intent/1") {
		t.Errorf("TakeIntent: false, want true")
	}
	if take(t, s, "intent/1") {
		t.Errorf("second TakeIntent: true, want false")
	}
	if take(t, s, "never-added") {
		t.Errorf("TakeIntent of an unknown key: true")
	}
	if got := keysOf(t, s); len(got) != 0 {
		t.Errorf("CollectionKeys after take = %q, want none", got)
	}
	// A plain collection entry is not an intent.
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		return tx.AddGC(ctx, []string{"gc/1"}, now.Add(time.Hour))
	})
	if take(t, s, "gc/1") {
		t.Errorf("TakeIntent took a collection entry")
	}
	if got := keysOf(t, s); !reflect.DeepEqual(got, []string{"gc/1"}) {
		t.Errorf("CollectionKeys = %q, want [gc/1]", got)
	}
	// A taken intent rolled back is still there.
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		return tx.AddIntent(ctx, "intent/2", now.Add(time.Hour))
	})
	sentinel := errors.New("no")
	_ = s.Update(ctx, func(tx leasedb.Tx) error {
		if ok, err := tx.TakeIntent(ctx, "intent/2"); err != nil || !ok {
			t.Errorf("TakeIntent = %v, %v", ok, err)
		}
		return sentinel
	})
	if !take(t, s, "intent/2") {
		t.Errorf("intent taken in a rolled-back transaction is gone")
	}
}

func testIntentClaimed(t *testing.T, s leasedb.Store) {
	now := dbNow(t, s)
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		if err := tx.AddIntent(ctx, "late", now.Add(-time.Second)); err != nil {
			return err
		}
		return tx.AddIntent(ctx, "on-time", now.Add(time.Hour))
	})
	if got := claim(t, s, 10, time.Hour); !reflect.DeepEqual(got, []string{"late"}) {
		t.Fatalf("ClaimDue = %q, want [late]", got)
	}
	if take(t, s, "late") {
		t.Errorf("TakeIntent succeeded on a claimed intent")
	}
	if !take(t, s, "on-time") {
		t.Errorf("TakeIntent failed on an unclaimed intent")
	}
	// The claimed entry stays until Forget.
	if got := keysOf(t, s); !reflect.DeepEqual(got, []string{"late"}) {
		t.Errorf("CollectionKeys = %q, want [late]", got)
	}
}

func testClaimDueOnlyDue(t *testing.T, s leasedb.Store) {
	now := dbNow(t, s)
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		if err := tx.AddGC(ctx, []string{"gc/past1", "gc/past2"}, now.Add(-time.Minute)); err != nil {
			return err
		}
		if err := tx.AddGC(ctx, []string{"gc/future"}, now.Add(time.Hour)); err != nil {
			return err
		}
		if err := tx.AddIntent(ctx, "intent/past", now.Add(-time.Millisecond)); err != nil {
			return err
		}
		return tx.AddIntent(ctx, "intent/future", now.Add(time.Hour))
	})
	want := []string{"gc/past1", "gc/past2", "intent/past"}
	if got := claim(t, s, 100, time.Hour); !reflect.DeepEqual(got, want) {
		t.Errorf("ClaimDue = %q, want %q", got, want)
	}
	if got := claim(t, s, 100, time.Hour); len(got) != 0 {
		t.Errorf("second ClaimDue = %q, want nothing (claims are fresh)", got)
	}
	// reclaimAfter <= 0 never reclaims.
	if got := claim(t, s, 100, 0); len(got) != 0 {
		t.Errorf("ClaimDue with reclaimAfter 0 = %q, want nothing", got)
	}
	if got := claim(t, s, 0, time.Hour); len(got) != 0 {
		t.Errorf("ClaimDue with limit 0 = %q", got)
	}
	if got := keysOf(t, s); len(got) != 5 {
		t.Errorf("CollectionKeys = %q, want all 5 entries", got)
	}
}

func testClaimDueLimit(t *testing.T, s leasedb.Store) {
	now := dbNow(t, s)
	var all []string
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		for i := 0; i < 5; i++ {
			k := fmt.Sprintf("gc/%d", i)
			all = append(all, k)
			// Earlier due first.
			if err := tx.AddGC(ctx, []string{k}, now.Add(-time.Duration(10-i)*time.Second)); err != nil {
				return err
			}
		}
		return nil
	})
	first := claim(t, s, 2, time.Hour)
	if !reflect.DeepEqual(first, all[:2]) {
		t.Errorf("ClaimDue(2) = %q, want the two earliest %q", first, all[:2])
	}
	rest := claim(t, s, 10, time.Hour)
	if !reflect.DeepEqual(rest, all[2:]) {
		t.Errorf("ClaimDue(10) = %q, want %q", rest, all[2:])
	}
}

func testClaimDueReclaim(t *testing.T, s leasedb.Store) {
	now := dbNow(t, s)
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		return tx.AddGC(ctx, []string{"k"}, now.Add(-time.Second))
	})
	if got := claim(t, s, 10, time.Hour); !reflect.DeepEqual(got, []string{"k"}) {
		t.Fatalf("ClaimDue = %q", got)
	}
	time.Sleep(100 * time.Millisecond)
	if got := claim(t, s, 10, time.Hour); len(got) != 0 {
		t.Errorf("fresh claim reclaimed: %q", got)
	}
	// Claimed more than 50ms ago: the collector is presumed dead.
	if got := claim(t, s, 10, 50*time.Millisecond); !reflect.DeepEqual(got, []string{"k"}) {
		t.Errorf("stale claim not reclaimed: %q", got)
	}
	// Reclaiming renews the claim.
	if got := claim(t, s, 10, time.Hour); len(got) != 0 {
		t.Errorf("renewed claim reclaimed: %q", got)
	}
	if _, err := s.Forget(ctxT(t), []string{"k"}); err != nil {
		t.Fatal(err)
	}
	if got := keysOf(t, s); len(got) != 0 {
		t.Errorf("Forget left %q", got)
	}
}

func testClaimDueConcurrent(t *testing.T, s leasedb.Store) {
	const n = 300
	now := dbNow(t, s)
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		keys := make([]string, n)
		for i := range keys {
			keys[i] = fmt.Sprintf("gc/%04d", i)
		}
		return tx.AddGC(ctx, keys, now.Add(-time.Second))
	})
	const workers = 8
	ctx := ctxT(t)
	var mu sync.Mutex
	got := map[string]int{}
	errs := concurrently(workers, func(int) error {
		for {
			keys, err := s.ClaimDue(ctx, 7, time.Hour)
			if err != nil || len(keys) == 0 {
				return err
			}
			mu.Lock()
			for _, k := range keys {
				got[k]++
			}
			mu.Unlock()
		}
	})
	for _, err := range errs {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Errorf("claimed %d distinct keys, want %d", len(got), n)
	}
	for k, c := range got {
		if c != 1 {
			t.Errorf("key %s claimed %d times", k, c)
		}
	}
}

func testAddGCForget(t *testing.T, s leasedb.Store) {
	now := dbNow(t, s)
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		if err := tx.AddGC(ctx, nil, now); err != nil {
			return err
		}
		if err := tx.AddGC(ctx, []string{"b", "a", "c", "a"}, now.Add(time.Hour)); err != nil {
			return err
		}
		// An intent handed to the collector is no longer an intent.
		if err := tx.AddIntent(ctx, "i", now.Add(time.Hour)); err != nil {
			return err
		}
		return tx.AddGC(ctx, []string{"i"}, now.Add(-time.Second))
	})
	if got := keysOf(t, s); !reflect.DeepEqual(got, []string{"a", "b", "c", "i"}) {
		t.Errorf("CollectionKeys = %q", got)
	}
	if take(t, s, "i") {
		t.Errorf("TakeIntent took a key queued for collection")
	}
	if got := claim(t, s, 10, time.Hour); !reflect.DeepEqual(got, []string{"i"}) {
		t.Errorf("ClaimDue = %q, want [i] (re-queued as due)", got)
	}
	ctx := ctxT(t)
	if n, err := s.Forget(ctx, nil); err != nil || n != 0 {
		t.Errorf("Forget(nil) = %d, %v", n, err)
	}
	// The count is of the entries removed: "unknown" has none.
	if n, err := s.Forget(ctx, []string{"a", "i", "unknown"}); err != nil || n != 2 {
		t.Errorf("Forget = %d, %v; want 2 removed", n, err)
	}
	// Forgotten already (a second collector's Forget of a re-claimed
	// entry): nothing removed, nothing counted.
	if n, err := s.Forget(ctx, []string{"a", "i"}); err != nil || n != 0 {
		t.Errorf("Forget again = %d, %v; want 0 removed", n, err)
	}
	if got := keysOf(t, s); !reflect.DeepEqual(got, []string{"b", "c"}) {
		t.Errorf("CollectionKeys after Forget = %q", got)
	}
	// Many keys at once.
	many := make([]string, 2500)
	for i := range many {
		many[i] = fmt.Sprintf("m/%05d", i)
	}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.AddGC(ctx, many, now) })
	if n, err := s.Forget(ctx, many); err != nil || n != len(many) {
		t.Fatalf("Forget(many) = %d, %v; want %d", n, err, len(many))
	}
	if got := keysOf(t, s); !reflect.DeepEqual(got, []string{"b", "c"}) {
		t.Errorf("CollectionKeys after Forget(many) has %d keys", len(got))
	}
}
