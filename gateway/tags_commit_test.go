package gateway_test

import (
	"bytes"
	"context"
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"

	"github.com/blobgw/blobgw/leasedb/pgtest"
	"github.com/blobgw/blobgw/svcerr"
)

// TestUncertainTagsTierCommit: Set Blob Tags' and Set Blob Tier's UPDATE
// and COMMIT travel in one round trip on Postgres; when the connection is
// cut right after that COMMIT was carried out (the answer never arrives)
// or right as it is sent, the client gets 503 ServerBusy: afterwards the
// blob has the new tags or tier when the commit happened and the old ones
// when it did not, its ETag is unchanged, and its bytes read back whole.
func TestUncertainTagsTierCommit(t *testing.T) {
	forKinds(t, []string{"postgres+disk"}, func(t *testing.T, kind string) {
		b, proxy := setupProxied(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "cut")
		data := bytes.Repeat([]byte("tags"), 1000)
		for _, op := range []struct {
			name, update string
			write        func(bc *blob.Client) error
			written      func(p blob.GetPropertiesResponse, tags map[string]string) bool
		}{
			{"tags", "UPDATE blobs SET tags", func(bc *blob.Client) error {
				_, err := bc.SetTags(ctx, map[string]string{"k": "new"}, nil)
				return err
			}, func(_ blob.GetPropertiesResponse, tags map[string]string) bool { return tags["k"] == "new" }},
			{"tier", "UPDATE blobs SET access_tier", func(bc *blob.Client) error {
				_, err := bc.SetTier(ctx, blob.AccessTierCool, nil)
				return err
			}, func(p blob.GetPropertiesResponse, _ map[string]string) bool {
				return p.AccessTier != nil && *p.AccessTier == string(blob.AccessTierCool)
			}},
		} {
			for _, c := range commitCuts {
				t.Run(op.name+"/"+c.name, func(t *testing.T) {
					name := op.name + "-" + c.name
					up, err := b.client.UploadBuffer(ctx, "cut", name, data, nil)
					if err != nil {
						t.Fatal(err)
					}
					bc := blockClient(b.client, "cut", name).BlobClient()
					if _, err := bc.SetTags(ctx, map[string]string{"k": "old"}, nil); err != nil {
						t.Fatal(err)
					}
					before := proxy.Cuts()
					proxy.SetCut(pgtest.CutOnce(func(q pgtest.Query) bool {
						return q.IsCommit() && q.InTx(op.update)
					}, c.cut))
					err = op.write(bc)
					proxy.SetCut(nil)
					if got := proxy.Cuts() - before; got != 1 {
						t.Fatalf("the proxy cut %d commits, want 1", got)
					}
					wantErr(t, err, http.StatusServiceUnavailable, string(svcerr.ServerBusy))
					props, err := bc.GetProperties(ctx, nil)
					if err != nil {
						t.Fatal(err)
					}
					tr, err := bc.GetTags(ctx, nil)
					if err != nil {
						t.Fatal(err)
					}
					tags := map[string]string{}
					for _, tg := range tr.BlobTagSet {
						tags[*tg.Key] = *tg.Value
					}
					if got := op.written(props, tags); got != c.committed {
						t.Fatalf("after the cut: written %t (tier %v, tags %v), want %t", got, props.AccessTier, tags, c.committed)
					}
					if props.ETag == nil || up.ETag == nil || *props.ETag != *up.ETag {
						t.Fatalf("ETag %v after the cut, was %v", props.ETag, up.ETag)
					}
					if got := download(t, b.client, "cut", name); !bytes.Equal(got, data) {
						t.Fatalf("read back %d bytes, want %d", len(got), len(data))
					}
				})
			}
		}
	})
}
