package gateway_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/appendblob"
	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
	"github.com/blobgw/blobgw/svcerr"
	"github.com/jackc/pgx/v5"
)

// setupProxied is setup on Postgres with the gateway's store connected
// through a pgtest.Proxy, so a test can cut its connection at a COMMIT.
func setupProxied(t *testing.T, kind string) (*bundle, *pgtest.Proxy) {
	t.Helper()
	var proxy *pgtest.Proxy
	b := setup(t, kind, setupOpts{storeDSN: func(dsn string) string {
		proxy = pgtest.StartProxy(t, dsn)
		return proxy.DSN(dsn)
	}})
	return b, proxy
}

// commitOfStagedBytes matches the COMMIT of a transaction that takes an
// upload intent: the commit of a Put Blob (its one write statement takes
// the intents of an array), Put Block (its one write statement takes the
// block's intent) or Append Block (never the key pool's intent batches or
// a read).
func commitOfStagedBytes(q pgtest.Query) bool {
	return q.IsCommit() && (q.InTx("DELETE FROM gc_queue WHERE key = $1 AND is_intent") ||
		q.InTx("DELETE FROM gc_queue WHERE key = ANY($30::text[]) AND is_intent") ||
		q.InTx("DELETE FROM gc_queue WHERE key = $5::text AND is_intent"))
}

// TestUncertainCommitKeepsBytes: the gateway's connection to Postgres is
// cut right after a COMMIT reached the server and was carried out (the
// answer never arrives), or right as it is sent (the server never sees
// it). Either way the client gets 503 ServerBusy, and afterwards the blob
// reads back whole: the new content when the commit happened, the old one
// when it did not; never a row whose bytes were deleted. Put Blob, Put
// Block followed by Put Block List, and Append Block.
func TestUncertainCommitKeepsBytes(t *testing.T) {
	forKinds(t, []string{"postgres+disk", "postgres+s3"}, func(t *testing.T, kind string) {
		b, proxy := setupProxied(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "cut")
		arm := func(c pgtest.Cut) func() {
			before := proxy.Cuts()
			proxy.SetCut(pgtest.CutOnce(commitOfStagedBytes, c))
			return func() {
				t.Helper()
				proxy.SetCut(nil)
				if got := proxy.Cuts() - before; got != 1 {
					t.Fatalf("the proxy cut %d commits, want 1", got)
				}
			}
		}
		for _, c := range commitCuts {
			t.Run(c.name, func(t *testing.T) {
				oldData, newData := randBytes(300<<10, 1), randBytes(200<<10, 2)
				want := func() []byte {
					if c.committed {
						return newData
					}
					return oldData
				}

				// Put Blob over an existing blob.
				name := "put-" + c.name
				if _, err := b.client.UploadBuffer(ctx, "cut", name, oldData, nil); err != nil {
					t.Fatal(err)
				}
				done := arm(c.cut)
				_, err := blockClient(b.client, "cut", name).Upload(ctx, streamOf(newData), nil)
				done()
				wantErr(t, err, http.StatusServiceUnavailable, string(svcerr.ServerBusy))
				if got := download(t, b.client, "cut", name); !bytes.Equal(got, want()) {
					t.Fatalf("Put Blob: read back %d bytes, want the %s content (%d bytes)", len(got), map[bool]string{true: "new", false: "old"}[c.committed], len(want()))
				}

				// Put Block, then Put Block List naming the block.
				name = "blocks-" + c.name
				bc := blockClient(b.client, "cut", name)
				idOld, idNew := blockID(1), blockID(2)
				if _, err := bc.StageBlock(ctx, idOld, streamOf(oldData), nil); err != nil {
					t.Fatal(err)
				}
				done = arm(c.cut)
				_, err = bc.StageBlock(ctx, idNew, streamOf(newData), nil)
				done()
				wantErr(t, err, http.StatusServiceUnavailable, string(svcerr.ServerBusy))
				if c.committed {
					if _, err := bc.CommitBlockList(ctx, []string{idOld, idNew}, nil); err != nil {
						t.Fatalf("Put Block List over a block whose commit was cut after COMMIT: %v", err)
					}
					if got := download(t, b.client, "cut", name); !bytes.Equal(got, append(append([]byte(nil), oldData...), newData...)) {
						t.Fatalf("Put Block List: read back %d bytes, want both blocks whole", len(got))
					}
				} else {
					_, err := bc.CommitBlockList(ctx, []string{idOld, idNew}, nil)
					wantErr(t, err, http.StatusBadRequest, "InvalidBlockList")
				}

				// Append Block.
				name = "append-" + c.name
				ac := appendClient(b.client, "cut", name)
				if _, err := ac.Create(ctx, nil); err != nil {
					t.Fatal(err)
				}
				if _, err := ac.AppendBlock(ctx, streamOf(oldData), nil); err != nil {
					t.Fatal(err)
				}
				done = arm(c.cut)
				_, err = ac.AppendBlock(ctx, streamOf(newData), nil)
				done()
				wantErr(t, err, http.StatusServiceUnavailable, string(svcerr.ServerBusy))
				wantAppended := oldData
				if c.committed {
					wantAppended = append(append([]byte(nil), oldData...), newData...)
				}
				if got := download(t, b.client, "cut", name); !bytes.Equal(got, wantAppended) {
					t.Fatalf("Append Block: read back %d bytes, want %d", len(got), len(wantAppended))
				}
				// The blob goes on growing at the position it has.
				_, err = ac.AppendBlock(ctx, streamOf([]byte("tail")), &appendblob.AppendBlockOptions{
					AppendPositionAccessConditions: &appendblob.AppendPositionAccessConditions{AppendPosition: to.Ptr(int64(len(wantAppended)))}})
				if err != nil {
					t.Fatal(err)
				}

				// Whatever the collector does now, the blobs stay whole.
				b.collectNoLeak(t)
				if got := download(t, b.client, "cut", "put-"+c.name); !bytes.Equal(got, want()) {
					t.Fatalf("after collection: Put Blob content changed (%d bytes)", len(got))
				}
			})
		}
	})
}

