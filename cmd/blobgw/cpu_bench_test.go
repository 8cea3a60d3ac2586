package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blobgw/blobgw/internal/bench"
	"github.com/blobgw/blobgw/internal/config"
	"github.com/blobgw/blobgw/leasedb/pgtest"
)

// BenchmarkGatewayCPU measures the gateway's own CPU time per small
// operation (utime+stime of the `blobgw serve` process from /proc, over
// the operations of the timed phase): put-small, put-small-ifmatch,
// get-small and lease-cycle, on SQLite + disk and on Postgres + disk
// (Postgres's CPU is reported beside it, not in it). With
// BLOBGW_BENCH_BEFORE naming another blobgw binary (say one built from
// main), that binary runs beside this one on stores of its own and the
// two are driven in alternating order in the same run, so a shared
// machine's load falls on both alike:
//
//	git worktree add /tmp/before main && (cd /tmp/before && go build -o /tmp/blobgw-before ./cmd/blobgw)
//	BLOBGW_BENCH_BEFORE=/tmp/blobgw-before go test ./cmd/blobgw -run '^$' -bench GatewayCPU -benchtime 1x -timeout 30m
//
// Per workload and set it prints the CPU per operation of every round (and
// the MB/s of every round) and their median and spread, and for each before/after pair the ratio of
// each round (the two ran one after the other) with its median and range,
// the metric <workload>-<store>-after/before-x; then the report of the
// rounds summed. Compare the per-round ratios: a sum divides background
// work (the collector, the account refresh) by the operations, which
// favours the set that did more.
//
// Knobs as BenchmarkSmallOps: BLOBGW_BENCH_DURATION (default 5s),
// BLOBGW_BENCH_CLIENTS (default 8); BLOBGW_BENCH_ROUNDS (default 2);
// BLOBGW_BENCH_WORKLOADS, a comma-separated subset of the four workloads.
func BenchmarkGatewayCPU(b *testing.B) {
	duration, clients, rounds := cpuBenchKnobs(b)
	ctx := context.Background()
	dir, bins := cpuBenchBins(b)
	pg := startBenchPG(b)

	pids := map[string]int{}
	var sets []bench.Set
	for _, which := range []string{"before", "after"} {
		bin, ok := bins[which]
		if !ok {
			continue
		}
		u, pid := startServeProc(b, bin, filepath.Join(dir, which+"-sqlite"))
		name := "sqlite-" + which
		pids[name] = pid
		sets = append(sets, bench.Set{Name: name, Endpoints: devEndpoint(u)})
		u, pid = startServeProc(b, bin, filepath.Join(dir, which+"-pg"), "--metadata", pg.NewDatabase(b))
		name = "postgres-" + which
		pids[name] = pid
		sets = append(sets, bench.Set{Name: name, Endpoints: devEndpoint(u)})
	}
	// The figures of every round apart, beside the report's sums.
	gwRounds, dbRounds := newRoundFigures("server-cpu-us/op"), newRoundFigures("db-cpu-us/op")
	// Throughput of every round too: on large bodies the ratio of MB/s
	// says whether CPU saved bought anything.
	mbRounds := newRoundFigures("MB/s")
	hook := func(set, workload string) func(*bench.Result) {
		gw0, db0 := cpuOf(pids[set]), treeCPU(pg.Pid())
		return func(r *bench.Result) {
			gw, db := math.NaN(), math.NaN() // no operation: no figure
			if r.Ops > 0 {
				ops := float64(r.Ops)
				gw, db = (cpuOf(pids[set])-gw0).Seconds()*1e6/ops, (treeCPU(pg.Pid())-db0).Seconds()*1e6/ops
			}
			onPG := strings.HasPrefix(set, "postgres")
			gwRounds.add(workload, set, gw)
			if r.Seconds > 0 {
				mbRounds.add(workload, set, float64(r.Bytes)/r.Seconds/1e6)
			}
			if onPG {
				dbRounds.add(workload, set, db)
			}
			if r.Ops == 0 {
				return
			}
			r.Extra = map[string]float64{"server-cpu-us/op": gw}
			if onPG {
				r.Extra["db-cpu-us/op"] = db
			}
		}
	}
	cfg := bench.Config{Clients: clients, Duration: duration, Rounds: rounds, Progress: os.Stderr, Hook: hook}
	workloads := []string{"put-small", "put-small-ifmatch", "get-small", "lease-cycle"}
	if w := os.Getenv("BLOBGW_BENCH_WORKLOADS"); w != "" {
		workloads = strings.Split(w, ",")
	}
	rep, err := bench.Run(ctx, cfg, workloads, sets)
	if err != nil {
		b.Fatal(err)
	}
	fmt.Printf("\n== gateway CPU per operation, %d clients, %s per phase, %d rounds\n", clients, duration, rounds)
	pairs := []roundPair{{"sqlite", "sqlite-before", "sqlite-after"}, {"postgres", "postgres-before", "postgres-after"}}
	gwRounds.write(os.Stdout, pairs)
	dbRounds.write(os.Stdout, pairs)
	mbRounds.write(os.Stdout, pairs)
	fmt.Println("\nsums of the rounds:")
	rep.WriteTable(os.Stdout)
	// The median of the per-round ratios, steadier than the ratio of
	// the sums when one round ran on a busier machine.
	for _, w := range gwRounds.workloads {
		for _, p := range pairs {
			if m := median(gwRounds.ratios(w, p)); !math.IsNaN(m) {
				b.ReportMetric(m, w+"-"+p.label+"-after/before-x")
			}
		}
	}
	for _, r := range rep.Results {
		if n := r.ErrorCount(); n > 0 {
			b.Errorf("%s on %s: %d errors %v", r.Workload, r.Set, n, r.Errors)
		}
		if v, ok := r.Extra["server-cpu-us/op"]; ok {
			b.ReportMetric(v, r.Workload+"-"+r.Set+"-us/op")
		}
	}
}

