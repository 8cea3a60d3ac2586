package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

// testClockOffsetReads: the clock a test moves (ClockOffsetter) is the
// clock of every read that returns one, not only of transactions: a
// one-statement read (BlobReader, BlobHeadReader, ContainerReader) that
// answered the unmoved clock would judge a lease or a retention by
// another time than the write beside it (a Put Blob's pre-check seeing an
// expired lease as active).
func testClockOffsetReads(t *testing.T, s leasedb.Store) {
	ctx := ctxT(t)
	co, ok := s.(leasedb.ClockOffsetter)
	if !ok {
		t.Skipf("%T does not offer ClockOffsetter", s)
	}
	db := &leasedb.DB{Store: s}
	mustInsertContainer(t, s, "c")
	if _, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: leasedb.BlobRef{Account: acct, Container: "c", Name: "b"}, Type: "BlockBlob"}); err != nil {
		t.Fatal(err)
	}
	const offset = 48 * time.Hour
	co.SetClockOffset(offset)
	t.Cleanup(func() { co.SetClockOffset(0) })
	check := func(what string, now time.Time) {
		t.Helper()
		want := time.Now().Add(offset)
		if d := now.Sub(want); d < -time.Minute || d > time.Minute {
			t.Errorf("%s: clock %v, want about %v (the offset %v applied)", what, now, want, offset)
		}
	}
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		now, err := tx.Now(ctx)
		check("Tx.Now", now)
		return err
	})
	if r, ok := s.(leasedb.BlobReader); ok {
		_, _, now, err := r.ReadBlob(ctx, acct, "c", "b")
		if err != nil {
			t.Fatal(err)
		}
		check("ReadBlob", now)
	}
	if r, ok := s.(leasedb.BlobHeadReader); ok {
		_, _, now, err := r.ReadBlobHead(ctx, acct, "c", "b")
		if err != nil {
			t.Fatal(err)
		}
		check("ReadBlobHead", now)
	}
	if r, ok := s.(leasedb.ContainerReader); ok {
		_, now, err := r.ReadContainer(ctx, acct, "c")
		if err != nil {
			t.Fatal(err)
		}
		check("ReadContainer", now)
	}
}
