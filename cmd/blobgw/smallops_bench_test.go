package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/blobgw/blobgw/internal/bench"
	"github.com/blobgw/blobgw/internal/config"
	"github.com/blobgw/blobgw/leasedb/pgtest"
)

// BenchmarkSmallOps measures blobgw against Azurite in one run on one
// machine: `blobgw serve` processes on SQLite + disk and on Postgres + disk,
// and Azurite's blob service, each driven in turn (alternating order) by
// the same internal/bench workloads: put-small, put-small-ifmatch,
// lease-cycle, rmw-hot, put-large, get-large, staged. It prints the table
// with the ratios to Azurite and, per workload, the CPU time per operation
// of each server process (from /proc/PID/stat: utime+stime of the
// gateway, of Azurite's node process, of the postmaster and all its
// backends) and of the benchmark client, and on Postgres the statements
// per operation other than BEGIN and COMMIT (pg_stat_statements, which
// does not see those sent inside a pgx batch), the collector and the
// intent pool's refills included.
//
// Then the database's own limit: pgbench at the same client count, one
// SELECT ... FOR UPDATE + UPDATE transaction on a random row of 100,000,
// in 3 rounds interleaved with 3 rounds of put-small-ifmatch on Postgres
// (one replica) in alternating order, the ratio of each round and their
// median and spread; pgbench on one hot row; and put-small-ifmatch over
// 1, 2 and 3 gateway replicas on that one Postgres, with the database CPU
// per operation. Postgres runs durable (fsync, synchronous_commit and
// full_page_writes on, as a deployment), for the gateways and pgbench
// alike.
//
// Knobs: BLOBGW_BENCH_DURATION (each timed phase, default 5s),
// BLOBGW_BENCH_CLIENTS (default 8), BLOBGW_BENCH_LARGE (bytes, default 16
// MiB). Figures from a shared machine are noisy: compare the ratios of one
// run, not figures of different runs.
//
//	go test ./cmd/blobgw -run '^$' -bench SmallOps -benchtime 1x -timeout 30m
func BenchmarkSmallOps(b *testing.B) {
	duration := envDuration(b, "BLOBGW_BENCH_DURATION", 5*time.Second)
	clients := int(envInt(b, "BLOBGW_BENCH_CLIENTS", 8))
	large := envInt(b, "BLOBGW_BENCH_LARGE", 16<<20)
	ctx := context.Background()
	dir := b.TempDir()
	bin := buildBlobgw(b, filepath.Join(dir, "blobgw"))

	az := startAzurite(b)
	// Durable, as a deployment runs it (pgtest's defaults turn fsync and
	// synchronous_commit off): the gateways and pgbench pay the same
	// commit flush.
	pg := startBenchPG(b, "-c", "fsync=on", "-c", "synchronous_commit=on", "-c", "full_page_writes=on",
		"-c", "shared_preload_libraries=pg_stat_statements", "-c", "pg_stat_statements.track_utility=on")
	dsn := pg.NewDatabase(b)
	admin, err := pgxpool.New(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(admin.Close)
	if _, err := admin.Exec(ctx, "CREATE EXTENSION pg_stat_statements"); err != nil {
		b.Fatal(err)
	}
	var fsync, syncCommit, fullPages string
	if err := admin.QueryRow(ctx, "SELECT current_setting('fsync'), current_setting('synchronous_commit'), current_setting('full_page_writes')").
		Scan(&fsync, &syncCommit, &fullPages); err != nil {
		b.Fatal(err)
	}
	if fsync != "on" || syncCommit != "on" || fullPages != "on" {
		b.Fatalf("Postgres not durable: fsync=%s synchronous_commit=%s full_page_writes=%s", fsync, syncCommit, fullPages)
	}
	var dbOID uint32
	if err := admin.QueryRow(ctx, "SELECT oid FROM pg_database WHERE datname = current_database()").Scan(&dbOID); err != nil {
		b.Fatal(err)
	}

	sqliteURL, sqlitePid := startServeProc(b, bin, filepath.Join(dir, "sqlite"))
	pgData := filepath.Join(dir, "pg")
	var pgURLs []string
	var pgPids []int
	for range 3 {
		u, pid := startServeProc(b, bin, pgData, "--metadata", dsn)
		pgURLs, pgPids = append(pgURLs, u), append(pgPids, pid)
	}

	ep := func(u string) bench.Endpoint {
		return bench.Endpoint{URL: u, Account: config.DevAccountName, Key: config.DevAccountKey}
	}
	// What each set's server is: its processes and whether its database
	// is the Postgres.
	type server struct {
		pids     []int
		postgres bool
	}
	servers := map[string]server{
		"gw-sqlite": {pids: []int{sqlitePid}},
		"azurite":   {pids: []int{az.pid}},
	}
	for n := 1; n <= 3; n++ {
		servers[fmt.Sprintf("gw-pg-%d", n)] = server{pids: pgPids[:n], postgres: true}
	}
	servers["gw-postgres"] = servers["gw-pg-1"]
	hook := func(set, workload string) func(*bench.Result) {
		srv := servers[set]
		if srv.postgres {
			if _, err := admin.Exec(ctx, "SELECT pg_stat_statements_reset()"); err != nil {
				b.Fatal(err)
			}
		}
		gw0, db0, me0 := cpuOf(srv.pids...), treeCPU(pg.Pid()), cpuOf(os.Getpid())
		return func(r *bench.Result) {
			if r.Ops == 0 {
				return
			}
			ops := float64(r.Ops)
			r.Extra = map[string]float64{
				"server-cpu-us/op": (cpuOf(srv.pids...) - gw0).Seconds() * 1e6 / ops,
				"client-cpu-us/op": (cpuOf(os.Getpid()) - me0).Seconds() * 1e6 / ops,
			}
			if !srv.postgres {
				return
			}
			r.Extra["db-cpu-us/op"] = (treeCPU(pg.Pid()) - db0).Seconds() * 1e6 / ops
			var stmts float64
			// Our own reset and this query are not the gateway's.
			// pg_stat_statements does not see the BEGIN and COMMIT the
			// store sends inside a pgx batch (leasedb/postgres
			// lazybegin.go) while it sees those sent alone, so
			// statements/op leaves every BEGIN and COMMIT out, and
			// transactions are not counted here: pg_stat_database's
			// counts reach it only when a backend flushes its statistics
			// (up to 10 s later when it goes idle), too late for a phase.
			// TestStatementsPerOperation counts both per request.
			if err := admin.QueryRow(ctx, `SELECT coalesce(sum(calls) FILTER (WHERE lower(query) NOT LIKE 'begin%' AND lower(query) NOT LIKE 'start%' AND lower(query) NOT LIKE 'commit%' AND lower(query) NOT LIKE 'rollback%'), 0)
				FROM pg_stat_statements WHERE dbid = $1 AND query NOT LIKE '%pg_stat_statements%'`, dbOID).Scan(&stmts); err != nil {
				b.Fatal(err)
			}
			r.Extra["statements/op"] = stmts / ops
		}
	}
	cfg := bench.Config{Clients: clients, Duration: duration, LargeSize: large, Progress: os.Stderr, Hook: hook}
	workloads := []string{"put-small", "put-small-ifmatch", "lease-cycle", "rmw-hot", "put-large", "get-large", "staged"}
	sets := []bench.Set{
		{Name: "gw-sqlite", Endpoints: []bench.Endpoint{ep(sqliteURL)}},
		{Name: "gw-postgres", Endpoints: []bench.Endpoint{ep(pgURLs[0])}},
		{Name: "azurite", Endpoints: []bench.Endpoint{ep(az.url)}},
	}
	rep, err := bench.Run(ctx, cfg, workloads, sets)
	if err != nil {
		b.Fatal(err)
	}
	fmt.Printf("\n== blobgw (SQLite + disk, Postgres + disk) and Azurite, %d clients, %s per phase\n", clients, duration)
	rep.WriteTable(os.Stdout)
	for _, ra := range rep.Ratios {
		b.ReportMetric(ra.Ops, ra.Workload+"-"+strings.TrimPrefix(ra.A, "gw-")+"-x")
	}
	var pgIfMatch float64
	for _, r := range rep.Results {
		if r.Workload == "put-small-ifmatch" && r.Set == "gw-postgres" {
			pgIfMatch = r.OpsPerS
		}
		if n := r.ErrorCount(); n > 0 {
			b.Errorf("%s on %s: %d errors %v", r.Workload, r.Set, n, r.Errors)
		}
		if r.LostUpdates != nil && *r.LostUpdates != 0 {
			b.Errorf("%s on %s: %d lost updates", r.Workload, r.Set, *r.LostUpdates)
		}
	}

	// The database's own limit at the same client count: pgbench rounds
	// interleaved with put-small-ifmatch rounds on one replica, in
	// alternating order (pgbench first, then the puts first, ...), so
	// that the machine's load drifts alike for both sides of each ratio.
	pgb, err := newPgbenchDB(pg, clients)
	if err != nil {
		b.Fatalf("pgbench: %v", err)
	}
	defer pgb.close()
	one := []bench.Set{{Name: "gw-postgres", Endpoints: []bench.Endpoint{ep(pgURLs[0])}}}
	const ratioRounds = 3
	var tpss, ratios []float64
	var pgbTxs int64
	var pgbenchCPU time.Duration
	fmt.Printf("\n== put-small-ifmatch on Postgres (one replica) and pgbench (SELECT ... FOR UPDATE + UPDATE, random rows), %d clients, %d interleaved rounds, fsync=%s synchronous_commit=%s full_page_writes=%s\n",
		clients, ratioRounds, fsync, syncCommit, fullPages)
	for i := range ratioRounds {
		var tps, ops float64
		pgbenchPhase := func() {
			cpu0 := treeCPU(pg.Pid())
			t, n, err := pgb.run(pgbenchRandomRow, duration)
			if err != nil {
				b.Fatalf("pgbench: %v", err)
			}
			pgbenchCPU += treeCPU(pg.Pid()) - cpu0
			pgbTxs += n
			tps = t
		}
		putPhase := func() {
			rep, err := bench.Run(ctx, cfg, []string{"put-small-ifmatch"}, one)
			if err != nil {
				b.Fatal(err)
			}
			r := rep.Results[0]
			if n := r.ErrorCount(); n > 0 {
				b.Errorf("put-small-ifmatch round %d: %d errors %v", i+1, n, r.Errors)
			}
			ops = r.OpsPerS
		}
		if i%2 == 0 {
			pgbenchPhase()
			putPhase()
		} else {
			putPhase()
			pgbenchPhase()
		}
		tpss, ratios = append(tpss, tps), append(ratios, ops/tps)
		fmt.Printf("round %d: pgbench %.0f tx/s, put-small-ifmatch %.1f ops/s: %.3fx\n", i+1, tps, ops, ops/tps)
	}
	hot, _, err := pgb.run(pgbenchOneRow, duration)
	if err != nil {
		b.Fatalf("pgbench: %v", err)
	}
	med, lo, hi := medianSpread(ratios)
	tps, _, _ := medianSpread(tpss)
	fmt.Printf("put-small-ifmatch ÷ pgbench: median %.3fx (%.3f–%.3fx over %d rounds); pgbench median %.0f tx/s on random rows, %.0f tx/s on one row, database CPU %.0f us/tx; the first table's put-small-ifmatch on Postgres is %.3fx that median\n",
		med, lo, hi, ratioRounds, tps, hot, pgbenchCPU.Seconds()*1e6/float64(pgbTxs), pgIfMatch/tps)
	b.ReportMetric(tps, "pgbench-tx/s")
	b.ReportMetric(med, "put-small-ifmatch-pg/pgbench-x")

	var rsets []bench.Set
	for _, n := range []int{2, 3, 1} {
		s := bench.Set{Name: fmt.Sprintf("gw-pg-%d", n)}
		for _, u := range pgURLs[:n] {
			s.Endpoints = append(s.Endpoints, ep(u))
		}
		rsets = append(rsets, s)
	}
	rrep, err := bench.Run(ctx, cfg, []string{"put-small-ifmatch"}, rsets)
	if err != nil {
		b.Fatal(err)
	}
	fmt.Printf("\n== put-small-ifmatch over 1, 2, 3 gateway replicas on one Postgres, %d clients\n", clients)
	rrep.WriteTable(os.Stdout)
	for _, r := range rrep.Results {
		b.ReportMetric(r.OpsPerS, "ifmatch-"+r.Set+"-ops/s")
	}
}

// medianSpread is the median of xs and their least and greatest.
func medianSpread(xs []float64) (med, lo, hi float64) {
	lo, hi = valueRange(xs)
	return median(xs), lo, hi
}

// benchServe is the command of a `blobgw serve` (bin) that a benchmark
// runs on addr: warnings only in its log, no configuration file, and no
// metrics listener, since several gateways run side by side and none may
// take the default metrics address (a later --metrics-listen in args
// wins).
func benchServe(bin, addr, dataDir string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, append([]string{"serve", "--listen", addr, "--data-dir", dataDir, "--log-level", "warn", "--metrics-listen", "off"}, args...)...)
	cmd.Env = append(os.Environ(), "BLOBGW_CONFIG=")
	return cmd
}

