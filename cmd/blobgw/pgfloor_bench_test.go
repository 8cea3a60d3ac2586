package main

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/blobgw/blobgw/internal/bench"
)

// BenchmarkPostgresFloor measures what one durable small write costs this
// Postgres at its least, beside our conditional Put Blob, in one run on one
// server (fsync, synchronous_commit and full_page_writes on, as
// BenchmarkSmallOps and BenchmarkPostgresCPU run it): how far a small
// conditional Put Blob's database CPU is over the floor of "one durable
// upsert of a row shaped like a blobs row". Every variant runs with
// BLOBGW_BENCH_CLIENTS clients (default 8) for BLOBGW_BENCH_DURATION
// (default 5s, whole seconds), BLOBGW_BENCH_ROUNDS rounds (default 3), the
// order of the variants reversed every other round:
//
//   - pgbench: pgbench's SELECT ... FOR UPDATE + UPDATE of one of
//     pgbench_accounts' 100,000 rows (BenchmarkSmallOps' transaction, three
//     round trips), -M prepared;
//   - upsert-random, upsert-hot, upsert-own: BEGIN, one INSERT ... ON
//     CONFLICT DO UPDATE of a row of a table like blobs (its columns,
//     defaults and indexes, a 5.5 KB extents text that does not compress,
//     so it is stored out of line as a small blob's is) and COMMIT, sent as
//     one round trip (pgbench's pipeline), over a random one of 10,000
//     rows, over one row for every client, and over one row per client
//     (the shape of put-small-ifmatch, where each client overwrites its
//     own blob);
//   - locked-random, locked-hot, locked-own: the same, the statement also
//     taking pg_advisory_xact_lock_shared on the container's key and
//     pg_advisory_xact_lock on the name's, and reading the row FOR UPDATE
//     before its upsert, as oneTripSQL does (its shape without the
//     container row, the settings and the conditions);
//   - put-small-ifmatch: `blobgw serve` (this package, on a database of its
//     own on the same server) driven by `blobgw bench`'s put-small-ifmatch;
//   - locked-own-paced: locked-own held to put-small-ifmatch's rate of its
//     latest round (pgbench -R): a server's CPU per commit falls as more
//     commits share one WAL flush, and the gateway and its client leave
//     the database fewer cycles, so its rate is lower than the others'.
//
// Per variant it prints, round by round and as the median with its range:
// the transactions (or operations) a second, the server's CPU per
// transaction (utime+stime of the postmaster, its backends and the
// children that exited, from /proc: every process of the server, as
// BenchmarkPostgresCPU counts it), the WAL per transaction (the insert
// position's advance), for put-small-ifmatch the gateway's CPU, and the
// statements' execution time per call and per transaction
// (pg_stat_statements, loaded for every variant alike):
//
//	BLOBGW_BENCH_DURATION=5s BLOBGW_BENCH_ROUNDS=3 go test ./cmd/blobgw -run '^$' -bench PostgresFloor -benchtime 1x -timeout 20m
func BenchmarkPostgresFloor(b *testing.B) {
	duration, clients, _ := cpuBenchKnobs(b)
	rounds := int(envInt(b, "BLOBGW_BENCH_ROUNDS", 3))
	ctx := context.Background()
	dir, bins := cpuBenchBins(b)
	pg := startBenchPG(b, "-c", "fsync=on", "-c", "synchronous_commit=on", "-c", "full_page_writes=on",
		"-c", "shared_preload_libraries=pg_stat_statements", "-c", "pg_stat_statements.max=1000")
	admin, err := pgxpool.New(ctx, pg.DSN("postgres")+"&pool_max_conns=1")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(admin.Close)
	if _, err := admin.Exec(ctx, "CREATE EXTENSION pg_stat_statements"); err != nil {
		b.Fatal(err)
	}
	dbOID := func(name string) uint32 {
		var oid uint32
		if err := admin.QueryRow(ctx, "SELECT oid FROM pg_database WHERE datname = $1", name).Scan(&oid); err != nil {
			b.Fatal(err)
		}
		return oid
	}

	// pgbench's own database (pgbench_accounts, scale 1).
	pgb, err := newPgbenchDB(pg, clients)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pgb.close)

	// A database of its own with blobgw's schema.
	migrated := func(hint string) (name, dsn string) {
		name, dsn, err := pg.CreateDatabase(ctx, hint)
		if err != nil {
			b.Fatal(err)
		}
		if out, err := exec.Command(bins["after"], "migrate", "--data-dir", filepath.Join(dir, hint), "--metadata", dsn).CombinedOutput(); err != nil {
			b.Fatalf("migrate: %v\n%s", err, out)
		}
		return name, dsn
	}
	// The floor's table, like blobs.
	floorDB, floorDSN := migrated("floor")
	floor, err := pgxpool.New(ctx, floorDSN+"&pool_max_conns=1")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(floor.Close)
	body := floorBody()
	if _, err := floor.Exec(ctx, "CREATE TABLE floor_blobs (LIKE blobs INCLUDING ALL)"); err != nil {
		b.Fatal(err)
	}
	// 10,000 rows, each with its own 5.5 KB extents (out of line).
	if _, err := floor.Exec(ctx, `INSERT INTO floor_blobs (`+floorCols+`)
		SELECT `+strings.NewReplacer(":id", "g", ":r", "g").Replace(floorValues(body))+` FROM generate_series(1, `+strconv.Itoa(floorRows)+`) AS g`); err != nil {
		b.Fatal(err)
	}
	if _, err := floor.Exec(ctx, "VACUUM ANALYZE floor_blobs"); err != nil {
		b.Fatal(err)
	}
	floorRun := &pgbenchDB{pg: pg, bin: pgb.bin, name: floorDB, dir: pgb.dir, clients: clients}

	// The gateway, on a database of its own.
	gwDB, gwDSN := migrated("gw")
	u, gwPid := startServeProcEnv(b, bins["after"], filepath.Join(dir, "gw"), nil, "--metadata", gwDSN)
	sets := []bench.Set{{Name: "after", Endpoints: devEndpoint(u)}}

	type variant struct {
		name   string
		db     *pgbenchDB
		script string
		oid    uint32 // its database's, for its statements
		// paced: at the rate of put-small-ifmatch's latest round
		// (pgbench -R), so that commits share WAL flushes as the
		// gateway's do.
		paced bool
	}
	names := map[string]string{"random": "\\set id random(1, " + strconv.Itoa(floorRows) + ")\n", "hot": "\\set id 1\n", "own": "\\set id :client_id + 1\n"}
	variants := []variant{{name: "pgbench", db: pgb, script: pgbenchRandomRow, oid: dbOID(pgb.name)}}
	for _, kind := range []string{"upsert", "locked"} {
		for _, n := range []string{"random", "hot", "own"} {
			variants = append(variants, variant{name: kind + "-" + n, db: floorRun, script: names[n] + floorScript(kind == "locked", body), oid: dbOID(floorDB)})
		}
	}
	variants = append(variants, variant{name: "put-small-ifmatch", oid: dbOID(gwDB)},
		variant{name: "locked-own-paced", db: floorRun, script: names["own"] + floorScript(true, body), oid: dbOID(floorDB), paced: true})
	var putRate float64 // put-small-ifmatch's latest

	type figs struct {
		rate, cpu, wal, gw []float64
		txs                int64
		stmts              map[string]*stmtStat
	}
	res := map[string]*figs{}
	lsn := func() int64 {
		var n int64
		if err := admin.QueryRow(ctx, "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint").Scan(&n); err != nil {
			b.Fatal(err)
		}
		return n
	}
	for round := range rounds {
		order := append([]variant(nil), variants...)
		if round%2 == 1 {
			for i, j := 0, len(order)-1; i < j; i, j = i+1, j-1 {
				order[i], order[j] = order[j], order[i]
			}
		}
		for _, v := range order {
			f := res[v.name]
			if f == nil {
				f = &figs{}
				res[v.name] = f
			}
			if _, err := admin.Exec(ctx, "SELECT pg_stat_statements_reset()"); err != nil {
				b.Fatal(err)
			}
			if v.db == nil {
				var cpu0, gw0 time.Duration
				var wal0 int64
				hook := func(set, workload string) func(*bench.Result) {
					wal0, cpu0, gw0 = lsn(), treeCPU(pg.Pid()), cpuOf(gwPid)
					return func(r *bench.Result) {
						cpu, gw, wal := treeCPU(pg.Pid())-cpu0, cpuOf(gwPid)-gw0, lsn()-wal0
						ops := float64(max(r.Ops, 1))
						putRate = float64(r.Ops) / max(r.Seconds, 1e-9) // OpsPerS is set after the hook
						f.rate = append(f.rate, putRate)
						f.cpu = append(f.cpu, cpu.Seconds()*1e6/ops)
						f.gw = append(f.gw, gw.Seconds()*1e6/ops)
						f.txs += r.Ops
						f.wal = append(f.wal, float64(wal)/ops)
						if n := r.ErrorCount(); n > 0 {
							b.Errorf("put-small-ifmatch: %d errors %v", n, r.Errors)
						}
					}
				}
				cfg := bench.Config{Clients: clients, Duration: duration, Rounds: 1, Hook: hook}
				if _, err := bench.Run(ctx, cfg, []string{"put-small-ifmatch"}, sets); err != nil {
					b.Fatal(err)
				}
			} else {
				wal0, cpu0 := lsn(), treeCPU(pg.Pid())
				args := []string{"-M", "prepared"}
				if v.paced {
					args = append(args, "-R", strconv.Itoa(max(1, int(putRate))))
				}
				tps, txs, err := v.db.run(v.script, duration, args...)
				if err != nil {
					b.Fatalf("%s: %v", v.name, err)
				}
				// pgbench's backends exit after it returns: their CPU is
				// the postmaster's exited children's only once it has
				// reaped them (read before, it is counted nowhere).
				for end := time.Now().Add(5 * time.Second); len(pgBackends(pg.Pid(), v.db.name)) > 0 && time.Now().Before(end); {
					time.Sleep(20 * time.Millisecond)
				}
				time.Sleep(100 * time.Millisecond)
				cpu, wal := treeCPU(pg.Pid())-cpu0, lsn()-wal0
				n := float64(max(txs, 1))
				f.rate = append(f.rate, tps)
				f.cpu = append(f.cpu, cpu.Seconds()*1e6/n)
				f.wal = append(f.wal, float64(wal)/n)
				f.txs += txs
			}
			st, err := readStatements(ctx, admin, v.oid)
			if err != nil {
				b.Fatal(err)
			}
			if f.stmts == nil {
				f.stmts = map[string]*stmtStat{}
			}
			for _, s := range st {
				t := f.stmts[s.query]
				if t == nil {
					t = &stmtStat{query: s.query}
					f.stmts[s.query] = t
				}
				t.calls += s.calls
				t.execMS += s.execMS
			}
			fmt.Fprintf(os.Stderr, "round %d %-18s %7.0f tx/s %6.0f us db/tx %6.0f WAL B/tx\n", round+1, v.name,
				f.rate[len(f.rate)-1], f.cpu[len(f.cpu)-1], f.wal[len(f.wal)-1])
		}
	}

	fmt.Printf("\n== Postgres floor, %d clients, %s per variant, %d rounds (durable)\n", clients, duration, rounds)
	fmt.Printf("%-18s %22s %22s %22s %22s\n", "variant", "tx/s med (range)", "db us/tx med (range)", "WAL B/tx med (range)", "gw us/op med (range)")
	cell := func(v []float64) string {
		if len(v) == 0 {
			return "-"
		}
		m, lo, hi := medianSpread(v)
		return fmt.Sprintf("%.0f (%.0f-%.0f)", m, lo, hi)
	}
	for _, v := range variants {
		f := res[v.name]
		fmt.Printf("%-18s %22s %22s %22s %22s\n", v.name, cell(f.rate), cell(f.cpu), cell(f.wal), cell(f.gw))
		b.ReportMetric(median(f.cpu), v.name+"-db-us/tx")
		b.ReportMetric(median(f.wal), v.name+"-wal-B/tx")
		b.ReportMetric(median(f.rate), v.name+"-tx/s")
	}
	// Where the server's statement time goes, by variant (execution
	// only: pg_stat_statements' total_exec_time, the statements of that
	// variant's database, the gateway's collector included).
	for _, v := range variants {
		f := res[v.name]
		st := make([]*stmtStat, 0, len(f.stmts))
		for _, s := range f.stmts {
			st = append(st, s)
		}
		slices.SortFunc(st, func(a, b *stmtStat) int { return cmp.Compare(b.execMS, a.execMS) })
		fmt.Printf("\n-- %s statements: %8s %9s %9s\n", v.name, "calls/tx", "exec-us/c", "us/tx")
		n := float64(max(f.txs, 1))
		for i, s := range st {
			if i == 6 {
				break
			}
			q := strings.Join(strings.Fields(s.query), " ")
			if len(q) > 90 {
				q = q[:90]
			}
			fmt.Printf("%8.3f %9.1f %9.1f  %s\n", float64(s.calls)/n, s.execMS*1e3/float64(max(s.calls, 1)), s.execMS*1e3/n, q)
		}
	}
	// Our put over the floor, round by round (the variants of one round
	// ran within a minute of each other).
	d := res["put-small-ifmatch"].cpu
	for _, base := range []string{"pgbench", "upsert-own", "locked-own", "locked-random", "locked-own-paced"} {
		fmt.Printf("put-small-ifmatch db CPU / %s: %s\n", base, ratioCell(roundRatios(res[base].cpu, d)))
	}
}

