package gateway_test

import (
	"bytes"
	"context"
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"

	"github.com/blobgw/blobgw/gateway"
	"github.com/blobgw/blobgw/leasedb/pgtest"
	"github.com/blobgw/blobgw/svcerr"
)

// TestUncertainOneTripCommit: a small inline Put Blob with If-Match on
// Postgres sends BEGIN, its write and COMMIT in one round trip
// (leasedb/postgres onetrip.go). When the connection is cut right after
// that COMMIT was carried out (the answer never arrives) or right as it
// is sent, the client gets 503 ServerBusy, never a success it did not
// have nor a refusal of one it did: afterwards the blob reads back new
// when the commit happened and old when it did not.
func TestUncertainOneTripCommit(t *testing.T) {
	forKinds(t, []string{"postgres+disk"}, func(t *testing.T, kind string) {
		var proxy *pgtest.Proxy
		b := setup(t, kind, setupOpts{storeDSN: func(dsn string) string {
			proxy = pgtest.StartProxy(t, dsn)
			return proxy.DSN(dsn)
		}, options: gateway.Options{InlineMaxBytes: 16 << 10}})
		ctx := context.Background()
		createContainers(t, b.client, "cut")
		oldData, newData := bytes.Repeat([]byte("old."), 1024), bytes.Repeat([]byte("new."), 1024)
		for _, c := range commitCuts {
			t.Run(c.name, func(t *testing.T) {
				name := "one-" + c.name
				up, err := b.client.UploadBuffer(ctx, "cut", name, oldData, nil)
				if err != nil {
					t.Fatal(err)
				}
				before := proxy.Cuts()
				proxy.SetCut(pgtest.CutOnce(func(q pgtest.Query) bool { return q.IsCommit() && q.InTx("blobgw.onetrip") }, c.cut))
				_, err = b.client.UploadBuffer(ctx, "cut", name, newData, &azblob.UploadBufferOptions{AccessConditions: &blob.AccessConditions{
					ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: up.ETag}}})
				proxy.SetCut(nil)
				if got := proxy.Cuts() - before; got != 1 {
					t.Fatalf("the proxy cut %d commits, want 1", got)
				}
				wantErr(t, err, http.StatusServiceUnavailable, string(svcerr.ServerBusy))
				want := oldData
				if c.committed {
					want = newData
				}
				if got := download(t, b.client, "cut", name); !bytes.Equal(got, want) {
					t.Fatalf("read back %.8q..., want the %s content", got, map[bool]string{true: "new", false: "old"}[c.committed])
				}
			})
		}
	})
}
