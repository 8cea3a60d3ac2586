package postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
	"github.com/blobgw/blobgw/leasedb/postgres"
)

// pausingStore runs every Update with a Tx whose Blocks, the first time it
// is called, signals read and waits for proceed after reading the staged
// blocks: the point of the generic Put Block List (the Tx sequence) between
// its read of the staged blocks and their deletion.
type pausingStore struct {
	*postgres.Store
	mu            sync.Mutex
	read, proceed chan struct{}
	writeLocker   bool // keep leasedb.BlobWriteLocker visible
}

func (p *pausingStore) Update(ctx context.Context, fn func(leasedb.Tx) error) error {
	return p.Store.Update(ctx, func(tx leasedb.Tx) error {
		pt := &pausingTx{Tx: tx, p: p}
		if p.writeLocker {
			return fn(pausingLockerTx{pt, tx.(leasedb.BlobWriteLocker)})
		}
		return fn(pt)
	})
}

type pausingTx struct {
	leasedb.Tx
	p *pausingStore
}

func (t *pausingTx) Blocks(ctx context.Context, account, container, blob string) ([]leasedb.Block, error) {
	bs, err := t.Tx.Blocks(ctx, account, container, blob)
	t.p.mu.Lock()
	read := t.p.read
	t.p.read = nil
	t.p.mu.Unlock()
	if read != nil {
		close(read)
		<-t.p.proceed
	}
	return bs, err
}

type pausingLockerTx struct {
	*pausingTx
	leasedb.BlobWriteLocker
}

// TestPutBlockAwaitsPutBlockList holds the generic Put Block List (the Tx
// sequence: on Postgres with versioning or blob soft delete on) between
// its read of the staged blocks and their deletion, and sends a Put Block
// of the same name meanwhile. Were the Put Block to commit in between, the
// deletion would drop its block without queuing its object (read before
// it was staged): an object never collected. The Put Block must wait for
// the name's lock, which Put Block List holds to its commit, and its block
// must then stay staged.
func TestPutBlockAwaitsPutBlockList(t *testing.T) {
	for _, tc := range []struct {
		name        string
		writeLocker bool
		versioning  bool
	}{
		{"tx sequence", false, false},
		{"versioning", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dsn := pgtest.Start(t)
			s := open(t, dsn)
			ps := &pausingStore{Store: s, writeLocker: tc.writeLocker}
			db := &leasedb.DB{Store: ps}
			watcher := pgtest.Connect(t, dsn)
			updateNow(t, s, func(tx leasedb.Tx, now time.Time) error {
				if tc.versioning {
					if err := tx.PutAccountSettings(ctx, "a", leasedb.AccountSettings{Versioning: true}); err != nil {
						return err
					}
				}
				return tx.InsertContainer(ctx, &leasedb.Container{Account: "a", Name: "c", ETag: `"0x1"`, LastModified: now})
			})
			ref := leasedb.BlobRef{Account: "a", Container: "c", Name: "b"}
			stage := func(id, key string) error {
				updateNow(t, s, func(tx leasedb.Tx, now time.Time) error { return tx.AddIntent(ctx, key, now.Add(time.Hour)) })
				return db.StageBlock(ctx, leasedb.StageBlockRequest{Ref: ref, Block: leasedb.Block{ID: id, Key: key, Size: 1}})
			}
			if err := stage("B1", "k1"); err != nil {
				t.Fatal(err)
			}
			if err := stage("B3", "k3"); err != nil {
				t.Fatal(err)
			}
			read := make(chan struct{})
			ps.mu.Lock()
			ps.read, ps.proceed = read, make(chan struct{})
			ps.mu.Unlock()
			committed := make(chan error, 1)
			go func() {
				_, _, err := db.CommitBlocks(ctx, leasedb.CommitBlocksRequest{Ref: ref,
					Blocks: []leasedb.BlockRef{{Kind: leasedb.BlockLatest, ID: "B1"}}})
				committed <- err
			}()
			<-read
			staged := make(chan error, 1)
			updateNow(t, s, func(tx leasedb.Tx, now time.Time) error { return tx.AddIntent(ctx, "k2", now.Add(time.Hour)) })
			go func() {
				staged <- db.StageBlock(ctx, leasedb.StageBlockRequest{Ref: ref, Block: leasedb.Block{ID: "B2", Key: "k2", Size: 1}})
			}()
			if waited, err := awaitLockWait(t, watcher, staged); !waited {
				close(ps.proceed)
				<-committed
				t.Fatalf("Put Block committed while Put Block List held the staged blocks it read: %v", err)
			}
			close(ps.proceed)
			if err := <-committed; err != nil {
				t.Fatal(err)
			}
			if err := <-staged; err != nil {
				t.Fatal(err)
			}
			// B2 stays staged; k3 (staged, not committed) is queued for
			// collection; k1 is the blob's.
			var blocks []leasedb.Block
			var b *leasedb.Blob
			if err := s.View(ctx, func(tx leasedb.Tx) error {
				var err error
				if blocks, err = tx.Blocks(ctx, "a", "c", "b"); err != nil {
					return err
				}
				b, err = tx.Blob(ctx, "a", "c", "b", leasedb.LockNone)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if len(blocks) != 1 || blocks[0].ID != "B2" || blocks[0].Key != "k2" {
				t.Errorf("staged blocks after the commit: %+v, want only B2 (k2)", blocks)
			}
			if b == nil || len(b.Extents) != 1 || b.Extents[0].Key != "k1" {
				t.Errorf("blob after the commit: %+v, want one extent k1", b)
			}
			var queued []string
			rows, err := watcher.Query(ctx, `SELECT key FROM gc_queue WHERE NOT is_intent ORDER BY key`)
			if err != nil {
				t.Fatal(err)
			}
			if queued, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
				t.Fatal(err)
			}
			if len(queued) != 1 || queued[0] != "k3" {
				t.Errorf("queued for collection: %v, want [k3]", queued)
			}
		})
	}
}
