package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/google/uuid"
)

// TestLeaseOpConnectionLost: the Postgres connection of a gateway dies in
// the middle of a lease operation (while it waits for the blob row). The
// client gets 503 ServerBusy (retriable, never a 2xx), and the lease is
// exactly as before: the operation either happened whole or not at all.
func TestLeaseOpConnectionLost(t *testing.T) {
	b := setup(t, "postgres")
	ctx := context.Background()
	createContainers(t, b.client, "pgfail")
	if _, err := b.client.UploadBuffer(ctx, "pgfail", "x", []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	idA := uuid.NewString()
	bc := blockClient(b.client, "pgfail", "x")
	if _, err := blobLease(t, bc, idA).AcquireLease(ctx, -1, nil); err != nil {
		t.Fatal(err)
	}

	// Hold the blob row so the gateway's transaction waits inside.
	holder := holdBlobRow(t, b.dsn, "pgfail", "x")

	done := make(chan error, 1)
	go func() {
		_, err := blobLease(t, bc, uuid.NewString()).ChangeLease(ctx, uuid.NewString(), nil)
		done <- err
	}()
	// Wait until the gateway's backend is blocked on our lock, then kill it.
	killLockWaiters(t, b.dsn)
	// Release only after the kill, so the lease op could not have
	// committed in between.
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a lease operation whose connection died reported success")
		}
		if s, c := statusOf(err), codeOf(err); s != 503 || c != "ServerBusy" {
			t.Fatalf("want 503 ServerBusy, got %d %s", s, c)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the client never got an answer")
	}
	// The lease is unchanged: still leased by A, renewable by A.
	p, err := bc.GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if *p.LeaseState != lease.StateTypeLeased {
		t.Fatalf("lease state %v after the failed operation", *p.LeaseState)
	}
	if _, err := blobLease(t, bc, idA).RenewLease(ctx, nil); err != nil {
		t.Fatalf("the holder lost its lease: %v", err)
	}
	// The gateway recovered: its pool opens a new connection.
	if _, err := blobLease(t, bc, idA).BreakLease(ctx, nil); err != nil {
		t.Fatal(err)
	}
}