// ratioCell is the median of per-round ratios with their range.
func ratioCell(r []float64) string {
	m, lo, hi := medianSpread(r)
	return fmt.Sprintf("%.2fx (%.2f-%.2fx)", m, lo, hi)
}

// floorRows is how many rows floor_blobs holds.
const floorRows = 10000

// floorBody is a 5,504-character text that pglz cannot compress (random
// hex), about what a 4 KiB body's extents text is (its base64 in JSON).
func floorBody() string {
	r := rand.New(rand.NewPCG(1, 2))
	var sb strings.Builder
	for sb.Len() < 5504 {
		fmt.Fprintf(&sb, "%016x", r.Uint64())
	}
	return sb.String()
}

// floorCols are the columns the floor's upsert writes: every column of
// blobs (sqlq.BlobCols and extents_keys).
const floorCols = `account, container, name, blob_type, etag, created, last_modified, size,
	content_type, content_encoding, content_language, content_disposition, cache_control, content_md5,
	metadata, extents, block_count, lease_id, lease_state, lease_duration, lease_expires, lease_break_at, lease_since,
	access_tier, tags, copy_info, sealed, version_id, sequence_number, extents_keys`

// floorValues is the row of name 'b' || :id, its extents body with the
// first 12 characters replaced by a random number (:r; every write a new
// value, as every Put Blob's body is).
func floorValues(body string) string {
	return `'devstoreaccount1', 'c', 'b' || :id, 'BlockBlob', '"0x' || upper(to_hex(:r::bigint)) || '"', now(), now(), 4096,
	'application/octet-stream', '', '', '', '', '\x0123456789abcdef0123456789abcdef'::bytea,
	'{}', overlay('` + body + `' placing lpad(:r::text, 12, '0') from 1), 0, '', '', 0, NULL, NULL, NULL,
	NULL, NULL, '', 0, '', 0, FALSE`
}

