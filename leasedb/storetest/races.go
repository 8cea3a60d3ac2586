package storetest

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

// CreateOnce races 16 goroutines, spread over stores (all on one database),
// each running Update{ Blob(LockExclusive); if absent, PutBlob } on the same
// new name. Exactly one may see it absent: the exclusive lock covers names
// that have no row yet.
func CreateOnce(t *testing.T, stores ...leasedb.Store) {
	const goroutines = 16
	s0 := stores[0]
	mustInsertContainer(t, s0, "c")
	ctx := ctxT(t)
	var absent atomic.Int32
	errs := concurrently(goroutines, func(g int) error {
		s := stores[g%len(stores)]
		var sawAbsent bool
		err := s.Update(ctx, func(tx leasedb.Tx) error {
			sawAbsent = false // fn may be re-run
			b, err := tx.Blob(ctx, acct, "c", "the-name", leasedb.LockExclusive)
			if err != nil {
				return err
			}
			if b != nil {
				return nil
			}
			sawAbsent = true
			// Widen the window a concurrent creator would need.
			time.Sleep(5 * time.Millisecond)
			nb := fullBlob("c", "the-name")
			nb.ETag, err = tx.NextETag(ctx)
			if err != nil {
				return err
			}
			return tx.PutBlob(ctx, nb)
		})
		if err == nil && sawAbsent {
			absent.Add(1)
		}
		return err
	})
	for _, err := range errs {
		t.Errorf("Update: %v", err)
	}
	if n := absent.Load(); n != 1 {
		t.Errorf("%d of %d transactions saw the name absent and created it; want exactly 1", n, goroutines)
	}
}

// Counter runs 8 goroutines × 25 read-modify-write increments of
// Metadata["n"] of one blob under LockExclusive, spread over stores (all on
// one database). No increment may be lost: the result is exactly 200.
func Counter(t *testing.T, stores ...leasedb.Store) {
	const goroutines, per = 8, 25
	s0 := stores[0]
	mustInsertContainer(t, s0, "c")
	update(t, s0, func(ctx context.Context, tx leasedb.Tx) error {
		b := fullBlob("c", "counter")
		b.Metadata = map[string]string{"n": "0"}
		return tx.PutBlob(ctx, b)
	})
	ctx := ctxT(t)
	errs := concurrently(goroutines, func(g int) error {
		return Increment(ctx, stores[g%len(stores)], per)
	})
	for _, err := range errs {
		t.Errorf("Update: %v", err)
	}
	b := getBlob(t, s0, "c", "counter")
	if b == nil || b.Metadata["n"] != strconv.Itoa(goroutines*per) {
		t.Errorf("counter = %v, want %d", b, goroutines*per)
	}
}

// Increment adds 1 to Metadata["n"] of blob c/counter of account acct, n
// times, each a read-modify-write under LockExclusive in its own Update.
// Counter runs it in goroutines; a driver's own tests may run it in other
// processes on the same database.
func Increment(ctx context.Context, s leasedb.Store, n int) error {
	for i := 0; i < n; i++ {
		err := s.Update(ctx, func(tx leasedb.Tx) error {
			b, err := tx.Blob(ctx, acct, "c", "counter", leasedb.LockExclusive)
			if err != nil {
				return err
			}
			if b == nil {
				return errors.New("counter blob vanished")
			}
			v, err := strconv.Atoi(b.Metadata["n"])
			if err != nil {
				return err
			}
			b.Metadata["n"] = strconv.Itoa(v + 1)
			if b.ETag, err = tx.NextETag(ctx); err != nil {
				return err
			}
			return tx.PutBlob(ctx, b)
		})
		if err != nil {
			return err
		}
	}
	return nil
}
