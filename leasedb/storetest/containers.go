package storetest

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/blobgw/blobgw/leasedb"
)

func testContainerInsertGet(t *testing.T, s leasedb.Store) {
	want := fullContainer("c1")
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.InsertContainer(ctx, want) })
	checkContainer(t, want, getContainer(t, s, "c1"))
	// Inside the writing transaction, with each lock mode.
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		for _, m := range []leasedb.LockMode{leasedb.LockNone, leasedb.LockShare, leasedb.LockExclusive} {
			got, err := tx.Container(ctx, acct, "c1", m)
			if err != nil {
				return err
			}
			checkContainer(t, want, got)
			absent, err := tx.Container(ctx, acct, "nope", m)
			if err != nil {
				return err
			}
			if absent != nil {
				t.Errorf("absent container (lock %d): got %+v, want nil", m, absent)
			}
		}
		return nil
	})
	// Another account does not see it.
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		c, err := tx.Container(ctx, "other", "c1", leasedb.LockNone)
		if c != nil {
			t.Errorf("container visible from another account")
		}
		return err
	})
}

func testContainerInsertExists(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c1")
	ctx := ctxT(t)
	err := s.Update(ctx, func(tx leasedb.Tx) error {
		err := tx.InsertContainer(ctx, fullContainer("c1"))
		if !errors.Is(err, leasedb.ErrExists) {
			t.Errorf("second InsertContainer: got %v, want ErrExists", err)
		}
		return err
	})
	if !errors.Is(err, leasedb.ErrExists) {
		t.Errorf("Update: got %v, want ErrExists unchanged", err)
	}
	// The original row is untouched; the same name in another account is fine.
	got := getContainer(t, s, "c1")
	if got.PublicAccess != "" || got.ETag != `"0x8D0000000000001"` {
		t.Errorf("failed insert changed the row: %+v", got)
	}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		c := fullContainer("c1")
		c.Account = "other"
		return tx.InsertContainer(ctx, c)
	})
}

func testContainerUpdate(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c1")
	want := fullContainer("c1")
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.UpdateContainer(ctx, want) })
	checkContainer(t, want, getContainer(t, s, "c1"))

	// Every column is overwritten, including back to zero values.
	cleared := &leasedb.Container{Account: acct, Name: "c1", ETag: `"0x8D0000000000002"`}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.UpdateContainer(ctx, cleared) })
	checkContainer(t, cleared, getContainer(t, s, "c1"))

	ctx := ctxT(t)
	err := s.Update(ctx, func(tx leasedb.Tx) error { return tx.UpdateContainer(ctx, fullContainer("missing")) })
	if !errors.Is(err, leasedb.ErrNotFound) {
		t.Errorf("UpdateContainer on a missing row: got %v, want ErrNotFound", err)
	}
	if c := getContainer(t, s, "missing"); c != nil {
		t.Errorf("UpdateContainer created a row: %+v", c)
	}
}

func testContainerDelete(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c1")
	mustInsertContainer(t, s, "c2")
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		for _, n := range []string{"x", "y", "z"} {
			if err := tx.PutBlob(ctx, fullBlob("c1", n)); err != nil {
				return err
			}
		}
		empty := fullBlob("c1", "empty")
		empty.Extents = nil
		if err := tx.PutBlob(ctx, empty); err != nil {
			return err
		}
		return tx.PutBlob(ctx, fullBlob("c2", "x"))
	})
	keys := deleteContainer(t, s, "c1")
	var want []string
	for _, n := range []string{"x", "y", "z"} {
		want = append(want, fullBlob("c1", n).Keys()...)
	}
	if !reflect.DeepEqual(sortedCopy(keys), sortedCopy(want)) {
		t.Errorf("DeleteContainer keys:\n got %q\nwant %q", keys, want)
	}
	if c := getContainer(t, s, "c1"); c != nil {
		t.Errorf("container still there: %+v", c)
	}
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		bs, err := tx.ListBlobs(ctx, acct, "c1", "", "", 100)
		if len(bs) != 0 {
			t.Errorf("blobs of the deleted container remain: %d", len(bs))
		}
		b, err2 := tx.Blob(ctx, acct, "c2", "x", leasedb.LockNone)
		if b == nil {
			t.Errorf("blob in another container was deleted")
		}
		return errors.Join(err, err2)
	})
	// The name can be reused, and the new container is empty.
	mustInsertContainer(t, s, "c1")
	if b := getBlob(t, s, "c1", "x"); b != nil {
		t.Errorf("re-created container has an old blob")
	}

	ctx := ctxT(t)
	err := s.Update(ctx, func(tx leasedb.Tx) error {
		_, err := tx.DeleteContainer(ctx, acct, "missing")
		return err
	})
	if !errors.Is(err, leasedb.ErrNotFound) {
		t.Errorf("DeleteContainer of a missing container: got %v, want ErrNotFound", err)
	}
}
