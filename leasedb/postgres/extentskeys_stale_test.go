package postgres_test

import (
	"context"
	"encoding/base64"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
)

// TestStaleExtentsKeysFreesNothingReferenced: a gateway older than
// migration 0018, still serving after it was applied (a rolling upgrade),
// writes blob rows with the upsert of its time, which sets the extents and
// leaves extents_keys as it was. A row a newer gateway wrote without keys
// (a small inline blob: false) then has keys under extents_keys false.
// LockForReplace takes that false for "no keys" and reads neither the
// name's snapshots nor the shares of its keys, yet Put Block List reads
// the extents whole and frees the keys it drops: a key a snapshot still
// references must not be queued for collection (the collector would
// delete bytes a committed row points at), and one a copy shares must not
// fail the commit for ever.
func TestStaleExtentsKeysFreesNothingReferenced(t *testing.T) {
	ctx := context.Background()
	dsn, s, db := containerStore(t)
	conn := pgtest.Connect(t, dsn)
	ref := func(name string) leasedb.BlobRef { return leasedb.BlobRef{Account: "a", Container: "c", Name: name} }
	id := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	// older writes a committed block list of one block (key) to name as
	// a pre-0018 gateway's upsert does: extents_keys is left alone.
	older := func(name, key string) {
		t.Helper()
		ext := `[{"k":"` + key + `","n":3,"id":"` + id("old") + `"}]`
		tag, err := conn.Exec(ctx, `UPDATE blobs SET extents = $1, size = 3, block_count = 1
			WHERE account = 'a' AND container = 'c' AND name = $2`, ext, name)
		if err != nil || tag.RowsAffected() != 1 {
			t.Fatalf("the older gateway's write of %s: %v, %v", name, tag, err)
		}
	}
	// inline is a newer gateway's Put Blob of a small blob kept in the row:
	// extents_keys false.
	inline := func(name string) {
		t.Helper()
		if _, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: ref(name), Type: "BlockBlob",
			Extents: []leasedb.Extent{{Size: 4, Data: []byte("data")}}}); err != nil {
			t.Fatal(err)
		}
		var keys *bool
		if err := conn.QueryRow(ctx, `SELECT extents_keys FROM blobs WHERE account = 'a' AND container = 'c' AND name = $1`,
			name).Scan(&keys); err != nil || keys == nil || *keys {
			t.Fatalf("extents_keys of the inline blob %s: %v, %v; want false", name, keys, err)
		}
	}
	// replace commits a Put Block List of one new block over name.
	replace := func(name string) error {
		key := name + "-new"
		updateNow(t, s, func(tx leasedb.Tx, now time.Time) error { return tx.AddIntent(ctx, key, now.Add(time.Hour)) })
		if err := db.StageBlock(ctx, leasedb.StageBlockRequest{Ref: ref(name), Block: leasedb.Block{ID: id("new"), Key: key, Size: 1}}); err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_, _, err := db.CommitBlocks(cctx, leasedb.CommitBlocksRequest{Ref: ref(name),
			Blocks: []leasedb.BlockRef{{Kind: leasedb.BlockLatest, ID: id("new")}}})
		return err
	}
	queued := func() []string {
		t.Helper()
		rows, err := conn.Query(ctx, `SELECT key FROM gc_queue WHERE NOT is_intent ORDER BY key`)
		if err != nil {
			t.Fatal(err)
		}
		keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return keys
	}

	t.Run("a snapshot keeps its key", func(t *testing.T) {
		inline("snapped")
		older("snapped", "snapped-old")
		if _, err := db.CreateSnapshot(ctx, ref("snapped"), "", leasedb.Conditions{}, nil); err != nil {
			t.Fatal(err)
		}
		if err := replace("snapped"); err != nil {
			t.Fatal(err)
		}
		if q := queued(); slices.Contains(q, "snapped-old") {
			t.Fatalf("queued for collection %v: snapped-old, which the snapshot references", q)
		}
	})
	t.Run("a copy keeps its key", func(t *testing.T) {
		inline("shared")
		older("shared", "shared-old")
		if _, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: ref("shared-copy"), Type: "BlockBlob",
			Extents: []leasedb.Extent{{Key: "shared-old", Size: 3, BlockID: id("old")}},
			Copy:    leasedb.CopyTarget{SharedExtents: true, Source: ref("shared")}}); err != nil {
			t.Fatal(err)
		}
		if err := replace("shared"); err != nil {
			t.Fatalf("Put Block List over a blob whose key a copy shares: %v", err)
		}
		if q := queued(); slices.Contains(q, "shared-old") {
			t.Fatalf("queued for collection %v: shared-old, which the copy references", q)
		}
	})
	t.Run("an unreferenced key is freed", func(t *testing.T) {
		inline("alone")
		older("alone", "alone-old")
		if err := replace("alone"); err != nil {
			t.Fatal(err)
		}
		if q := queued(); !slices.Contains(q, "alone-old") {
			t.Fatalf("queued for collection %v, want alone-old (nothing references it)", q)
		}
	})
}
