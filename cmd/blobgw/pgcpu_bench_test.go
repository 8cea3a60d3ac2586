package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/blobgw/blobgw/internal/bench"
)

// BenchmarkPostgresCPU shows where Postgres spends its CPU on small Put
// Blobs (put-small-ifmatch, put-small) through `blobgw serve` on Postgres
// + disk: per timed phase, the server's CPU per operation split by process
// (this gateway's backends, the other databases' backends, walwriter,
// background writer, checkpointer, autovacuum, exited children), the WAL
// per operation (pg_stat_wal: records, full-page images, bytes), the
// tables' inserts, updates and HOT updates per operation
// (pg_stat_user_tables), and the statements by time (pg_stat_statements
// with track_planning: calls and plans per operation, planning and
// execution µs per call).
//
// The server runs with production durability (fsync, synchronous_commit
// and full_page_writes on, unlike pgtest's default), so commit and WAL
// costs are what a real deployment pays. BLOBGW_BENCH_PG_ARGS adds
// postgres settings ("-c name=value ..."). With BLOBGW_BENCH_BEFORE naming
// another blobgw binary, it runs beside this one on a database of its own
// on the same server and the two are driven in alternating order in the
// same run:
//
//	BLOBGW_BENCH_BEFORE=/tmp/blobgw-before go test ./cmd/blobgw -run '^$' -bench PostgresCPU -benchtime 1x -timeout 30m
//
// BLOBGW_BENCH_BEFORE_SQL and BLOBGW_BENCH_AFTER_SQL are statements run on
// that set's database after the migrations, before its gateway connects
// ($DB: the database's name); with BLOBGW_BENCH_BEFORE_SQL alone, "before"
// is this binary too, so one setting is compared side by side:
//
//	BLOBGW_BENCH_BEFORE_SQL='ALTER DATABASE $DB SET plan_cache_mode = force_custom_plan' go test ./cmd/blobgw -run '^$' -bench PostgresCPU -benchtime 1x
//
// BLOBGW_BENCH_BEFORE_DSN and BLOBGW_BENCH_AFTER_DSN are appended to that
// set's gateway DSN (pgxpool settings, say "&pool_max_conns=4"); with
// BLOBGW_BENCH_BEFORE_DSN alone, "before" is this binary too. Likewise
// BLOBGW_BENCH_BEFORE_ENV and BLOBGW_BENCH_AFTER_ENV, NAME=value entries
// added to that set's serve environment:
//
//	BLOBGW_BENCH_BEFORE_ENV=GOMAXPROCS=1 go test ./cmd/blobgw -run '^$' -bench PostgresCPU -benchtime 1x
//
// Every phase also samples pg_stat_activity every 5 ms (waitSampler): the
// share of the gateway's backends running, waiting on a lock or on the WAL
// flush, or idle (waiting for the gateway); and after the phases pgbench
// runs on the same server with the same sampling, for the ratio.
//
// As BenchmarkGatewayCPU, the database's and the gateway's CPU per
// operation are printed round by round with their median and, for a
// before/after pair, the per-round ratio's median and range
// (<workload>-db-cpu-after/before-x), before the summed report.
//
// Knobs as BenchmarkGatewayCPU: BLOBGW_BENCH_DURATION (default 5s),
// BLOBGW_BENCH_CLIENTS (default 8), BLOBGW_BENCH_ROUNDS (default 2).
func BenchmarkPostgresCPU(b *testing.B) {
	duration, clients, rounds := cpuBenchKnobs(b)
	ctx := context.Background()
	dir, bins := cpuBenchBins(b)
	if _, ok := bins["before"]; !ok && (os.Getenv("BLOBGW_BENCH_BEFORE_SQL") != "" || os.Getenv("BLOBGW_BENCH_BEFORE_DSN") != "") {
		bins["before"] = bins["after"] // the same binary, another setting
	}
	args := []string{"-c", "fsync=on", "-c", "synchronous_commit=on", "-c", "full_page_writes=on",
		"-c", "shared_preload_libraries=pg_stat_statements", "-c", "pg_stat_statements.track_planning=on",
		"-c", "pg_stat_statements.track_utility=on", "-c", "pg_stat_statements.max=1000"}
	args = append(args, strings.Fields(os.Getenv("BLOBGW_BENCH_PG_ARGS"))...)
	pg := startBenchPG(b, args...)
	admin, err := pgxpool.New(ctx, pg.DSN("postgres")+"&pool_max_conns=1")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(admin.Close)
	if _, err := admin.Exec(ctx, "CREATE EXTENSION pg_stat_statements; CREATE EXTENSION pg_walinspect"); err != nil {
		b.Fatal(err)
	}

	type gw struct {
		pid  int
		db   string
		oid  uint32
		pool *pgxpool.Pool // the gateway's database, for its table counters
	}
	gws := map[string]*gw{}
	var sets []bench.Set
	for _, which := range []string{"before", "after"} {
		bin, ok := bins[which]
		if !ok {
			continue
		}
		name, dsn, err := pg.CreateDatabase(ctx, which)
		if err != nil {
			b.Fatal(err)
		}
		// Named, so the wait sampler leaves this connection out.
		pool, err := pgxpool.New(ctx, dsn+"&pool_max_conns=1&application_name="+benchAppName)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(pool.Close)
		g := &gw{db: name, pool: pool}
		if err := admin.QueryRow(ctx, "SELECT oid FROM pg_database WHERE datname = $1", name).Scan(&g.oid); err != nil {
			b.Fatal(err)
		}
		// The schema first, then what this set's database is to differ
		// by (BLOBGW_BENCH_BEFORE_SQL, BLOBGW_BENCH_AFTER_SQL), then the
		// gateway, whose connections see it.
		if out, err := exec.Command(bin, "migrate", "--data-dir", filepath.Join(dir, which), "--metadata", dsn).CombinedOutput(); err != nil {
			b.Fatalf("migrate: %v\n%s", err, out)
		}
		if q := os.Getenv("BLOBGW_BENCH_" + strings.ToUpper(which) + "_SQL"); q != "" {
			if _, err := pool.Exec(ctx, strings.ReplaceAll(q, "$DB", name)); err != nil {
				b.Fatalf("%s: %v", q, err)
			}
			pool.Reset()
		}
		u, pid := startServeProcEnv(b, bin, filepath.Join(dir, which), cpuBenchEnv(b, which), "--metadata", dsn+os.Getenv("BLOBGW_BENCH_"+strings.ToUpper(which)+"_DSN"))
		g.pid = pid
		gws[which] = g
		sets = append(sets, bench.Set{Name: which, Endpoints: devEndpoint(u)})
	}

	details := map[string]*pgPhase{}
	// The figures of every round apart, beside the report's sums.
	gwRounds, dbRounds := newRoundFigures("gw-cpu-us/op"), newRoundFigures("db-cpu-us/op")
	hook := func(set, workload string) func(*bench.Result) {
		g := gws[set]
		if _, err := admin.Exec(ctx, "SELECT pg_stat_statements_reset()"); err != nil {
			b.Fatal(err)
		}
		wal0, err := readWAL(ctx, admin)
		if err != nil {
			b.Fatal(err)
		}
		var lsn0 string
		if err := admin.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&lsn0); err != nil {
			b.Fatal(err)
		}
		tab0, err := readTables(ctx, g.pool)
		if err != nil {
			b.Fatal(err)
		}
		stopPerf := perfRecord(b, pg.Pid(), g.db, set+"-"+workload)
		waits, err := startWaitSampler(ctx, pg.DSN("postgres"), g.db, waitEvery)
		if err != nil {
			b.Fatal(err)
		}
		cpu0 := pgCPUByRole(pg.Pid(), g.db)
		gw0, me0 := cpuOf(g.pid), cpuOf(os.Getpid())
		return func(r *bench.Result) {
			cpu1 := pgCPUByRole(pg.Pid(), g.db)
			gw1, me1 := cpuOf(g.pid), cpuOf(os.Getpid())
			stopPerf()
			wp := waits.Stop()
			// Backends report table counters when they go idle, at most
			// once a second.
			time.Sleep(1500 * time.Millisecond)
			wal1, err := readWAL(ctx, admin)
			if err != nil {
				b.Fatal(err)
			}
			recs, err := readWALRecords(ctx, admin, lsn0)
			if err != nil {
				b.Fatal(err)
			}
			tab1, err := readTables(ctx, g.pool)
			if err != nil {
				b.Fatal(err)
			}
			stmts, err := readStatements(ctx, admin, g.oid)
			if err != nil {
				b.Fatal(err)
			}
			if r.Ops == 0 {
				gwRounds.add(workload, set, math.NaN())
				dbRounds.add(workload, set, math.NaN())
				return
			}
			ops := float64(r.Ops)
			var total time.Duration
			for _, d := range cpu1 {
				total += d
			}
			for _, d := range cpu0 {
				total -= d
			}
			r.Extra = map[string]float64{
				"gw-cpu-us/op":     (gw1 - gw0).Seconds() * 1e6 / ops,
				"client-cpu-us/op": (me1 - me0).Seconds() * 1e6 / ops,
				"db-cpu-us/op":     total.Seconds() * 1e6 / ops,
				"wal-bytes/op":     float64(wal1.bytes-wal0.bytes) / ops,
			}
			gwRounds.add(workload, set, r.Extra["gw-cpu-us/op"])
			dbRounds.add(workload, set, r.Extra["db-cpu-us/op"])
			key := set + " " + workload
			d := details[key]
			if d == nil {
				d = &pgPhase{cpu: map[string]time.Duration{}, walRecs: map[string]walCounts{}, tables: map[string]tableCounts{}, stmts: map[string]*stmtStat{}}
				details[key] = d
			}
			d.ops += r.Ops
			d.waits.add(wp)
			for k, v := range cpu1 {
				d.cpu[k] += v - cpu0[k]
			}
			for k, v := range cpu0 {
				if _, ok := cpu1[k]; !ok {
					d.cpu[k] -= v
				}
			}
			for k, v := range recs {
				d.walRecs[k] = d.walRecs[k].add(v)
			}
			d.wal.records += wal1.records - wal0.records
			d.wal.fpi += wal1.fpi - wal0.fpi
			d.wal.bytes += wal1.bytes - wal0.bytes
			for k, v := range tab1 {
				o := tab0[k]
				s := d.tables[k]
				s.ins += v.ins - o.ins
				s.upd += v.upd - o.upd
				s.hot += v.hot - o.hot
				s.del += v.del - o.del
				d.tables[k] = s
			}
			for _, s := range stmts {
				t := d.stmts[s.query]
				if t == nil {
					t = &stmtStat{query: s.query}
					d.stmts[s.query] = t
				}
				t.calls += s.calls
				t.plans += s.plans
				t.planMS += s.planMS
				t.execMS += s.execMS
				t.walBytes += s.walBytes
				t.walFPI += s.walFPI
			}
		}
	}
	cfg := bench.Config{Clients: clients, Duration: duration, Rounds: rounds, Progress: os.Stderr, Hook: hook}
	rep, err := bench.Run(ctx, cfg, []string{"put-small-ifmatch", "put-small"}, sets)
	if err != nil {
		b.Fatal(err)
	}
	fmt.Printf("\n== Postgres CPU per small Put Blob, %d clients, %s per phase, %d rounds, args %q\n", clients, duration, rounds, os.Getenv("BLOBGW_BENCH_PG_ARGS"))
	pairs := []roundPair{{"", "before", "after"}}
	dbRounds.write(os.Stdout, pairs)
	gwRounds.write(os.Stdout, pairs)
	fmt.Println("\nsums of the rounds:")
	rep.WriteTable(os.Stdout)
	for _, w := range dbRounds.workloads {
		if m := median(dbRounds.ratios(w, pairs[0])); !math.IsNaN(m) {
			b.ReportMetric(m, w+"-db-cpu-after/before-x")
		}
	}
	keys := make([]string, 0, len(details))
	for k := range details {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		d := details[k]
		d.write(k)
	}

	// The database's own limit on the same server right after: pgbench's
	// SELECT ... FOR UPDATE + UPDATE at the same client count, its waits
	// sampled as the gateways' were.
	pgbWaits := map[string]waitProfile{}
	var pgbClient time.Duration // pgbench's own CPU in the random-row run
	tps, hot, pgbTx, pgbCPU, err := runPgbenchAround(pg, clients, duration, func(db, run string) func() {
		w, err := startWaitSampler(ctx, pg.DSN("postgres"), db, waitEvery)
		if err != nil {
			b.Fatal(err)
		}
		c0 := childrenCPU()
		return func() {
			pgbWaits[run] = w.Stop()
			if run == "random" {
				pgbClient = childrenCPU() - c0
			}
		}
	})
	if err != nil {
		b.Fatalf("pgbench: %v", err)
	}
	fmt.Printf("\n== pgbench, %d clients, same server: %.0f tx/s random rows, %.0f tx/s one row, %.0f us database CPU per tx\n",
		clients, tps, hot, pgbCPU.Seconds()*1e6/float64(max(pgbTx, 1)))
	// pgbench's client CPU per transaction of the random-row run; the
	// cores in use are rate × CPU per operation of server and client.
	pgbClientUS := pgbClient.Seconds() * 1e6 / (tps * max(1, duration.Seconds()))
	pgbDBUS := pgbCPU.Seconds() * 1e6 / float64(max(pgbTx, 1))
	fmt.Printf("pgbench random rows: client CPU %.0f us/tx; server + client %.0f us/tx: %.2f cores busy\n",
		pgbClientUS, pgbDBUS+pgbClientUS, tps*(pgbDBUS+pgbClientUS)/1e6)
	for _, run := range []string{"random", "one row"} {
		pgbWaits[run].write(os.Stdout, "pgbench "+run, 8)
	}
	for _, r := range rep.Results {
		if r.Workload == "put-small-ifmatch" {
			all := r.Extra["db-cpu-us/op"] + r.Extra["gw-cpu-us/op"] + r.Extra["client-cpu-us/op"]
			fmt.Printf("put-small-ifmatch on %s: %.0f ops/s, %.3fx pgbench's random-row rate; database + gateway + client %.0f us/op: %.2f cores busy\n",
				r.Set, r.OpsPerS, r.OpsPerS/tps, all, r.OpsPerS*all/1e6)
			b.ReportMetric(r.OpsPerS/tps, "put-small-ifmatch-"+r.Set+"/pgbench-x")
		}
	}
	for _, r := range rep.Results {
		if n := r.ErrorCount(); n > 0 {
			b.Errorf("%s on %s: %d errors %v", r.Workload, r.Set, n, r.Errors)
		}
		for _, m := range []string{"db-cpu-us/op", "wal-bytes/op"} {
			if v, ok := r.Extra[m]; ok {
				b.ReportMetric(v, r.Workload+"-"+r.Set+"-"+m)
			}
		}
	}
}