// TestClientGoneDuringCommit: a client that disconnects while its Put
// Blob's commit waits for the row lock does not abort the commit (commits
// run detached from the request): once the lock is free the blob holds
// the new content, whole.
func TestClientGoneDuringCommit(t *testing.T) {
	b := setup(t, "postgres")
	ctx := context.Background()
	createContainers(t, b.client, "gone")
	oldData, newData := randBytes(64<<10, 3), randBytes(96<<10, 4)
	if _, err := b.client.UploadBuffer(ctx, "gone", "x", oldData, nil); err != nil {
		t.Fatal(err)
	}
	holder := holdBlobRow(t, b.dsn, "gone", "x")

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := blockClient(b.client, "gone", "x").Upload(cctx, streamOf(newData), nil)
		done <- err
	}()
	waitForLockWait(t, b.dsn)
	cancel() // the client goes away while the commit waits
	if err := <-done; err == nil {
		t.Fatal("a canceled upload reported success")
	}
	// Give the server time to see the connection close (it cancels the
	// request context then), and only then let the commit go on.
	time.Sleep(300 * time.Millisecond)
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		got := download(t, b.client, "gone", "x")
		if bytes.Equal(got, newData) {
			break
		}
		if !bytes.Equal(got, oldData) {
			t.Fatalf("read %d bytes that are neither the old nor the new content", len(got))
		}
		if time.Now().After(deadline) {
			t.Fatal("the commit of a client that went away was aborted: the blob still holds the old content")
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.collectNoLeak(t)
}

// holdBlobRow locks a blob row (FOR UPDATE) in a transaction of its own
// connection, so a gateway transaction that needs the row waits inside;
// roll the transaction back to let it go on. The connection is closed when
// t ends.
func holdBlobRow(t *testing.T, dsn, container, name string) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	tx, err := pgtest.Connect(t, dsn).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM blobs WHERE container = $1 AND name = $2 FOR UPDATE`, container, name); err != nil {
		t.Fatal(err)
	}
	return tx
}

// waitForLockWait waits until some session of the database waits on a
// lock (the gateway's commit behind a test's row lock).
func waitForLockWait(t *testing.T, dsn string) {
	t.Helper()
	onLockWaiters(t, dsn, "count(*)")
}

// killLockWaiters waits until some session of the database waits on a
// lock and terminates it (the gateway's connection dying mid-transaction).
func killLockWaiters(t *testing.T, dsn string) {
	t.Helper()
	onLockWaiters(t, dsn, "count(pg_terminate_backend(pid))")
}

// onLockWaiters evaluates agg, a count over the other sessions of the
// database that wait on a lock, until it is above zero (for 10 s at most).
func onLockWaiters(t *testing.T, dsn, agg string) {
	t.Helper()
	ctx := context.Background()
	conn := pgtest.Connect(t, dsn)
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		if err := conn.QueryRow(ctx, `SELECT `+agg+` FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the gateway never waited on the row lock")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReadMissingExtent: a blob row whose first backend object is gone
// (which no gateway path may produce; an operator deleting objects by
// hand can) answers 500 InternalError with an error body, not a cut
// connection.
func TestReadMissingExtent(t *testing.T) {
	forKinds(t, []string{"sqlite+disk", "sqlite+s3"}, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "lost")
		if _, err := b.client.UploadBuffer(ctx, "lost", "x", randBytes(10_000, 5), nil); err != nil {
			t.Fatal(err)
		}
		row, _, err := b.db.GetBlob(ctx, leasedb.BlobRef{Account: "devstoreaccount1", Container: "lost", Name: "x"}, "", leasedb.Conditions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(row.Extents) != 1 {
			t.Fatalf("%d extents", len(row.Extents))
		}
		if err := b.backend.Delete(ctx, row.Extents[0].Key); err != nil {
			t.Fatal(err)
		}
		_, err = b.client.DownloadStream(ctx, "lost", "x", nil)
		wantErr(t, err, http.StatusInternalServerError, string(svcerr.InternalError))
		// A range read too.
		_, err = b.client.DownloadStream(ctx, "lost", "x", &azblob.DownloadStreamOptions{Range: azblob.HTTPRange{Offset: 10, Count: 100}})
		wantErr(t, err, http.StatusInternalServerError, string(svcerr.InternalError))
	})
}

// streamOf is data as the SDK's upload body.
func streamOf(data []byte) io.ReadSeekCloser { return streaming.NopCloser(bytes.NewReader(data)) }
