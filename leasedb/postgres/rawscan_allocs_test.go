package postgres_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
)

// TestReadBlobAllocs pins the allocations of one ReadBlob (the read of
// every Get Blob and Get Blob Properties) of a small blob: decoding its
// row from the bytes as received (scanOneBlob) instead of scanning it
// twice through pgx's per-Rows scan plans took it from 65 to 14.
func TestReadBlobAllocs(t *testing.T) {
	ctx := context.Background()
	s := smallBlobStore(t)
	read := func() {
		if _, ok, _, err := s.ReadBlob(ctx, "a", "c", "b"); err != nil || !ok {
			t.Fatal(ok, err)
		}
	}
	wantAllocs(t, "ReadBlob", 200, 20, read)
}

// TestPutBlobAllocs pins the allocations of a 4 KiB inline Put Blob over
// an existing blob through leasedb.DB (LockForReplace, CommitReplace):
// the row of LockForReplace decoded from the bytes as received took it
// from 194 to 144; CommitReplace's arguments passed as pointers to the
// row's fields (commitArgs), without copies of the key lists, and its
// error text built only on failure, and the ETag formatted without fmt,
// to 124; the two batches of two queries held in the transaction
// (lazyTx.pairBatch) and BEGIN's text a constant, to 112;
// LockForReplace's arguments and the columns it reads in one allocation,
// to 103 (97 on a later base); the two pairs written as Bind and Execute
// messages of prepared statements and read message by message (pairConn:
// no pgx batch or pgconn pipeline bookkeeping, no per-query context
// watch for the commit, buffers reused per connection), to 31 (19 on a
// later base, 5.5 KB); the frontend's DataRow lent a values slice of
// each statement's width (pairConn.rowsFor: pgproto3 made a new one for
// LockForReplace's 35 columns and again for CommitReplace's 1), 17 and
// 3.7 KB; in one round trip (onetrip.go: no locked row read back), 16 →
// 9 and 3.8 → 3.6 KB.
func TestPutBlobAllocs(t *testing.T) {
	ctx := context.Background()
	s := open(t, pgtest.Start(t))
	addContainer(t, s)
	db := &leasedb.DB{Store: s}
	body := make([]byte, 4096)
	put := func() {
		if _, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: leasedb.BlobRef{Account: "a", Container: "c", Name: "b"}, Type: "BlockBlob",
			Extents:     []leasedb.Extent{{Size: int64(len(body)), Data: body}},
			BlobContent: leasedb.BlobContent{Props: leasedb.Props{ContentType: "application/octet-stream"}}}); err != nil {
			t.Fatal(err)
		}
	}
	wantAllocs(t, "Put Blob", 100, 11, put)
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for range 200 {
		put()
	}
	runtime.ReadMemStats(&m1)
	if b := (m1.TotalAlloc - m0.TotalAlloc) / 200; b > 4<<10 {
		t.Errorf("Put Blob: %d heap bytes, want at most %d", b, 4<<10)
	} else {
		t.Logf("Put Blob: %d heap bytes", b)
	}
}