// startServeProc runs `blobgw serve` (bin) on a free port with args and
// returns its service URL and process id; it stops when b ends.
func startServeProc(b *testing.B, bin, dataDir string, args ...string) (string, int) {
	b.Helper()
	return startServeProcEnv(b, bin, dataDir, nil, args...)
}

// startServeProcEnv is startServeProc with env ("NAME=value" entries)
// added to the serve process's environment, after and so over the
// benchmark's own.
func startServeProcEnv(b *testing.B, bin, dataDir string, env []string, args ...string) (string, int) {
	b.Helper()
	addr := freeAddr(b)
	cmd := benchServe(bin, addr, dataDir, args...)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	waitListening(b, addr, 600)
	return "http://" + addr + "/" + config.DevAccountName + "/", cmd.Process.Pid
}

// clockTick is USER_HZ, the unit of /proc/PID/stat times (100 on every
// Linux architecture Go supports).
const clockTick = 10 * time.Millisecond

// procStat returns a process's own CPU time (utime+stime), that of its
// waited-for children (cutime+cstime), and its parent's pid.
func procStat(pid int) (self, children time.Duration, ppid int, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, 0, false
	}
	// The command name (field 2) may hold spaces; fields after it follow
	// the last ')'.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, 0, false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 15 {
		return 0, 0, 0, false
	}
	n := func(k int) time.Duration { v, _ := strconv.ParseInt(f[k], 10, 64); return time.Duration(v) * clockTick }
	// f[0] is field 3 (state): ppid is field 4, utime..cstime 14..17.
	ppid, _ = strconv.Atoi(f[1])
	return n(11) + n(12), n(13) + n(14), ppid, true
}

