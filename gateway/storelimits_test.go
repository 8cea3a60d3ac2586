package gateway_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/blobgw/blobgw/gateway"
	"github.com/blobgw/blobgw/leasedb/pgtest"
	"github.com/blobgw/blobgw/svcerr"
)

// TestStoreLockTimeoutIsBusy: a Put Blob whose commit waits for a lock
// another session holds until the server's lock_timeout (set in the
// store's DSN) cuts it is answered 503 ServerBusy, which clients retry,
// not 500; nothing committed, and the blob is written once the lock is
// gone.
func TestStoreLockTimeoutIsBusy(t *testing.T) {
	b := setup(t, "postgres", setupOpts{storeDSN: func(dsn string) string { return dsn + "&lock_timeout=200" }})
	ctx := context.Background()
	createContainers(t, b.client, "locked")
	holder := pgtest.Connect(t, b.dsn)
	if _, err := holder.Exec(ctx, `BEGIN; LOCK TABLE blobs IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	_, err := b.client.UploadBuffer(ctx, "locked", "b", []byte("held"), nil)
	if _, rerr := holder.Exec(ctx, `ROLLBACK`); rerr != nil {
		t.Fatal(rerr)
	}
	wantErr(t, err, http.StatusServiceUnavailable, string(svcerr.ServerBusy))
	if _, err := b.client.UploadBuffer(ctx, "locked", "b", []byte("free"), nil); err != nil {
		t.Fatal(err)
	}
	if got := download(t, b.client, "locked", "b"); string(got) != "free" {
		t.Fatalf("read back %q, want %q", got, "free")
	}
	b.collectNoLeak(t)
}

// TestCommitDeadlineIsBusy: a Put Block whose commit still waits for a
// lock another session holds when the gateway's commit timeout ends is
// answered 503 ServerBusy, which clients retry, not 500 InternalError:
// the store was too slow, the request did nothing wrong. The deadline
// ends statements before COMMIT only, so nothing committed: no block is
// staged, the staged object is deleted (nothing leaks), and the same
// Put Block succeeds once the lock is gone.
func TestCommitDeadlineIsBusy(t *testing.T) {
	b := setup(t, "postgres")
	ctx := context.Background()
	createContainers(t, b.client, "locked")
	gateway.SetCommitTimeout(t, 500*time.Millisecond)
	holder := pgtest.Connect(t, b.dsn)
	if _, err := holder.Exec(ctx, `BEGIN; LOCK TABLE blobs IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	bb := blockClient(b.client, "locked", "b")
	id := b64([]byte("blk"))
	_, err := bb.StageBlock(ctx, id, nopSeeker("held"), nil)
	if _, rerr := holder.Exec(ctx, `ROLLBACK`); rerr != nil {
		t.Fatal(rerr)
	}
	wantErr(t, err, http.StatusServiceUnavailable, string(svcerr.ServerBusy))
	bl, err := bb.GetBlockList(ctx, blockblob.BlockListTypeUncommitted, nil)
	if err == nil && len(bl.UncommittedBlocks) != 0 {
		t.Errorf("%d blocks staged by the Put Block cut at its deadline", len(bl.UncommittedBlocks))
	}
	b.collectNoLeak(t)
	if _, err := bb.StageBlock(ctx, id, nopSeeker("free"), nil); err != nil {
		t.Fatal(err)
	}
	b.collectNoLeak(t)
}
