package gateway_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/blobgw/blobgw/backends/s3"
	"github.com/blobgw/blobgw/backends/s3/miniotest"
	"github.com/blobgw/blobgw/gateway"
	"github.com/blobgw/blobgw/gateway/auth"
	"github.com/blobgw/blobgw/internal/config"
	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/dbopen"
)

// TestBackendOutage: a backend that cannot serve is our outage, answered
// 503 ServerBusy (which clients retry), never 500, on Get Blob of a blob
// whose row names an object and on Put Blob: MinIO answering NoSuchBucket
// for the bucket the gateway serves from (what a distributed MinIO node
// says while it has not loaded or healed the bucket after a restart; here
// the bucket is removed behind the gateway's back), and MinIO stopped. An
// object the row names that the backend says is definitely gone (NoSuchKey)
// stays 500 InternalError: a bug of ours, logged loudly.
func TestBackendOutage(t *testing.T) {
	ctx := context.Background()
	srv, err := miniotest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	bucket, err := srv.CreateBucket(ctx, "outage")
	if err != nil {
		t.Fatal(err)
	}
	cfg := srv.Config(bucket)
	cfg.MaxRetries = 1
	be, err := s3.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	store, err := dbopen.Open(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	acct, err := auth.NewAccount(config.DevAccountName, config.DevAccountKey)
	if err != nil {
		t.Fatal(err)
	}
	db := &leasedb.DB{Store: store}
	gw := gateway.New(db, be, auth.MapAccounts{config.DevAccountName: acct}, slog.New(slog.NewTextHandler(io.Discard, nil)), gateway.Options{})
	hs := serveGateway(gw)
	t.Cleanup(hs.Close)
	t.Cleanup(func() { gw.Close(context.Background()) })
	cred, err := azblob.NewSharedKeyCredential(config.DevAccountName, config.DevAccountKey)
	if err != nil {
		t.Fatal(err)
	}
	client, err := azblob.NewClientWithSharedKeyCredential(hs.URL+"/"+config.DevAccountName+"/", cred, &azblob.ClientOptions{
		ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	createContainers(t, client, "cont")
	for _, n := range []string{"kept", "gone"} {
		if _, err := client.UploadBuffer(ctx, "cont", n, []byte("bytes of "+n), nil); err != nil {
			t.Fatal(err)
		}
	}
	// An object the row names, deleted behind the gateway's back: the
	// backend says definitely gone, which is our bug, not an outage.
	var goneKey string
	if err := store.View(ctx, func(tx leasedb.Tx) error {
		b, err := tx.Blob(ctx, config.DevAccountName, "cont", "gone", leasedb.LockNone)
		if err == nil {
			goneKey = b.Extents[0].Key
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := be.Delete(ctx, goneKey); err != nil {
		t.Fatal(err)
	}
	_, err = client.DownloadStream(ctx, "cont", "gone", nil)
	wantErr(t, err, http.StatusInternalServerError, "InternalError")
	if err := gw.Ready(ctx); err != nil {
		t.Fatalf("Ready before the outage: %v", err)
	}

	// The bucket goes; its objects with it. /readyz says so (its probe,
	// a HEAD, gets a bodiless 404 like that of a missing object).
	if err := srv.RemoveBucket(ctx, bucket); err != nil {
		t.Fatal(err)
	}
	if err := gw.Ready(ctx); err == nil {
		t.Error("Ready with the bucket gone: nil, want an error")
	}
	_, err = client.DownloadStream(ctx, "cont", "kept", nil)
	wantErr(t, err, http.StatusServiceUnavailable, "ServerBusy")
	_, err = client.UploadBuffer(ctx, "cont", "new", bytes.Repeat([]byte("x"), 100), nil)
	wantErr(t, err, http.StatusServiceUnavailable, "ServerBusy")

	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	_, err = client.DownloadStream(ctx, "cont", "kept", nil)
	wantErr(t, err, http.StatusServiceUnavailable, "ServerBusy")
	_, err = client.DownloadStream(ctx, "cont", "gone", nil)
	wantErr(t, err, http.StatusServiceUnavailable, "ServerBusy")
	_, err = client.UploadBuffer(ctx, "cont", "new", bytes.Repeat([]byte("x"), 100), nil)
	wantErr(t, err, http.StatusServiceUnavailable, "ServerBusy")
	_, err = client.UploadBuffer(ctx, "cont", "kept", bytes.Repeat([]byte("y"), 100), nil)
	wantErr(t, err, http.StatusServiceUnavailable, "ServerBusy")
}
