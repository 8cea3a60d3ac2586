package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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
// the MB/s of every round) and their median and spread (and, in the sums,
// the process's read and write system calls and its threads' context
// switches per operation), and for each
// before/after pair the ratio of
// each round (the two ran one after the other) with its median and range,
// the metric <workload>-<store>-after/before-x; then the report of the
// rounds summed. Compare the per-round ratios: a sum divides background
// work (the collector, the account refresh) by the operations, which
// favours the set that did more.
//
// Knobs as BenchmarkSmallOps: BLOBGW_BENCH_DURATION (default 5s),
// BLOBGW_BENCH_CLIENTS (default 8); BLOBGW_BENCH_ROUNDS (default 2);
// BLOBGW_BENCH_WORKLOADS, a comma-separated list of `blobgw bench`
// workloads (default the four above; rmw-hot and the large ones run too);
// BLOBGW_BENCH_STORES, sqlite, postgres or both (the default).
// BLOBGW_BENCH_BEFORE_ENV and BLOBGW_BENCH_AFTER_ENV add space-separated
// NAME=value entries to that set's serve environment; with
// BLOBGW_BENCH_BEFORE_ENV alone, "before" is this binary too, so one
// runtime setting is compared side by side:
//
//	BLOBGW_BENCH_BEFORE_ENV=GOMAXPROCS=1 go test ./cmd/blobgw -run '^$' -bench 'GatewayCPU$' -benchtime 1x -timeout 30m
//
// BLOBGW_BENCH_PPROF names a folder where each phase of the "after" sets
// leaves a CPU profile of its serve process (<workload>-<set>-r<round>.pprof,
// taken through --pprof for the phase's whole seconds); the profiler's own
// cost is in that set's figures, so compare with it unset.
func BenchmarkGatewayCPU(b *testing.B) {
	duration, clients, rounds := cpuBenchKnobs(b)
	ctx := context.Background()
	dir, bins := cpuBenchBins(b)
	pg := startBenchPG(b)

	stores := map[string]bool{"sqlite": true, "postgres": true}
	if v := os.Getenv("BLOBGW_BENCH_STORES"); v != "" {
		stores = map[string]bool{}
		for _, st := range strings.Split(v, ",") {
			if st != "sqlite" && st != "postgres" {
				b.Fatalf("BLOBGW_BENCH_STORES: %q is neither sqlite nor postgres", st)
			}
			stores[st] = true
		}
	}
	pids := map[string]int{}
	prof := newPhaseProfiler(os.Getenv("BLOBGW_BENCH_PPROF"), duration)
	var sets []bench.Set
	for _, which := range []string{"before", "after"} {
		bin, ok := bins[which]
		if !ok {
			continue
		}
		for _, st := range []struct{ name, dir string }{{"sqlite", "sqlite"}, {"postgres", "pg"}} {
			if !stores[st.name] {
				continue
			}
			var args []string
			if st.name == "postgres" {
				args = append(args, "--metadata", pg.NewDatabase(b))
			}
			name := st.name + "-" + which
			if which == "after" {
				args = append(args, prof.serveArgs(b, name)...)
			}
			u, pid := startServeProcEnv(b, bin, filepath.Join(dir, which+"-"+st.dir), cpuBenchEnv(b, which), args...)
			pids[name] = pid
			sets = append(sets, bench.Set{Name: name, Endpoints: devEndpoint(u)})
		}
	}
	// The figures of every round apart, beside the report's sums.
	gwRounds, dbRounds := newRoundFigures("server-cpu-us/op"), newRoundFigures("db-cpu-us/op")
	// Throughput of every round too: on large bodies the ratio of MB/s
	// says whether CPU saved bought anything.
	mbRounds := newRoundFigures("MB/s")
	hook := func(set, workload string) func(*bench.Result) {
		profiled := prof.start(b, set, workload)
		gw0, db0 := cpuOf(pids[set]), treeCPU(pg.Pid())
		rd0, wr0 := procSyscalls(pids[set])
		cs0 := procSwitches(pids[set])
		return func(r *bench.Result) {
			profiled()
			rd, wr := procSyscalls(pids[set])
			cs := procSwitches(pids[set])
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
			r.Extra = map[string]float64{"server-cpu-us/op": gw,
				"reads/op": float64(rd-rd0) / float64(r.Ops), "writes/op": float64(wr-wr0) / float64(r.Ops),
				"switches/op": float64(cs-cs0) / float64(r.Ops)}
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
// built, "before" the one BLOBGW_BENCH_BEFORE names, if it is set, or
// this one too when BLOBGW_BENCH_BEFORE_ENV alone is (one environment
// setting compared side by side).
func cpuBenchBins(b *testing.B) (dir string, bins map[string]string) {
	b.Helper()
	dir = b.TempDir()
	bin := buildBlobgw(b, filepath.Join(dir, "blobgw"))
	bins = map[string]string{"after": bin}
	if before := os.Getenv("BLOBGW_BENCH_BEFORE"); before != "" {
		bins["before"] = before
	} else if os.Getenv("BLOBGW_BENCH_BEFORE_ENV") != "" {
		bins["before"] = bin
	}
	return dir, bins
}

// cpuBenchEnv is the environment set which's serve processes get on top
// of the benchmark's: BLOBGW_BENCH_BEFORE_ENV or BLOBGW_BENCH_AFTER_ENV,
// space-separated NAME=value entries (say "GOMAXPROCS=1").
func cpuBenchEnv(b testing.TB, which string) []string {
	b.Helper()
	name := "BLOBGW_BENCH_" + strings.ToUpper(which) + "_ENV"
	env := strings.Fields(os.Getenv(name))
	for _, e := range env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			b.Fatalf("%s: %q is not NAME=value", name, e)
		}
	}
	return env
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

// procSyscalls is the read and write system calls a process has made
// (syscr and syscw of /proc/PID/io: every read and write family call,
// socket I/O included, an EAGAIN too); 0 where the file cannot be read.
func procSyscalls(pid int) (reads, writes int64) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch k {
		case "syscr":
			reads = n
		case "syscw":
			writes = n
		}
	}
	return reads, writes
}