// cpuOf is the CPU time the processes have used (all their threads).
func cpuOf(pids ...int) time.Duration {
	var sum time.Duration
	for _, pid := range pids {
		self, _, _, _ := procStat(pid)
		sum += self
	}
	return sum
}

// treeCPU is the CPU time of a process, its live children and its
// children that exited (the postmaster and its backends): the difference
// of two readings is what the tree used in between, backends that came or
// went included.
func treeCPU(root int) time.Duration {
	self, exited, _, ok := procStat(root)
	if !ok {
		return 0
	}
	sum := self + exited
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == root {
			continue
		}
		if s, _, ppid, ok := procStat(pid); ok && ppid == root {
			sum += s
		}
	}
	return sum
}

var tpsRE = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)

// runPgbenchAround runs pgbench on a new database of pg with clients
// clients for d twice: a SELECT ... FOR UPDATE and an UPDATE of the same
// row of pgbench_accounts (scale 1: 100,000 rows) in one transaction, on a
// random row and then on one row. It returns both rates, the transactions
// both runs made and the CPU time the server spent on them. around, when
// not nil, is called right before each of the two timed runs with the
// database's name and "random" or "one row"; what it returns is called
// right after that run.
func runPgbenchAround(pg *pgtest.Server, clients int, d time.Duration, around func(db, run string) func()) (random, hot float64, txs int64, cpu time.Duration, err error) {
	p, err := newPgbenchDB(pg, clients)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	defer p.close()
	rate := func(what, script string) (float64, error) {
		if around != nil {
			defer around(p.name, what)()
		}
		tps, n, err := p.run(script, d)
		txs += n
		return tps, err
	}
	cpu0 := treeCPU(pg.Pid())
	if random, err = rate("random", pgbenchRandomRow); err != nil {
		return 0, 0, 0, 0, err
	}
	if hot, err = rate("one row", pgbenchOneRow); err != nil {
		return 0, 0, 0, 0, err
	}
	return random, hot, txs, treeCPU(pg.Pid()) - cpu0, nil
}

