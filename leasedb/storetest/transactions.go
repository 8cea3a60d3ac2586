package storetest

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

func testNow(t *testing.T, s leasedb.Store) {
	var first time.Time
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		a, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		time.Sleep(2 * time.Millisecond)
		b, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		if !a.Equal(b) {
			t.Errorf("Now changed within a transaction: %v then %v", a, b)
		}
		first = a
		return nil
	})
	checkUTC(t, "Now", first)
	if first.Truncate(time.Microsecond) != first || first.Nanosecond()%1000 != 0 {
		t.Errorf("Now %v is not truncated to microseconds", first)
	}
	if d := time.Since(first); d < -time.Minute || d > time.Minute {
		t.Errorf("Now %v is %v away from this host's clock", first, d)
	}
	time.Sleep(2 * time.Millisecond)
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		second, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		if !second.After(first) {
			t.Errorf("Now of a later transaction %v is not after %v", second, first)
		}
		return nil
	})
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		_, err := tx.Now(ctx)
		return err
	})
}

var etagRE = regexp.MustCompile(`^"0x[0-9A-F]{15,}"$`)

func testNextETag(t *testing.T, s leasedb.Store) {
	seen := map[string]bool{}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		for i := 0; i < 1000; i++ {
			e, err := tx.NextETag(ctx)
			if err != nil {
				return err
			}
			if !etagRE.MatchString(e) {
				t.Fatalf("ETag %q does not match %v", e, etagRE)
			}
			if seen[e] {
				t.Fatalf("ETag %q returned twice", e)
			}
			seen[e] = true
		}
		return nil
	})
	// A rolled-back transaction's ETags may be skipped but never reused.
	ctx := ctxT(t)
	sentinel := errors.New("roll back")
	_ = s.Update(ctx, func(tx leasedb.Tx) error {
		if _, err := tx.NextETag(ctx); err != nil {
			return err
		}
		return sentinel
	})
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		e, err := tx.NextETag(ctx)
		if err != nil {
			return err
		}
		if seen[e] {
			t.Errorf("ETag %q reused after rollback", e)
		}
		return nil
	})
}

func testNextETagConcurrent(t *testing.T, s leasedb.Store) {
	const workers, per = 8, 40
	ctx := ctxT(t)
	var mu sync.Mutex
	seen := map[string]int{}
	errs := concurrently(workers, func(int) error {
		for i := 0; i < per; i++ {
			var got []string
			err := s.Update(ctx, func(tx leasedb.Tx) error {
				got = got[:0]
				for j := 0; j < 3; j++ {
					e, err := tx.NextETag(ctx)
					if err != nil {
						return err
					}
					got = append(got, e)
				}
				return nil
			})
			if err != nil {
				return err
			}
			mu.Lock()
			for _, e := range got {
				seen[e]++
			}
			mu.Unlock()
		}
		return nil
	})
	for _, err := range errs {
		t.Fatal(err)
	}
	if len(seen) != workers*per*3 {
		t.Errorf("got %d distinct ETags, want %d", len(seen), workers*per*3)
	}
	for e, n := range seen {
		if n != 1 || !etagRE.MatchString(e) {
			t.Errorf("ETag %q seen %d times", e, n)
		}
	}
}

func testUpdateRollback(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "keep")
	ctx := ctxT(t)
	sentinel := errors.New("sentinel")
	runs := 0
	err := s.Update(ctx, func(tx leasedb.Tx) error {
		runs++
		if err := tx.InsertContainer(ctx, fullContainer("c")); err != nil {
			return err
		}
		if err := tx.PutBlob(ctx, fullBlob("c", "b")); err != nil {
			return err
		}
		if err := tx.PutBlob(ctx, fullBlob("keep", "b")); err != nil {
			return err
		}
		if err := tx.AddGC(ctx, []string{"gc"}, base); err != nil {
			return err
		}
		if err := tx.AddIntent(ctx, "intent", base); err != nil {
			return err
		}
		if _, err := tx.DeleteContainer(ctx, acct, "keep"); err != nil {
			return err
		}
		return sentinel
	})
	if err != sentinel {
		t.Errorf("Update returned %v, want fn's error unchanged", err)
	}
	if runs != 1 {
		t.Errorf("fn ran %d times; an error of fn must not be retried", runs)
	}
	if c := getContainer(t, s, "c"); c != nil {
		t.Errorf("rolled-back container is visible")
	}
	if c := getContainer(t, s, "keep"); c == nil {
		t.Errorf("rolled-back delete took effect")
	}
	if b := getBlob(t, s, "keep", "b"); b != nil {
		t.Errorf("rolled-back blob is visible")
	}
	if got := keysOf(t, s); len(got) != 0 {
		t.Errorf("rolled-back collection entries are visible: %q", got)
	}
}

