package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blobgw/blobgw/internal/bench"
	"github.com/blobgw/blobgw/internal/config"
)

// BenchmarkGCSettings measures `blobgw serve` under several garbage
// collector settings side by side in one run: one gateway per setting and
// store (SQLite + disk, Postgres + disk), all driven in alternating order
// by the same workloads, so a shared machine's load falls on all of them
// alike. A setting is environment for the process (GOGC, GOMEMLIMIT,
// BLOBGW_GC_PERCENT, ...), so the same binary runs under each. Per
// setting, workload and store it prints the gateway's CPU per operation
// (utime+stime from /proc) of every round, their median and spread, the
// ops/s, the collections per operation (counted from GODEBUG=gctrace=1's
// one line per cycle) and the process's peak RSS (VmHWM) after the small
// workloads and at the end.
//
//	BLOBGW_BENCH_ROUNDS=3 BLOBGW_BENCH_DURATION=4s go test ./cmd/blobgw -run '^$' -bench GCSettings -benchtime 1x -timeout 60m
//
// Knobs: BLOBGW_BENCH_GC ("name=K=V,K=V;name2=..."; default GOGC 100, 200,
// 400 and GOGC=off with GOMEMLIMIT=256MiB), BLOBGW_BENCH_WORKLOADS
// (comma-separated; default put-small, put-small-ifmatch, get-small,
// lease-cycle, put-large), BLOBGW_BENCH_LARGE (default 16 MiB) and those of
// BenchmarkGatewayCPU.
func BenchmarkGCSettings(b *testing.B) {
	duration, clients, rounds := cpuBenchKnobs(b)
	large := envInt(b, "BLOBGW_BENCH_LARGE", 16<<20)
	settings := gcBenchSettings(b)
	workloads := []string{"put-small", "put-small-ifmatch", "get-small", "lease-cycle", "put-large"}
	if v := os.Getenv("BLOBGW_BENCH_WORKLOADS"); v != "" {
		workloads = config.ParseList(v)
	}
	ctx := context.Background()
	dir := b.TempDir()
	bin := buildBlobgw(b, filepath.Join(dir, "blobgw"))
	pg := startBenchPG(b)

	procs := map[string]*gcProc{}
	var sets []bench.Set
	for _, s := range settings {
		for _, store := range []string{"sqlite", "postgres"} {
			name := store + "-" + s.name
			args := []string{"--gc-grace", "0", "--gc-interval", "5s"}
			if store == "postgres" {
				args = append(args, "--metadata", pg.NewDatabase(b))
			}
			p := startGCProc(b, bin, filepath.Join(dir, name), s.env, args...)
			procs[name] = p
			sets = append(sets, bench.Set{Name: name, Endpoints: devEndpoint(p.url)})
		}
	}

	type round struct{ cpuUS, opsPerS, gcsPerOp, gcCPUUS float64 }
	var mu sync.Mutex
	rounds_ := map[string][]round{} // set + " " + workload
	hwm := map[string]map[string]int64{}
	hook := func(set, workload string) func(*bench.Result) {
		p := procs[set]
		cpu0, gc0, gcCPU0 := cpuOf(p.pid), p.gcs.Load(), p.gcCPU.Load()
		return func(r *bench.Result) {
			if r.Ops == 0 {
				return
			}
			ops := float64(r.Ops)
			rd := round{
				cpuUS:    (cpuOf(p.pid) - cpu0).Seconds() * 1e6 / ops,
				opsPerS:  ops / r.Seconds,
				gcsPerOp: float64(p.gcs.Load()-gc0) / ops,
				gcCPUUS:  float64(p.gcCPU.Load()-gcCPU0) / 1e3 / ops,
			}
			mu.Lock()
			defer mu.Unlock()
			rounds_[set+" "+workload] = append(rounds_[set+" "+workload], rd)
			if hwm[set] == nil {
				hwm[set] = map[string]int64{}
			}
			hwm[set][workload], _ = vmHWM(p.pid)
			r.Extra = map[string]float64{"server-cpu-us/op": rd.cpuUS, "gcs/op": rd.gcsPerOp}
		}
	}
	cfg := bench.Config{Clients: clients, Duration: duration, Rounds: rounds, LargeSize: large,
		Progress: os.Stderr, Hook: hook}
	rep, err := bench.Run(ctx, cfg, workloads, sets)
	if err != nil {
		b.Fatal(err)
	}
	fmt.Printf("\n== GC settings, %d clients, %s per phase, %d rounds\n", clients, duration, rounds)
	rep.WriteTable(os.Stdout)
	fmt.Printf("\n| store | setting | workload | gateway CPU µs/op, median (rounds) | spread | ops/s median | GCs/op | GC CPU µs/op (rounds) | peak RSS MiB |\n")
	fmt.Printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, store := range []string{"sqlite", "postgres"} {
		for _, w := range workloads {
			for _, s := range settings {
				set := store + "-" + s.name
				rs := rounds_[set+" "+w]
				if len(rs) == 0 {
					continue
				}
				var cpus, rates, gcs, gcCPUs []float64
				var gcEach []string
				for _, r := range rs {
					cpus, rates, gcs = append(cpus, r.cpuUS), append(rates, r.opsPerS), append(gcs, r.gcsPerOp)
					gcCPUs, gcEach = append(gcCPUs, r.gcCPUUS), append(gcEach, fmt.Sprintf("%.1f", r.gcCPUUS))
				}
				each := make([]string, len(cpus))
				for i, c := range cpus {
					each[i] = fmt.Sprintf("%.0f", c)
				}
				med := median(slices.Clone(cpus))
				spread := (slices.Max(cpus) - slices.Min(cpus)) / med * 100
				fmt.Printf("| %s | %s | %s | %.0f (%s) | ±%.0f %% | %.0f | %.4f | %.1f (%s) | %.0f |\n", store, s.name, w, med,
					strings.Join(each, ", "), spread/2, median(rates), median(gcs), median(gcCPUs), strings.Join(gcEach, ", "),
					float64(hwm[set][w])/(1<<20))
				b.ReportMetric(med, w+"-"+set+"-us/op")
			}
		}
	}
	for _, r := range rep.Results {
		if n := r.ErrorCount(); n > 0 {
			b.Errorf("%s on %s: %d errors %v", r.Workload, r.Set, n, r.Errors)
		}
	}
}