// The pgbench transactions: a SELECT ... FOR UPDATE and an UPDATE of the
// same row of pgbench_accounts, a random one of the 100,000 or always the
// first.
const (
	pgbenchTx        = "BEGIN;\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid FOR UPDATE;\nUPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;\nEND;\n"
	pgbenchRandomRow = "\\set aid random(1, 100000)\n" + pgbenchTx
	pgbenchOneRow    = "\\set aid 1\n" + pgbenchTx
)

// pgbenchDB is a database of pg initialized for pgbench (scale 1), on
// which timed runs can be made between other phases.
type pgbenchDB struct {
	pg      *pgtest.Server
	bin     string
	name    string
	dir     string
	clients int
}

func newPgbenchDB(pg *pgtest.Server, clients int) (*pgbenchDB, error) {
	bin, err := pgbenchBinary()
	if err != nil {
		return nil, err
	}
	name, _, err := pg.CreateDatabase(context.Background(), "pgbench")
	if err != nil {
		return nil, err
	}
	p := &pgbenchDB{pg: pg, bin: bin, name: name, clients: clients}
	if p.dir, err = os.MkdirTemp("", "blobgw-pgbench-"); err != nil {
		p.close()
		return nil, err
	}
	if _, err := p.exec("-i", "-q", "-s", "1"); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

func (p *pgbenchDB) close() {
	p.pg.DropDatabase(context.Background(), p.name)
	if p.dir != "" {
		os.RemoveAll(p.dir)
	}
}

func (p *pgbenchDB) exec(args ...string) (string, error) {
	conn := []string{"-h", "127.0.0.1", "-p", strconv.Itoa(p.pg.Port()), "-U", "postgres"}
	cmd := exec.Command(p.bin, append(append(args, conn...), p.name)...)
	cmd.Env = append(os.Environ(), "PGPASSWORD=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("pgbench %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

var pgbenchTxRE = regexp.MustCompile(`number of transactions actually processed: ([0-9]+)`)

// run runs script with p's clients for d (whole seconds, at least 1) and
// returns its rate and the transactions it made; args are more pgbench
// options ("-M", "prepared").
func (p *pgbenchDB) run(script string, d time.Duration, args ...string) (tps float64, txs int64, err error) {
	path := filepath.Join(p.dir, "script.sql")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		return 0, 0, err
	}
	out, err := p.exec(append([]string{"-n", "-c", strconv.Itoa(p.clients), "-j", "2", "-T", strconv.Itoa(max(1, int(d.Seconds()))), "-f", path}, args...)...)
	if err != nil {
		return 0, 0, err
	}
	m, n := tpsRE.FindStringSubmatch(out), pgbenchTxRE.FindStringSubmatch(out)
	if m == nil || n == nil {
		return 0, 0, fmt.Errorf("no tps in pgbench output:\n%s", out)
	}
	txs, _ = strconv.ParseInt(n[1], 10, 64)
	tps, err = strconv.ParseFloat(m[1], 64)
	return tps, txs, err
}

// pgbenchBinary prefers the pgbench beside the server binaries.
func pgbenchBinary() (string, error) {
	if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pgbench"); len(m) > 0 {
		return m[len(m)-1], nil
	}
	return exec.LookPath("pgbench")
}

func envDuration(b *testing.B, key string, def time.Duration) time.Duration {
	if v := os.Getenv(key); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatalf("%s: %v", key, err)
		}
		return d
	}
	return def
}

func envInt(b *testing.B, key string, def int64) int64 {
	if v := os.Getenv(key); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			b.Fatalf("%s: %v", key, err)
		}
		return n
	}
	return def
}