func testUpdatePanic(t *testing.T, s leasedb.Store) {
	ctx := ctxT(t)
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want the panic of fn", r)
			}
		}()
		_ = s.Update(ctx, func(tx leasedb.Tx) error {
			if err := tx.InsertContainer(ctx, fullContainer("c")); err != nil {
				return err
			}
			panic("boom")
		})
	}()
	if c := getContainer(t, s, "c"); c != nil {
		t.Errorf("container of a panicking Update is visible")
	}
	// The store is still usable: nothing leaked the write lock or a connection.
	for i := 0; i < 20; i++ {
		mustInsertContainer(t, s, "after"+strconv.Itoa(i))
	}
}

func testUpdateCanceled(t *testing.T, s leasedb.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	err := s.Update(ctx, func(tx leasedb.Tx) error {
		ran = true
		return tx.InsertContainer(ctx, fullContainer("c"))
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Update with a canceled context: got %v (fn ran: %v), want context.Canceled", err, ran)
	}
	// Canceled in the middle.
	ctx2, cancel2 := context.WithCancel(context.Background())
	err = s.Update(ctx2, func(tx leasedb.Tx) error {
		if err := tx.InsertContainer(ctx2, fullContainer("c")); err != nil {
			return err
		}
		cancel2()
		return tx.PutBlob(ctx2, fullBlob("c", "b"))
	})
	if err == nil {
		t.Errorf("Update canceled mid-way committed")
	}
	if c := getContainer(t, s, "c"); c != nil {
		t.Errorf("canceled Update is visible")
	}
	mustInsertContainer(t, s, "after")
}

func testView(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, fullBlob("c", "b")) })
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		b, err := tx.Blob(ctx, acct, "c", "b", leasedb.LockNone)
		if err != nil {
			return err
		}
		checkBlob(t, fullBlob("c", "b"), b)
		// Lock modes are accepted (and meaningless) in a View.
		if _, err := tx.Blob(ctx, acct, "c", "b", leasedb.LockExclusive); err != nil {
			return err
		}
		if _, err := tx.Container(ctx, acct, "c", leasedb.LockShare); err != nil {
			return err
		}
		cs, err := tx.ListContainers(ctx, acct, "", "", 10)
		if len(cs) != 1 {
			t.Errorf("ListContainers in View: %d rows", len(cs))
		}
		return err
	})
	// A View is one snapshot: a commit during it is not seen.
	ctx := ctxT(t)
	err := s.View(ctx, func(tx leasedb.Tx) error {
		before, err := tx.ListBlobs(ctx, acct, "c", "", "", 100)
		if err != nil {
			return err
		}
		update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, fullBlob("c", "new")) })
		after, err := tx.ListBlobs(ctx, acct, "c", "", "", 100)
		if err != nil {
			return err
		}
		if len(before) != len(after) {
			t.Errorf("View saw a concurrent commit: %d rows, then %d", len(before), len(after))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if b := getBlob(t, s, "c", "new"); b == nil {
		t.Errorf("a later View does not see the commit")
	}
	// fn's error comes back unchanged.
	sentinel := errors.New("sentinel")
	if err := s.View(ctx, func(leasedb.Tx) error { return sentinel }); err != sentinel {
		t.Errorf("View returned %v, want fn's error", err)
	}
}

func testViewReadOnly(t *testing.T, s leasedb.Store) {
	ctx := ctxT(t)
	err := s.View(ctx, func(tx leasedb.Tx) error {
		return tx.InsertContainer(ctx, fullContainer("c"))
	})
	if err == nil {
		t.Errorf("InsertContainer in a View succeeded")
	}
	err = s.View(ctx, func(tx leasedb.Tx) error { return tx.AddGC(ctx, []string{"k"}, base) })
	if err == nil {
		t.Errorf("AddGC in a View succeeded")
	}
	if c := getContainer(t, s, "c"); c != nil {
		t.Errorf("write in a View is visible")
	}
	if got := keysOf(t, s); len(got) != 0 {
		t.Errorf("write in a View is visible: %q", got)
	}
}
