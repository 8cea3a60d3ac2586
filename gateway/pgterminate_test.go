package gateway_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/appendblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/pageblob"
)

// TestWriteTerminatedWhileWaiting: the gateway's Postgres backend is
// terminated by an administrator (pg_terminate_backend: FATAL 57P01
// admin_shutdown) while a write's statement waits for the blob row, before
// its COMMIT ran. Every write answers 503 ServerBusy (the database's
// outage, retryable), never 500 nor a 2xx; the blob is as before (the
// row's objects and the staged blocks still readable: nothing a committed
// row references was deleted), nothing leaked, and the same write
// succeeds afterwards on a new connection.
func TestWriteTerminatedWhileWaiting(t *testing.T) {
	b := setup(t, "postgres")
	ctx := context.Background()
	createContainers(t, b.client, "kill")
	old := randBytes(64<<10, 1)
	body := randBytes(96<<10, 2)
	blockID := b64([]byte("blk"))
	cc := b.client.ServiceClient().NewContainerClient("kill")
	putOld := func(name string) func(t *testing.T) {
		return func(t *testing.T) {
			if _, err := b.client.UploadBuffer(ctx, "kill", name, old, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	writes := []struct {
		name   string
		create func(t *testing.T) // the blob before
		write  func() error
		after  func(t *testing.T) // the write's effect, once it succeeded
	}{
		{name: "Put Blob",
			create: putOld("Put Blob"),
			write:  func() error { _, err := b.client.UploadBuffer(ctx, "kill", "Put Blob", body, nil); return err },
			after:  func(t *testing.T) { wantContent(t, download(t, b.client, "kill", "Put Blob"), body) }},
		{name: "Put Block",
			create: putOld("Put Block"),
			write: func() error {
				_, err := cc.NewBlockBlobClient("Put Block").StageBlock(ctx, blockID, streamOf(body), nil)
				return err
			},
			after: func(t *testing.T) {
				bb := cc.NewBlockBlobClient("Put Block")
				if _, err := bb.CommitBlockList(ctx, []string{blockID}, nil); err != nil {
					t.Fatal(err)
				}
				wantContent(t, download(t, b.client, "kill", "Put Block"), body)
			}},
		{name: "Put Block List",
			create: func(t *testing.T) {
				putOld("Put Block List")(t)
				if _, err := cc.NewBlockBlobClient("Put Block List").StageBlock(ctx, blockID, streamOf(body), nil); err != nil {
					t.Fatal(err)
				}
			},
			write: func() error {
				_, err := cc.NewBlockBlobClient("Put Block List").CommitBlockList(ctx, []string{blockID}, nil)
				return err
			},
			after: func(t *testing.T) { wantContent(t, download(t, b.client, "kill", "Put Block List"), body) }},
		{name: "Append Block",
			create: func(t *testing.T) {
				ab := cc.NewAppendBlobClient("Append Block")
				if _, err := ab.Create(ctx, nil); err != nil {
					t.Fatal(err)
				}
				if _, err := ab.AppendBlock(ctx, streamOf(old), nil); err != nil {
					t.Fatal(err)
				}
			},
			write: func() error {
				_, err := cc.NewAppendBlobClient("Append Block").AppendBlock(ctx, streamOf(body), &appendblob.AppendBlockOptions{})
				return err
			},
			after: func(t *testing.T) {
				wantContent(t, download(t, b.client, "kill", "Append Block"), append(append([]byte(nil), old...), body...))
			}},
		{name: "Put Page",
			create: func(t *testing.T) {
				pb := cc.NewPageBlobClient("Put Page")
				if _, err := pb.Create(ctx, int64(len(body)), nil); err != nil {
					t.Fatal(err)
				}
				if _, err := pb.UploadPages(ctx, streamOf(old), blob.HTTPRange{Offset: 0, Count: int64(len(old))}, nil); err != nil {
					t.Fatal(err)
				}
			},
			write: func() error {
				_, err := cc.NewPageBlobClient("Put Page").UploadPages(ctx, streamOf(body), blob.HTTPRange{Offset: 0, Count: int64(len(body))}, &pageblob.UploadPagesOptions{})
				return err
			},
			after: func(t *testing.T) { wantContent(t, download(t, b.client, "kill", "Put Page"), body) }},
		{name: "Set Blob Metadata",
			create: putOld("Set Blob Metadata"),
			write: func() error {
				_, err := cc.NewBlobClient("Set Blob Metadata").SetMetadata(ctx, map[string]*string{"k": to.Ptr("v")}, nil)
				return err
			},
			after: func(t *testing.T) {
				p, err := cc.NewBlobClient("Set Blob Metadata").GetProperties(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				if len(p.Metadata) != 1 {
					t.Errorf("metadata %v after Set Blob Metadata", p.Metadata)
				}
			}},
		{name: "Delete Blob",
			create: putOld("Delete Blob"),
			write:  func() error { _, err := b.client.DeleteBlob(ctx, "kill", "Delete Blob", nil); return err },
			after: func(t *testing.T) {
				if _, err := cc.NewBlobClient("Delete Blob").GetProperties(ctx, nil); statusOf(err) != 404 {
					t.Errorf("Get Blob Properties after Delete Blob: %v, want 404", err)
				}
			}},
	}
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			w.create(t)
			before := b.client.ServiceClient().NewContainerClient("kill").NewBlobClient(w.name)
			props, err := before.GetProperties(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			holder := holdBlobRow(t, b.dsn, "kill", w.name)
			done := make(chan error, 1)
			go func() { done <- w.write() }()
			killLockWaiters(t, b.dsn)
			// Released only after the kill: the write cannot have
			// committed in between.
			if err := holder.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if s, c := statusOf(err), codeOf(err); err == nil || s != 503 || c != "ServerBusy" {
					t.Fatalf("want 503 ServerBusy, got %d %s (%v)", s, c, err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the client never got an answer")
			}
			now, err := before.GetProperties(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if *now.ETag != *props.ETag {
				t.Fatalf("ETag %s after the terminated write, was %s", *now.ETag, *props.ETag)
			}
			if w.name != "Put Page" && w.name != "Append Block" {
				wantContent(t, download(t, b.client, "kill", w.name), old)
			}
			if w.name == "Put Block" || w.name == "Put Block List" {
				bl, err := cc.NewBlockBlobClient(w.name).GetBlockList(ctx, blockblob.BlockListTypeUncommitted, nil)
				if err != nil {
					t.Fatal(err)
				}
				want := 0
				if w.name == "Put Block List" {
					want = 1
				}
				if len(bl.UncommittedBlocks) != want {
					t.Fatalf("%d uncommitted blocks after the terminated write, want %d", len(bl.UncommittedBlocks), want)
				}
			}
			b.collectNoLeak(t)
			if err := w.write(); err != nil {
				t.Fatalf("the write again, on a new connection: %v", err)
			}
			w.after(t)
			b.collectNoLeak(t)
		})
	}
}

func wantContent(t *testing.T, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, not the %d expected", len(got), len(want))
	}
}