// floorScript is a pgbench script (after the \set of :id) of one
// transaction sent as one round trip: the upsert of floorValues' row, its
// ON CONFLICT setting every column but the key as Put Blob's does; locked,
// the statement first takes the container's shared advisory lock, the
// name's advisory lock and the row FOR UPDATE, as oneTripSQL does.
func floorScript(locked bool, body string) string {
	var set []string
	for _, c := range strings.Fields(strings.ReplaceAll(floorCols, ",", " "))[3:] {
		set = append(set, c+" = excluded."+c)
	}
	from := ""
	if locked {
		from = `WITH l AS MATERIALIZED (SELECT b.etag FROM (SELECT pg_advisory_xact_lock_shared(1)::text AS l OFFSET 0) AS ck
	LEFT JOIN LATERAL (SELECT pg_advisory_xact_lock(1000000 + :id)::text AS l WHERE ck.l IS NOT NULL OFFSET 0) AS nk ON TRUE
	LEFT JOIN LATERAL (SELECT etag FROM floor_blobs WHERE account = 'devstoreaccount1' AND container = 'c' AND name = 'b' || :id
		AND nk.l IS NOT NULL OFFSET 0 FOR UPDATE) AS b ON TRUE) `
	}
	stmt := from + `INSERT INTO floor_blobs (` + floorCols + `) SELECT ` + floorValues(body)
	if locked {
		stmt += ` FROM l`
	}
	stmt += ` ON CONFLICT (account, container, name) DO UPDATE SET ` + strings.Join(set, ", ")
	return "\\set r random(1, 1000000000)\n\\startpipeline\nBEGIN;\n" + strings.Join(strings.Fields(stmt), " ") + ";\nEND;\n\\endpipeline\n"
}
