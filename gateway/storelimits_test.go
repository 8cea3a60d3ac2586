package gateway_test

import (
	"context"
	"net/http"
	"testing"

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
