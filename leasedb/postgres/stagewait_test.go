package postgres_test

import (
	"context"
	"encoding/base64"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

// TestPutBlockAwaitsNameLock: the few-statement Put Block (LockForStage,
// CommitStage) reads the name's row in the statement that waits for the
// name's lock, on a snapshot taken before the wait. What the lock's holder
// did meanwhile must still decide the Put Block, as it does in the Tx
// sequence, where the reads come after the lock: a row created with
// committed blocks of another id length, a leased row, a row of another
// type refuse it; a deleted leased row no longer takes its lease id; and
// nothing is staged by a refused Put Block.
func TestPutBlockAwaitsNameLock(t *testing.T) {
	ctx := context.Background()
	s, race := nameLockRacer(t)
	db := &leasedb.DB{Store: s}
	id := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	const leaseID = "11111111-2222-3333-4444-555555555555"
	row := func(name, typ string, lease leasedb.Lease, now time.Time) *leasedb.Blob {
		return &leasedb.Blob{Account: "a", Container: "c", Name: name, Type: typ, ETag: `"0x2"`,
			Created: now, LastModified: now, Size: 3, Lease: lease,
			Extents: []leasedb.Extent{{Key: name + "-committed", Size: 3, BlockID: id("abc")}}, BlockCount: 1}
	}
	leased := func(now time.Time) leasedb.Lease {
		return leasedb.Lease{ID: leaseID, State: "leased", Duration: -1, Since: now}
	}
	stage := func(name, blockID, lease string) func() error {
		key := name + "-staged"
		updateNow(t, s, func(tx leasedb.Tx, now time.Time) error { return tx.AddIntent(ctx, key, now.Add(time.Hour)) })
		return func() error {
			return db.StageBlock(ctx, leasedb.StageBlockRequest{Ref: leasedb.BlobRef{Account: "a", Container: "c", Name: name},
				Block: leasedb.Block{ID: blockID, Key: key, Size: 1}, LeaseID: lease})
		}
	}
	for _, tc := range []struct {
		name   string
		before func(tx leasedb.Tx, now time.Time) error // committed before the race
		change func(tx leasedb.Tx, now time.Time) error // by the lock's holder
		id     string
		lease  string
		want   svcerr.Code // "": staged
		blocks int
	}{
		{name: "committed ids of another length", id: id("abcdef"), want: svcerr.InvalidBlobOrBlock,
			change: func(tx leasedb.Tx, now time.Time) error {
				return tx.PutBlob(ctx, row("committed ids of another length", "BlockBlob", leasedb.Lease{}, now))
			}},
		{name: "committed ids of its length", id: id("xyz"), blocks: 1,
			change: func(tx leasedb.Tx, now time.Time) error {
				return tx.PutBlob(ctx, row("committed ids of its length", "BlockBlob", leasedb.Lease{}, now))
			}},
		{name: "leased row", id: id("abc"), want: svcerr.LeaseIdMissing,
			change: func(tx leasedb.Tx, now time.Time) error {
				return tx.PutBlob(ctx, row("leased row", "BlockBlob", leased(now), now))
			}},
		{name: "append blob", id: id("abc"), want: svcerr.InvalidBlobType,
			change: func(tx leasedb.Tx, now time.Time) error {
				return tx.PutBlob(ctx, row("append blob", "AppendBlob", leasedb.Lease{}, now))
			}},
		{name: "leased row deleted", id: id("abc"), lease: leaseID, want: svcerr.LeaseNotPresentWithBlobOperation,
			before: func(tx leasedb.Tx, now time.Time) error {
				return tx.PutBlob(ctx, row("leased row deleted", "BlockBlob", leased(now), now))
			},
			change: func(tx leasedb.Tx, now time.Time) error {
				return tx.DeleteBlob(ctx, "a", "c", "leased row deleted")
			}},
		{name: "leased row released", id: id("abc"), blocks: 1,
			before: func(tx leasedb.Tx, now time.Time) error {
				return tx.PutBlob(ctx, row("leased row released", "BlockBlob", leased(now), now))
			},
			change: func(tx leasedb.Tx, now time.Time) error {
				return tx.PutBlob(ctx, row("leased row released", "BlockBlob", leasedb.Lease{State: "available"}, now))
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.before != nil {
				updateNow(t, s, tc.before)
			}
			err := race(tc.name, tc.change, stage(tc.name, tc.id, tc.lease))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Put Block: %v, want it staged", err)
			case tc.want != "" && !svcerr.HasCode(err, tc.want):
				t.Fatalf("Put Block: %v, want %s", err, tc.want)
			}
			if bs := stagedBlocks(t, s, tc.name); len(bs) != tc.blocks {
				t.Fatalf("staged blocks %+v, want %d", bs, tc.blocks)
			}
		})
	}
}