type gcSetting struct {
	name string
	env  []string
}

// gcBenchSettings reads BLOBGW_BENCH_GC: "name=K=V,K=V;name2=K=V".
func gcBenchSettings(b *testing.B) []gcSetting {
	b.Helper()
	spec := os.Getenv("BLOBGW_BENCH_GC")
	if spec == "" {
		spec = "gogc100=GOGC=100;gogc200=GOGC=200;gogc400=GOGC=400;off-limit256=GOGC=off,GOMEMLIMIT=256MiB"
	}
	var out []gcSetting
	for _, one := range strings.Split(spec, ";") {
		name, env, ok := strings.Cut(strings.TrimSpace(one), "=")
		if !ok || name == "" {
			b.Fatalf("BLOBGW_BENCH_GC: %q: want name=K=V[,K=V]", one)
		}
		out = append(out, gcSetting{name: name, env: config.ParseList(env)})
	}
	return out
}

// gcProc is a `blobgw serve` run with GODEBUG=gctrace=1: gcs counts the
// collections it finished (one trace line each), gcCPU the CPU time they
// report (assist, background, idle and the pauses, in ns).
type gcProc struct {
	url   string
	pid   int
	gcs   atomic.Int64
	gcCPU atomic.Int64
}

// startGCProc starts `bin serve` as startServeProc does, with env added to
// its environment and gctrace on; the trace lines are counted, other
// output goes to stderr.
func startGCProc(b *testing.B, bin, dataDir string, env []string, args ...string) *gcProc {
	b.Helper()
	addr := freeAddr(b)
	cmd := benchServe(bin, addr, dataDir, args...)
	cmd.Env = append(append(cmd.Env, "GODEBUG=gctrace=1"), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	p := &gcProc{url: "http://" + addr + "/" + config.DevAccountName + "/", pid: cmd.Process.Pid}
	done := make(chan struct{})
	go func() {
		defer close(done)
		countGCLines(stderr, &p.gcs, &p.gcCPU, os.Stderr)
	}()
	b.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		<-done
		cmd.Wait()
	})
	waitListening(b, addr, 600)
	return p
}

// countGCLines counts gctrace's lines ("gc N @...") in r, adds the CPU
// time each reports to cpu and copies every other line to w.
func countGCLines(r io.Reader, n, cpu *atomic.Int64, w io.Writer) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if bytes.HasPrefix(line, []byte("gc ")) && bytes.Contains(line, []byte(" @")) {
			n.Add(1)
			cpu.Add(gcTraceCPU(string(line)).Nanoseconds())
			continue
		}
		fmt.Fprintf(w, "%s\n", line)
	}
	io.Copy(io.Discard, r)
}

// gcTraceCPU is the CPU time of one gctrace line: the sum of its
// "A+B/C/D+E ms cpu" field (pause, assist, background, idle, pause).
func gcTraceCPU(line string) time.Duration {
	_, rest, ok := strings.Cut(line, " ms clock, ")
	if !ok {
		return 0
	}
	field, _, ok := strings.Cut(rest, " ms cpu")
	if !ok {
		return 0
	}
	var ms float64
	for _, f := range strings.FieldsFunc(field, func(r rune) bool { return r == '+' || r == '/' }) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return 0
		}
		ms += v
	}
	return time.Duration(ms * float64(time.Millisecond))
}
