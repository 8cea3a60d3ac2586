package postgres_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
)

// BenchmarkSetMetadataCPU drives the store alone over one connection: Set
// Blob Metadata on a 4 KiB inline blob of a plain account, on a private
// server with production durability, as BenchmarkInlinePutBackendCPU
// does for Put Blob. It reports the CPU of that connection's backend per
// operation (backend-us/op), the CPU of the test process (the store's Go
// side: client-us/op), and the WAL the server wrote per operation
// (wal-B/op: the whole row's upsert wrote the blob's TOASTed bytes again).
// Two builds run one after the other compare:
//
//	go test ./leasedb/postgres -run '^$' -bench SetMetadataCPU -benchtime 3000x
func BenchmarkSetMetadataCPU(b *testing.B) {
	ctx := context.Background()
	srv, err := pgtest.StartServerArgs("-c", "fsync=on", "-c", "synchronous_commit=on", "-c", "full_page_writes=on")
	if err != nil {
		b.Skip(err)
	}
	b.Cleanup(func() { srv.Stop() })
	_, dsn, err := srv.CreateDatabase(ctx, "setmetacpu")
	if err != nil {
		b.Fatal(err)
	}
	s := open(b, dsn+"&pool_max_conns=1&application_name=setmetacpu")
	db := &leasedb.DB{Store: s}
	if _, err := db.CreateContainer(ctx, "a", "c", nil, ""); err != nil {
		b.Fatal(err)
	}
	ref := leasedb.BlobRef{Account: "a", Container: "c", Name: "b"}
	body := make([]byte, 4096)
	rand.Read(body)
	if _, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: ref, Type: "BlockBlob",
		Extents: []leasedb.Extent{{Size: int64(len(body)), Data: body}}}); err != nil {
		b.Fatal(err)
	}
	set := func(i int) {
		if _, err := db.SetBlobMetadata(ctx, ref, "", leasedb.Conditions{}, map[string]string{"n": fmt.Sprint(i)}); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 50 { // the connection, its prepared statements, the caches
		set(-i - 1)
	}
	conn := pgtest.Connect(b, dsn)
	var pid int
	if err := conn.QueryRow(ctx, `SELECT pid FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = 'setmetacpu'`).Scan(&pid); err != nil {
		b.Fatal(err)
	}
	wal := func() int64 {
		var lsn int64
		if err := conn.QueryRow(ctx, `SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint`).Scan(&lsn); err != nil {
			b.Fatal(err)
		}
		return lsn
	}
	self := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	wal0, cpu0, self0 := wal(), backendRunTime(b, pid), self()
	b.ResetTimer()
	for i := range b.N {
		set(i)
	}
	b.StopTimer()
	ops := float64(b.N)
	b.ReportMetric(float64(backendRunTime(b, pid)-cpu0)/1e3/ops, "backend-us/op")
	b.ReportMetric(float64(self()-self0)/1e3/ops, "client-us/op")
	b.ReportMetric(float64(wal()-wal0)/ops, "wal-B/op")
}