// cpuBenchKnobs reads the CPU benchmarks' knobs: BLOBGW_BENCH_DURATION
// (default 5s), BLOBGW_BENCH_CLIENTS (default 8), BLOBGW_BENCH_ROUNDS
// (default 2).
func cpuBenchKnobs(b *testing.B) (duration time.Duration, clients, rounds int) {
	b.Helper()
	return envDuration(b, "BLOBGW_BENCH_DURATION", 5*time.Second),
		int(envInt(b, "BLOBGW_BENCH_CLIENTS", 8)),
		int(envInt(b, "BLOBGW_BENCH_ROUNDS", 2))
}

// cpuBenchBins builds this package's blobgw into a temporary folder and
// returns that folder and the binaries to drive: "after" is the one just
// built, "before" the one BLOBGW_BENCH_BEFORE names, if it is set.
func cpuBenchBins(b *testing.B) (dir string, bins map[string]string) {
	b.Helper()
	dir = b.TempDir()
	bin := buildBlobgw(b, filepath.Join(dir, "blobgw"))
	bins = map[string]string{"after": bin}
	if before := os.Getenv("BLOBGW_BENCH_BEFORE"); before != "" {
		bins["before"] = before
	}
	return dir, bins
}

// startBenchPG starts a private Postgres server with the extra server
// arguments ("-c", "name=value", ...) and stops it with the benchmark.
func startBenchPG(b *testing.B, args ...string) *pgtest.Server {
	b.Helper()
	pg, err := pgtest.StartServerArgs(args...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { pg.Stop() })
	return pg
}

// devEndpoint is the bench endpoint of a gateway at u, as the
// development account.
func devEndpoint(u string) []bench.Endpoint {
	return []bench.Endpoint{{URL: u, Account: config.DevAccountName, Key: config.DevAccountKey}}
}