// pgPhase sums what one set and workload cost the server over the rounds.
type pgPhase struct {
	ops int64
	cpu map[string]time.Duration
	wal walCounts
	// walRecs is the WAL by record type (records, full-page images,
	// bytes; fpi holds the bytes of full-page images), from pg_walinspect.
	walRecs map[string]walCounts
	tables  map[string]tableCounts
	stmts   map[string]*stmtStat
	waits   waitProfile
}

func (d *pgPhase) write(title string) {
	ops := float64(d.ops)
	us := func(t time.Duration) float64 { return t.Seconds() * 1e6 / ops }
	fmt.Printf("\n-- %s: %d ops\n", title, d.ops)
	roles := make([]string, 0, len(d.cpu))
	var total time.Duration
	for r, t := range d.cpu {
		roles = append(roles, r)
		total += t
	}
	sort.Slice(roles, func(i, j int) bool { return d.cpu[roles[i]] > d.cpu[roles[j]] })
	fmt.Printf("server CPU %.0f us/op:", us(total))
	for _, r := range roles {
		if d.cpu[r] != 0 {
			fmt.Printf(" %s %.0f", r, us(d.cpu[r]))
		}
	}
	fmt.Printf("\nWAL per op: %.2f records, %.3f full-page images, %.0f bytes\n",
		float64(d.wal.records)/ops, float64(d.wal.fpi)/ops, float64(d.wal.bytes)/ops)
	types := make([]string, 0, len(d.walRecs))
	for t := range d.walRecs {
		types = append(types, t)
	}
	sort.Slice(types, func(i, j int) bool { return d.walRecs[types[i]].bytes > d.walRecs[types[j]].bytes })
	for i, t := range types {
		if i == 10 {
			break
		}
		c := d.walRecs[t]
		fmt.Printf("  WAL %-28s per op: %.2f records %.0f bytes (%.0f of them full-page images)\n", t, float64(c.records)/ops, float64(c.bytes)/ops, float64(c.fpi)/ops)
	}
	var mx walCounts
	for t, c := range d.walRecs {
		if strings.HasPrefix(t, "MultiXact/") {
			mx = mx.add(c)
		}
	}
	fmt.Printf("  WAL MultiXact/* per op: %.3f records (a FOR SHARE lock joining another's makes one)\n", float64(mx.records)/ops)
	d.waits.write(os.Stdout, title, 12)
	tabs := make([]string, 0, len(d.tables))
	for t, c := range d.tables {
		if c.ins+c.upd+c.del > 0 {
			tabs = append(tabs, t)
		}
	}
	sort.Strings(tabs)
	for _, t := range tabs {
		c := d.tables[t]
		fmt.Printf("table %-16s per op: %.2f ins %.2f upd (%.2f HOT) %.2f del\n", t,
			float64(c.ins)/ops, float64(c.upd)/ops, float64(c.hot)/ops, float64(c.del)/ops)
	}
	st := make([]*stmtStat, 0, len(d.stmts))
	for _, s := range d.stmts {
		st = append(st, s)
	}
	sort.Slice(st, func(i, j int) bool { return st[i].planMS+st[i].execMS > st[j].planMS+st[j].execMS })
	fmt.Printf("%8s %7s %9s %9s %9s %9s  %s\n", "calls/op", "plans/c", "plan-us/c", "exec-us/c", "us/op", "wal-B/c", "statement")
	for i, s := range st {
		if i == 12 {
			break
		}
		c := float64(max(s.calls, 1))
		q := strings.Join(strings.Fields(s.query), " ")
		if len(q) > 70 {
			q = q[:70]
		}
		fmt.Printf("%8.3f %7.2f %9.1f %9.1f %9.1f %9.0f  %s\n", float64(s.calls)/ops, float64(s.plans)/c,
			s.planMS*1e3/c, s.execMS*1e3/c, (s.planMS+s.execMS)*1e3/ops, float64(s.walBytes)/c, q)
	}
}

