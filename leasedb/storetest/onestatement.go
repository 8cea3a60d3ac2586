package storetest

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

// testOneStatement: the optional one-statement reads (Store.ReadBlob,
// Store.ReadContainer) return exactly the row Tx.Blob returns, every
// column, Tx.LockBlob exactly its head (Blob.Head), and they tell apart
// the row, no row in a container that exists, and no container;
// LockBlob's clock is the transaction's.
func testOneStatement(t *testing.T, s leasedb.Store) {
	r, readOK := s.(leasedb.BlobReader)
	mustInsertContainer(t, s, "c")
	full := fullBlob("c", "b")
	full.Sealed, full.Type = true, "AppendBlob"
	// Every lease column set, as the head reads each of them.
	full.Lease.Expires, full.Lease.BreakAt = base.Add(time.Hour), base.Add(time.Minute)
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, full) })
	var want *leasedb.Blob
	view(t, s, func(ctx context.Context, tx leasedb.Tx) (err error) {
		want, err = tx.Blob(ctx, acct, "c", "b", leasedb.LockNone)
		return err
	})
	if want == nil {
		t.Fatal("Blob: no row")
	}
	ctx := ctxT(t)
	if r, ok := s.(leasedb.ContainerReader); ok {
		var want *leasedb.Container
		view(t, s, func(ctx context.Context, tx leasedb.Tx) (err error) {
			want, err = tx.Container(ctx, acct, "c", leasedb.LockNone)
			return err
		})
		c, now, err := r.ReadContainer(ctx, acct, "c")
		if err != nil || !reflect.DeepEqual(c, want) || now.IsZero() || now.Location() != time.UTC {
			t.Errorf("ReadContainer: %+v, %v, %v; want %+v", c, now, err, want)
		}
		if c, _, err := r.ReadContainer(ctx, acct, "none"); c != nil || err != nil {
			t.Errorf("ReadContainer of a missing container: %+v, %v", c, err)
		}
	}
	for _, tc := range []struct {
		container, name string
		want            *leasedb.Blob
		exists          bool
	}{{"c", "b", want, true}, {"c", "none", nil, true}, {"none", "b", nil, false}} {
		check := func(how string, b, want any, exists bool, now time.Time, err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("%s %s/%s: %v", how, tc.container, tc.name, err)
			}
			if !reflect.DeepEqual(b, want) || exists != tc.exists {
				t.Errorf("%s %s/%s: %+v, container %v; want %+v, %v", how, tc.container, tc.name, b, exists, want, tc.exists)
			}
			if now.IsZero() || now.Location() != time.UTC || now.Round(time.Microsecond) != now {
				t.Errorf("%s: clock %v, want UTC in microseconds", how, now)
			}
		}
		if readOK {
			b, exists, now, err := r.ReadBlob(ctx, acct, tc.container, tc.name)
			check("ReadBlob", b, tc.want, exists, now, err)
		}
		update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
			l, ok := tx.(leasedb.BlobLocker)
			if !ok {
				return nil
			}
			b, exists, now, err := l.LockBlob(ctx, acct, tc.container, tc.name)
			check("LockBlob", b, tc.want.Head(), exists, now, err)
			if again, err := tx.Now(ctx); err != nil || !again.Equal(now) {
				t.Errorf("Now after LockBlob: %v, %v; LockBlob read %v", again, err, now)
			}
			return nil
		})
	}
}
