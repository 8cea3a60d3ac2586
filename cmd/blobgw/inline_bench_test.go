package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/blobgw/blobgw/backends/s3/miniotest"
	"github.com/blobgw/blobgw/internal/bench"
	"github.com/blobgw/blobgw/leasedb/pgtest"
)

// BenchmarkInline measures what keeping small Put Blob bodies in the
// metadata row (inline_max_bytes) buys: `blobgw serve` on SQLite + disk and
// on Postgres + disk, each once with inline_max_bytes 0 (every body in the
// backend) and once with it at 64 KiB, driven in one run by put-small and
// get-small at body sizes of 4, 16 and 64 KiB (BLOBGW_BENCH_SIZES, comma
// separated bytes; BLOBGW_BENCH_ROUNDS rounds in alternating order, 2), with the gateway's CPU time per operation (and the
// database's on Postgres); BLOBGW_BENCH_S3=1 adds SQLite over a MinIO
// bucket. The ratios of one run, inline to not, are what
// chose the default (README, Performance).
//
//	go test ./cmd/blobgw -run '^$' -bench Inline -benchtime 1x -timeout 30m
func BenchmarkInline(b *testing.B) {
	duration := envDuration(b, "BLOBGW_BENCH_DURATION", 3*time.Second)
	clients := int(envInt(b, "BLOBGW_BENCH_CLIENTS", 8))
	sizes := []int64{4 << 10, 16 << 10, 64 << 10}
	if v := os.Getenv("BLOBGW_BENCH_SIZES"); v != "" {
		sizes = nil
		for _, f := range splitComma(v) {
			n, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				b.Fatalf("BLOBGW_BENCH_SIZES: %v", err)
			}
			sizes = append(sizes, n)
		}
	}
	ctx := context.Background()
	dir := b.TempDir()
	bin := buildBlobgw(b, filepath.Join(dir, "blobgw"))
	pg, err := pgtest.StartServer()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { pg.Stop() })
	type server struct {
		pid      int
		postgres bool
	}
	servers := map[string]server{}
	var sets []bench.Set
	stores := []string{"sqlite", "postgres"}
	var s3args []string
	if os.Getenv("BLOBGW_BENCH_S3") != "" {
		// SQLite over a MinIO bucket too: there inline saves a whole PUT.
		ms, err := miniotest.StartServer()
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { ms.Stop() })
		c := ms.NewBucket(b)
		s3args = s3ServeArgs(c)
		stores = append(stores, "sqlite+s3")
	}
	for _, store := range stores {
		for _, inline := range []int64{0, 64 << 10} {
			name := fmt.Sprintf("%s-inline-%dk", store, inline>>10)
			args := []string{"--inline-max-bytes", strconv.FormatInt(inline, 10)}
			switch store {
			case "postgres":
				args = append(args, "--metadata", pg.NewDatabase(b))
			case "sqlite+s3":
				args = append(args, append(s3args, "--s3-prefix", name+"/")...)
			}
			u, pid := startServeProc(b, bin, filepath.Join(dir, name), args...)
			servers[name] = server{pid: pid, postgres: store == "postgres"}
			sets = append(sets, bench.Set{Name: name, Endpoints: devEndpoint(u)})
		}
	}
	hook := func(set, workload string) func(*bench.Result) {
		srv := servers[set]
		gw0, db0 := cpuOf(srv.pid), treeCPU(pg.Pid())
		return func(r *bench.Result) {
			if r.Ops == 0 {
				return
			}
			ops := float64(r.Ops)
			r.Extra = map[string]float64{"server-cpu-us/op": (cpuOf(srv.pid) - gw0).Seconds() * 1e6 / ops}
			if srv.postgres {
				r.Extra["db-cpu-us/op"] = (treeCPU(pg.Pid()) - db0).Seconds() * 1e6 / ops
			}
		}
	}
	for _, size := range sizes {
		cfg := bench.Config{Clients: clients, Duration: duration, SmallSize: size, Progress: os.Stderr, Hook: hook,
			Rounds: int(envInt(b, "BLOBGW_BENCH_ROUNDS", 2))}
		rep, err := bench.Run(ctx, cfg, []string{"put-small", "get-small"}, sets)
		if err != nil {
			b.Fatal(err)
		}
		fmt.Printf("\n== %d-byte bodies, %d clients, %s per phase: inline_max_bytes 0 and 64 KiB\n", size, clients, duration)
		rep.WriteTable(os.Stdout)
		ops := map[string]float64{}
		cpu := map[string]float64{}
		for _, r := range rep.Results {
			if n := r.ErrorCount(); n > 0 {
				b.Errorf("%s on %s: %d errors %v", r.Workload, r.Set, n, r.Errors)
			}
			ops[r.Workload+" "+r.Set] = r.OpsPerS
			cpu[r.Workload+" "+r.Set] = r.Extra["server-cpu-us/op"]
		}
		for _, store := range stores {
			for _, w := range []string{"put-small", "get-small"} {
				off, on := w+" "+store+"-inline-0k", w+" "+store+"-inline-64k"
				fmt.Printf("%s %s %d B: inline/backend ops/s %.2fx, gateway CPU/op %.2fx\n", w, store, size, ops[on]/ops[off], cpu[on]/cpu[off])
				b.ReportMetric(ops[on]/ops[off], fmt.Sprintf("%s-%s-%dk-x", w, store, size>>10))
			}
		}
	}
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}
