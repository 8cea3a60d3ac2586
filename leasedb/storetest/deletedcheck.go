package storetest

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

// putDeletedFails puts r as a soft-deleted row in a transaction of its
// own and checks that the store refuses it with wantErr.
func putDeletedFails(t *testing.T, s leasedb.Store, r *leasedb.Blob, wantErr error, what string) {
	t.Helper()
	ctx := ctxT(t)
	err := s.Update(ctx, func(tx leasedb.Tx) error { return tx.PutDeletedBlob(ctx, r) })
	if !errors.Is(err, wantErr) {
		t.Errorf("%s: %v, want %v", what, err, wantErr)
	}
}

// checkDeletedRows checks the soft-deleted rows of blob name in container
// "c" against want, in order.
func checkDeletedRows(t *testing.T, ctx context.Context, tx leasedb.Tx, name string, want ...*leasedb.Blob) error {
	t.Helper()
	rows, err := tx.DeletedBlobs(ctx, acct, "c", name)
	if err != nil {
		return err
	}
	if len(rows) != len(want) {
		t.Fatalf("DeletedBlobs of %s = %d rows, want %d", name, len(rows), len(want))
	}
	for i, w := range want {
		checkBlob(t, w, rows[i])
	}
	return nil
}

// checkExpired checks the first 10 soft-deleted rows that have expired by
// at against want.
func checkExpired(t *testing.T, ctx context.Context, tx leasedb.Tx, at time.Time, want ...leasedb.DeletedRef) error {
	t.Helper()
	exp, err := tx.ExpiredBlobs(ctx, at, 10)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(exp, want) {
		t.Errorf("ExpiredBlobs at %v = %+v, want %+v", at, exp, want)
	}
	return nil
}