type walCounts struct{ records, fpi, bytes int64 }

func readWAL(ctx context.Context, db *pgxpool.Pool) (walCounts, error) {
	var w walCounts
	err := db.QueryRow(ctx, "SELECT wal_records, wal_fpi, wal_bytes::bigint FROM pg_stat_wal").Scan(&w.records, &w.fpi, &w.bytes)
	return w, err
}

func (w walCounts) add(v walCounts) walCounts {
	return walCounts{w.records + v.records, w.fpi + v.fpi, w.bytes + v.bytes}
}

// readWALRecords is the WAL written since lsn by record type.
func readWALRecords(ctx context.Context, db *pgxpool.Pool, lsn string) (map[string]walCounts, error) {
	rows, err := db.Query(ctx, `SELECT "resource_manager/record_type", count, fpi_size, combined_size
		FROM pg_get_wal_stats_till_end_of_wal($1::pg_lsn, true) WHERE count > 0`, lsn)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	m := map[string]walCounts{}
	for rows.Next() {
		var t string
		var c walCounts
		if err := rows.Scan(&t, &c.records, &c.fpi, &c.bytes); err != nil {
			return nil, err
		}
		m[t] = c
	}
	return m, rows.Err()
}

type tableCounts struct{ ins, upd, hot, del int64 }

