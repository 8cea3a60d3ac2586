package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/blobgw/blobgw/gateway"
)

// Uncommitted blocks of a blob with no Put Block for block_expiry (2 s
// here) are discarded by a collection pass and their objects collected; a
// blob with a recent Put Block keeps its blocks; a committed blob keeps its
// committed blocks (only its stale uncommitted one goes).
func TestBlockExpiry(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		const expiry = 2 * time.Second
		b := setup(t, kind, setupOpts{options: gateway.Options{BlockExpiry: expiry}})
		createContainers(t, b.client, "exp")
		stage := func(bc *blockblob.Client, n int, data string) {
			t.Helper()
			if _, err := bc.StageBlock(ctx, blockID(n), nopSeeker(data), nil); err != nil {
				t.Fatal(err)
			}
		}
		stale := blockClient(b.client, "exp", "stale")
		stage(stale, 1, "one")
		stage(stale, 2, "two")
		done := blockClient(b.client, "exp", "done")
		stage(done, 1, "committed")
		if _, err := done.CommitBlockList(ctx, []string{blockID(1)}, nil); err != nil {
			t.Fatal(err)
		}
		stage(done, 2, "left over")
		time.Sleep(expiry + 500*time.Millisecond)
		fresh := blockClient(b.client, "exp", "fresh")
		stage(fresh, 1, "fresh")
		b.wantObjects(t, 5, "before the pass")

		b.collectAll(t)

		_, err := stale.GetBlockList(ctx, blockblob.BlockListTypeUncommitted, nil)
		wantErr(t, err, 404, "BlobNotFound") // nothing committed, nothing staged
		bl, err := done.GetBlockList(ctx, blockblob.BlockListTypeAll, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(bl.CommittedBlocks) != 1 || *bl.CommittedBlocks[0].Name != blockID(1) || len(bl.UncommittedBlocks) != 0 {
			t.Fatalf("done: %d committed, %d uncommitted; want 1, 0", len(bl.CommittedBlocks), len(bl.UncommittedBlocks))
		}
		if got := download(t, b.client, "exp", "done"); string(got) != "committed" {
			t.Fatalf("done reads %q", got)
		}
		bl, err = fresh.GetBlockList(ctx, blockblob.BlockListTypeUncommitted, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(bl.UncommittedBlocks) != 1 {
			t.Fatalf("fresh: %d uncommitted blocks, want 1", len(bl.UncommittedBlocks))
		}
		// The committed block and the fresh one are all that is stored.
		b.wantObjects(t, 2, "after the pass")
		// The fresh block still commits.
		if _, err := fresh.CommitBlockList(ctx, []string{blockID(1)}, nil); err != nil {
			t.Fatal(err)
		}
		b.checkNoLeak(t)
	})
}
