package postgres_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
)

// BenchmarkInlinePutBackendCPU drives the store alone (no gateway) over
// one connection: a 4 KiB inline Put Blob over an inline blob, with
// If-Match (ifmatch) and without (plain), and over a blob with a staged
// block (staged: Put Block, then the put drops it), on a private server
// with production durability (fsync, synchronous_commit and
// full_page_writes on). It reports the Postgres CPU of that connection's
// backend per put (its run time from /proc/PID/schedstat, in ns, so a
// run of a few thousand puts is precise) beside the rate. One backend and
// one client leave out the pool and the other writers, so two builds run
// one after the other compare the statements' own cost:
//
//	go test ./leasedb/postgres -run '^$' -bench InlinePutBackendCPU -benchtime 3000x -timeout 30m
//
// BLOBGW_BENCH_SQL is run on each database after the migrations (a
// schema setting to compare, say "ALTER TABLE blobs SET
// (toast_tuple_target = 8160)"). With BLOBGW_BENCH_PERF naming a directory, `perf record -g` of the
// backend over the timed puts is written there (ifmatch.data, ...).
func BenchmarkInlinePutBackendCPU(b *testing.B) {
	ctx := context.Background()
	srv, err := pgtest.StartServerArgs("-c", "fsync=on", "-c", "synchronous_commit=on", "-c", "full_page_writes=on")
	if err != nil {
		b.Skip(err)
	}
	b.Cleanup(func() { srv.Stop() })
	body := make([]byte, 4096)
	rand.Read(body)
	for _, mode := range []string{"ifmatch", "plain", "staged"} {
		b.Run(mode, func(b *testing.B) {
			_, dsn, err := srv.CreateDatabase(ctx, "inlinecpu")
			if err != nil {
				b.Fatal(err)
			}
			if q := os.Getenv("BLOBGW_BENCH_SQL"); q != "" {
				// The schema first (a store opened once), then the
				// setting compared.
				open(b, dsn+"&pool_max_conns=1").Close()
				if _, err := pgtest.Connect(b, dsn).Exec(ctx, q); err != nil {
					b.Fatalf("%s: %v", q, err)
				}
			}
			s := open(b, dsn+"&pool_max_conns=1&application_name=inlinecpu")
			db := &leasedb.DB{Store: s}
			if _, err := db.CreateContainer(ctx, "a", "c", nil, ""); err != nil {
				b.Fatal(err)
			}
			ref := leasedb.BlobRef{Account: "a", Container: "c", Name: "b"}
			etag := ""
			put := func(i int) error {
				if mode == "staged" {
					key := fmt.Sprintf("staged-%d", i)
					if err := db.AddIntent(ctx, key, time.Hour); err != nil {
						return err
					}
					if err := db.StageBlock(ctx, leasedb.StageBlockRequest{Ref: ref, Block: leasedb.Block{ID: "YmxrMQ==", Key: key, Size: 1}}); err != nil {
						return err
					}
				}
				req := leasedb.PutBlobRequest{Ref: ref, Type: "BlockBlob", Extents: []leasedb.Extent{{Size: int64(len(body)), Data: body}}}
				if mode == "ifmatch" && etag != "" {
					req.Cond.IfMatch = []string{etag}
				}
				out, _, err := db.PutBlob(ctx, req)
				if err != nil {
					return err
				}
				etag = strings.Trim(out.ETag, `"`)
				return nil
			}
			// Warm up: the connection, its prepared statements (generic
			// plans after five runs), the caches.
			for i := range 50 {
				if err := put(-i - 1); err != nil {
					b.Fatal(err)
				}
			}
			// The store's one backend, by its application_name: the
			// connection BLOBGW_BENCH_SQL ran on is a client backend of
			// the database too (it measured 0 µs per put).
			conn := pgtest.Connect(b, dsn)
			var pid int
			if err := conn.QueryRow(ctx, `SELECT pid FROM pg_stat_activity
				WHERE datname = current_database() AND application_name = 'inlinecpu'`).Scan(&pid); err != nil {
				b.Fatal(err)
			}
			stopPerf := perfBackend(b, pid, mode)
			cpu0 := backendRunTime(b, pid)
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				if err := put(i); err != nil {
					b.Fatal(err)
				}
			}
			elapsed := time.Since(start)
			b.StopTimer()
			cpu1 := backendRunTime(b, pid)
			stopPerf()
			ops := float64(b.N)
			b.ReportMetric(float64(cpu1-cpu0)/1e3/ops, "backend-us/op")
			b.ReportMetric(ops/elapsed.Seconds(), "puts/s")
		})
	}
}

// backendRunTime is the CPU time (ns) process pid has run: the first
// field of /proc/PID/schedstat.
func backendRunTime(b *testing.B, pid int) int64 {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
	if err != nil {
		b.Fatal(err)
	}
	var ns int64
	if _, err := fmt.Sscan(string(raw), &ns); err != nil {
		b.Fatal(err)
	}
	return ns
}

// perfBackend starts `perf record -g` of process pid into
// $BLOBGW_BENCH_PERF/name.data when that is set; the function returned
// stops it.
func perfBackend(b *testing.B, pid int, name string) func() {
	dir := os.Getenv("BLOBGW_BENCH_PERF")
	if dir == "" {
		return func() {}
	}
	cmd := exec.Command("perf", "record", "-q", "-e", "cpu-clock", "-g", "-o", dir+"/"+name+".data", "-p", fmt.Sprint(pid))
	if err := cmd.Start(); err != nil {
		b.Fatalf("perf: %v", err)
	}
	time.Sleep(200 * time.Millisecond) // perf attaches
	return func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}
}