func readTables(ctx context.Context, db *pgxpool.Pool) (map[string]tableCounts, error) {
	rows, err := db.Query(ctx, "SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del FROM pg_stat_user_tables")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	m := map[string]tableCounts{}
	for rows.Next() {
		var name string
		var c tableCounts
		if err := rows.Scan(&name, &c.ins, &c.upd, &c.hot, &c.del); err != nil {
			return nil, err
		}
		m[name] = c
	}
	return m, rows.Err()
}

type stmtStat struct {
	query          string
	calls, plans   int64
	planMS, execMS float64
	walBytes       int64
	walFPI         int64
}

func readStatements(ctx context.Context, db *pgxpool.Pool, oid uint32) ([]stmtStat, error) {
	rows, err := db.Query(ctx, `SELECT query, calls, plans, total_plan_time, total_exec_time, wal_bytes::bigint, wal_fpi
		FROM pg_stat_statements WHERE dbid = $1`, oid)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []stmtStat
	for rows.Next() {
		var s stmtStat
		if err := rows.Scan(&s.query, &s.calls, &s.plans, &s.planMS, &s.execMS, &s.walBytes, &s.walFPI); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// perfRecord samples the backends of database db with `perf record -g`
// into $BLOBGW_BENCH_PERF/<name>-<n>.data when that variable names a
// directory; it returns what stops it.
func perfRecord(b *testing.B, root int, db, name string) func() {
	dir := os.Getenv("BLOBGW_BENCH_PERF")
	if dir == "" {
		return func() {}
	}
	var pids []string
	for _, pid := range pgBackends(root, db) {
		pids = append(pids, fmt.Sprint(pid))
	}
	if len(pids) == 0 {
		return func() {}
	}
	out, _ := filepath.Glob(filepath.Join(dir, name+"-*.data"))
	path := filepath.Join(dir, fmt.Sprintf("%s-%d.data", name, len(out)+1))
	cmd := exec.Command("perf", "record", "-q", "-e", "cpu-clock", "-g", "-o", path, "-p", strings.Join(pids, ","))
	if err := cmd.Start(); err != nil {
		b.Fatalf("perf: %v", err)
	}
	return func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}
}

// pgBackends lists the backends of database db.
func pgBackends(root int, db string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		if _, _, ppid, ok := procStat(pid); !ok || ppid != root {
			continue
		}
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if f := strings.Fields(strings.ReplaceAll(string(cmd), "\x00", " ")); len(f) >= 3 && f[2] == db {
			pids = append(pids, pid)
		}
	}
	return pids
}

// pgCPUByRole is the CPU time of the postmaster's process tree by role:
// the backends of database db ("backend"), other backends ("other
// backends"), each background process by its title (walwriter,
// checkpointer, ...), the postmaster itself and its children that exited
// (autovacuum workers, mostly).
func pgCPUByRole(root int, db string) map[string]time.Duration {
	m := map[string]time.Duration{}
	self, exited, _, ok := procStat(root)
	if !ok {
		return m
	}
	m["postmaster"] = self
	m["exited"] = exited
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil || pid == root {
			continue
		}
		s, _, ppid, ok := procStat(pid)
		if !ok || ppid != root {
			continue
		}
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		title := strings.TrimPrefix(strings.TrimRight(strings.ReplaceAll(string(cmd), "\x00", " "), " "), "postgres: ")
		f := strings.Fields(title)
		role := title
		switch {
		case len(f) >= 3 && strings.Contains(f[2], "127.0.0.1") || len(f) >= 3 && strings.Contains(f[2], "["):
			if f[1] == db {
				role = "backend"
			} else {
				role = "other backends"
			}
		case strings.HasPrefix(title, "autovacuum worker"):
			role = "autovacuum worker"
		}
		m[role] += s
	}
	return m
}
