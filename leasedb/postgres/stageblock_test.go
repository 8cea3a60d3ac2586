package postgres_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
	"github.com/blobgw/blobgw/leasedb/postgres"
)

// lockForStage runs LockForStage on a/c/name in a transaction it rolls
// back.
func lockForStage(t *testing.T, s *postgres.Store, name string) leasedb.StageTarget {
	t.Helper()
	var st leasedb.StageTarget
	errDone := errors.New("done")
	err := s.Update(context.Background(), func(tx leasedb.Tx) error {
		var err error
		if st, err = tx.(leasedb.BlockStager).LockForStage(context.Background(), leasedb.BlobRef{Account: "a", Container: "c", Name: name}); err != nil {
			return err
		}
		return errDone
	})
	if !errors.Is(err, errDone) {
		t.Fatal(err)
	}
	return st
}

// TestLockForStageFirstBlockID: LockForStage reads the length of the
// block id of the row's first extent from the start of its extents text,
// or, where that does not show it (a key of over a kilobyte, a key that
// JSON escapes, inline bytes first), by parsing the text; whatever the
// row's extents_keys (NULL for a row written before migration 0018), the
// answer is the extent's. Its type and lease are the row's.
func TestLockForStageFirstBlockID(t *testing.T) {
	ctx := context.Background()
	dsn, s, _ := containerStore(t)
	long := strings.Repeat("k", 1500)
	rows := map[string][]leasedb.Extent{
		"block":        {{Key: "k/1", Size: 3, BlockID: "YWJjZA=="}, {Key: "k/2", Size: 3, BlockID: "ZWZnaA=="}},
		"block at":     {{Key: "k/1", Size: 3, BlockID: "YWJj", At: 7, Off: 2}},
		"keyed":        {{Key: "k/1", Size: 3}, {Key: "k/2", Size: 3, BlockID: "YWJj"}},
		"keyed at":     {{Key: "k/1", Size: 3, At: 5, Off: 1}},
		"long key":     {{Key: long, Size: 3, BlockID: "YWJjZGVm"}},
		"escaped key":  {{Key: `k/"quoted"\<&>`, Size: 3, BlockID: "YWJjZGVmZ2g="}},
		"inline first": {{Size: 4, Data: []byte("abcd")}, {Key: "k/3", Size: 3, BlockID: "YWJj"}},
		"no extents":   nil,
	}
	lease := leasedb.Lease{ID: "11111111-2222-3333-4444-555555555555", State: "leased", Duration: 15,
		Expires: time.Date(2030, 1, 2, 3, 4, 5, 6000, time.UTC), Since: time.Date(2029, 1, 2, 3, 4, 5, 0, time.UTC)}
	updateNow(t, s, func(tx leasedb.Tx, now time.Time) error {
		for name, x := range rows {
			b := &leasedb.Blob{Account: "a", Container: "c", Name: name, Type: "BlockBlob", ETag: `"0x1"`, Created: now, LastModified: now,
				Extents: x, BlockCount: len(x), Lease: lease}
			if err := tx.PutBlob(ctx, b); err != nil {
				return err
			}
		}
		return nil
	})
	conn := pgtest.Connect(t, dsn)
	for _, unknown := range []bool{false, true} {
		if unknown {
			if _, err := conn.Exec(ctx, `UPDATE blobs SET extents_keys = NULL`); err != nil {
				t.Fatal(err)
			}
		}
		for name, x := range rows {
			what := fmt.Sprintf("%s, extents_keys unknown %v", name, unknown)
			st := lockForStage(t, s, name)
			want := 0
			if len(x) > 0 {
				want = len(x[0].BlockID)
			}
			if !st.Exists || !st.ContainerExists || st.Type != "BlockBlob" || st.FirstBlockIDLen != want {
				t.Errorf("%s: %+v; want a block blob whose first block id is %d long", what, st, want)
			}
			if st.Lease != lease {
				t.Errorf("%s: lease %+v, want %+v", what, st.Lease, lease)
			}
			if st.Now.IsZero() {
				t.Errorf("%s: no clock", what)
			}
		}
	}
	if st := lockForStage(t, s, "absent"); st.Exists || !st.ContainerExists || st.FirstBlockIDLen != 0 || st.Type != "" || st.Lease != (leasedb.Lease{}) {
		t.Errorf("absent: %+v", st)
	}
}

// TestLockForStageLeavesInlineTextUnread: LockForStage over a small
// blob (its bytes inline, in the extents text, stored out of line) reads
// nothing of the TOAST table: a block id can only be in a row whose
// extents name an object (extents_keys).
func TestLockForStageLeavesInlineTextUnread(t *testing.T) {
	ctx := context.Background()
	dsn, s, db := containerStore(t)
	body := make([]byte, 4096)
	rand.Read(body) // 5.5 KB of base64 that pglz cannot shrink: stored out of line
	if _, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: leasedb.BlobRef{Account: "a", Container: "c", Name: "inline"},
		Type: "BlockBlob", Extents: []leasedb.Extent{{Size: int64(len(body)), Data: body}}}); err != nil {
		t.Fatal(err)
	}
	conn := pgtest.Connect(t, dsn)
	var toast uint32
	if err := conn.QueryRow(ctx, `SELECT reltoastrelid FROM pg_class WHERE relname = 'blobs'`).Scan(&toast); err != nil {
		t.Fatal(err)
	}
	fetched := func(sql string) int64 {
		t.Helper()
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		var n int64
		if _, err := tx.Exec(ctx, sql, "a", "c", "inline", int64(1), int64(2)); err != nil {
			t.Fatal(err)
		}
		if err := tx.QueryRow(ctx, `SELECT pg_stat_get_xact_blocks_fetched($1)`, toast).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := fetched(postgres.LockForStageSQL); n != 0 {
		t.Errorf("LockForStage read %d blocks of the TOAST table", n)
	}
	// The measure can see a read: the row's extents, read whole.
	if n := fetched(`SELECT length(extents) FROM blobs WHERE account = $1 AND container = $2 AND name = $3 AND $4::bigint <> $5::bigint`); n == 0 {
		t.Fatal("reading the extents read nothing of the TOAST table: the measure is broken")
	}
	if st := lockForStage(t, s, "inline"); !st.Exists || st.FirstBlockIDLen != 0 {
		t.Errorf("inline: %+v", st)
	}
}