// procSwitches is the context switches, voluntary and not, of every
// thread of a process (/proc/PID/task/*/status): a thread that sleeps and
// is woken again, the runtime's monitor thread included, which a CPU
// profile does not sample; threads that exited are not counted.
func procSwitches(pid int) int64 {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	var n int64
	for _, t := range tasks {
		data, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			k, v, _ := strings.Cut(line, ":")
			if k == "voluntary_ctxt_switches" || k == "nonvoluntary_ctxt_switches" {
				c, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				n += c
			}
		}
	}
	return n
}

func TestCPUBenchEnv(t *testing.T) {
	t.Setenv("BLOBGW_BENCH_AFTER_ENV", " GOMAXPROCS=1  GODEBUG=schedtrace=2147483647 ")
	t.Setenv("BLOBGW_BENCH_BEFORE_ENV", "")
	if got, want := cpuBenchEnv(t, "after"), []string{"GOMAXPROCS=1", "GODEBUG=schedtrace=2147483647"}; !slices.Equal(got, want) {
		t.Errorf("after: %q, want %q", got, want)
	}
	if got := cpuBenchEnv(t, "before"); len(got) != 0 {
		t.Errorf("before: %q, want nothing", got)
	}
}

func TestProcSwitches(t *testing.T) {
	pid := os.Getpid()
	before := procSwitches(pid)
	// Each sleep parks the goroutine and its thread waits in the kernel:
	// a voluntary switch at least.
	for range 5 {
		time.Sleep(2 * time.Millisecond)
	}
	if after := procSwitches(pid); before <= 0 || after <= before {
		t.Errorf("switches %d, then %d after sleeping", before, after)
	}
	if n := procSwitches(-1); n != 0 {
		t.Errorf("no such process: %d switches", n)
	}
}

// phaseProfiler takes a CPU profile of a serve process per benchmark
// phase (BLOBGW_BENCH_PPROF); with no folder it does nothing.
type phaseProfiler struct {
	dir     string
	seconds int
	addrs   map[string]string // set -> operator listener
	rounds  map[string]int    // set/workload -> phases profiled
}

func newPhaseProfiler(dir string, phase time.Duration) *phaseProfiler {
	return &phaseProfiler{dir: dir, seconds: max(int(phase/time.Second), 1), addrs: map[string]string{}, rounds: map[string]int{}}
}

// serveArgs are the serve flags that open set's profiling endpoint.
func (p *phaseProfiler) serveArgs(b *testing.B, set string) []string {
	if p.dir == "" {
		return nil
	}
	p.addrs[set] = freeAddr(b)
	return []string{"--metrics-listen", p.addrs[set], "--pprof"}
}

// start begins the profile of set's phase of workload and returns the
// function that waits for it and writes it.
func (p *phaseProfiler) start(b *testing.B, set, workload string) func() {
	addr, ok := p.addrs[set]
	if !ok {
		return func() {}
	}
	p.rounds[set+"/"+workload]++
	path := filepath.Join(p.dir, fmt.Sprintf("%s-%s-r%d.pprof", workload, set, p.rounds[set+"/"+workload]))
	done := make(chan error, 1)
	go func() {
		resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, p.seconds))
		if err != nil {
			done <- err
			return
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("%s: %s", resp.Status, data)
		}
		if err == nil {
			err = os.WriteFile(path, data, 0o644)
		}
		done <- err
	}()
	return func() {
		if err := <-done; err != nil {
			b.Errorf("profile %s: %v", path, err)
		}
	}
}
