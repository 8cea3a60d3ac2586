package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/plancase"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
	"github.com/blobgw/blobgw/leasedb/pgtest"
	"github.com/blobgw/blobgw/leasedb/postgres"
)

// planFill inserts the rows plancase describes, set-based, and analyzes.
var planFill = []string{
	`INSERT INTO blobs (account, container, name, blob_type, etag)
		SELECT 'acct', 'c', 'd/' || lpad(i::text, 7, '0'), 'BlockBlob', '"b' || i || '"'
		FROM generate_series(0, 199999) AS i`,
	`INSERT INTO blobs (account, container, name, blob_type, etag)
		SELECT 'acct', 'c', 'm/' || lpad(i::text, 5, '0'), 'BlockBlob', '"m' || i || '"'
		FROM generate_series(0, 1999) AS i`,
	`INSERT INTO snapshots (account, container, name, snapshot, blob_type, etag)
		SELECT 'acct', 'c', 'd/' || lpad(i::text, 7, '0'), '2024-01-01T00:00:0' || j || '.0000000Z', 'BlockBlob', '"s' || i || '"'
		FROM generate_series(0, 199999, 8) AS i, generate_series(1, 2) AS j`,
	`INSERT INTO blocks (account, container, blob, block_id, key, size, staged_at)
		SELECT 'acct', 'c', 'd/' || lpad(i::text, 7, '0') || CASE WHEN i % 8 = 4 THEN '.u' ELSE '' END,
			'blk' || j, 'k/' || i || '/' || j, 1, '2024-01-01T00:00:00Z'
		FROM generate_series(0, 199999) AS i, generate_series(1, 2) AS j WHERE i % 8 IN (2, 4)`,
	// The other container: many rows under the same names.
	`INSERT INTO blobs (account, container, name, blob_type, etag)
		SELECT 'acct', 'c2', 'd/' || lpad(i::text, 7, '0'), 'BlockBlob', '"o' || i || '"'
		FROM generate_series(0, 49999) AS i`,
	`INSERT INTO snapshots (account, container, name, snapshot, blob_type, etag)
		SELECT 'acct', 'c2', 'd/' || lpad(i::text, 7, '0'), '2024-01-01T00:00:0' || j || '.0000000Z', 'BlockBlob', '"o"'
		FROM generate_series(0, 49999, 5) AS i, generate_series(1, 2) AS j`,
	`INSERT INTO blocks (account, container, blob, block_id, key, size, staged_at)
		SELECT 'acct', 'c2', 'd/' || lpad(i::text, 7, '0') || '.u', 'blk' || j, 'o/' || i || '/' || j, 1, '2024-01-01T00:00:00Z'
		FROM generate_series(0, 49999, 5) AS i, generate_series(1, 2) AS j`,
	`ANALYZE containers, blobs, snapshots, blocks`,
}

// planBound is the most rows one ListEntries query may read (index
// entries, heap rows and rows filtered away, summed over every scan):
// the blobs part reads at most limit rows, the snapshots parts (the
// cursor name's remaining snapshots, then the later names') at most limit
// each, the staged walk one index entry per probe and at most limit
// probes, the blob-row check of each staged name at most one row, and the
// filter on the staged names drops at most limit of them: 6×limit. The
// rest of 8×limit+50 is slack for the probe that finds no further name,
// rounding in EXPLAIN's per-loop averages and planner choices that read a
// row or two more (a bitmap scan counts its rows twice, index and heap).
// Reading the container's 202,000 blob rows exceeds it by orders of
// magnitude at limits 1 and 10 and five-fold at 5000.
func planBound(limit int) int { return 8*limit + 50 }

// batchedPlanBound is planBound for sqlq.ListDelimitedBatched, whose walk
// reads several names per seek: fewer than BatchFew names per entry it
// returns, but for a batch of up to BatchMax names that is followed by
// BatchHold steps of one name each (or ends the page) and the last batch,
// which may run past the limit; then one blob row per entry. At limit 1 it
// is a few hundred rows and at 5000 under half the container's 202,000.
func batchedPlanBound(limit int) int { return (sqlq.BatchFew+1)*limit + 2*sqlq.BatchMax + 50 }

// TestListEntriesPlan proves that the List Blobs query reads a bounded
// number of rows however large the container: for every case it runs the
// query under EXPLAIN ANALYZE, both as planned for its arguments (the
// first executions of a prepared statement) and as the generic plan pgx's
// statement cache ends up using, and sums the rows each scan read. The
// same cases run through the Store must return what the data implies.
func TestListEntriesPlan(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, conn := filledStore(t, ctx, planFill)
	var nb, ns, nk, no int
	if err := conn.QueryRow(ctx, plancase.FillCounts(func(n int) string { return "$" + strconv.Itoa(n) }), plancase.Container, plancase.Other).Scan(&nb, &ns, &nk, &no); err != nil {
		t.Fatal(err)
	}
	if err := plancase.CheckFill(nb, ns, nk, no); err != nil {
		t.Fatal(err)
	}
	model := plancase.Model()

	// Largest rows read / limit per family (inc × limit), for the log.
	worst := plancase.Worst{}
	for _, c := range plancase.Cases() {
		q, args := sqlq.ListEntries(func(n int) string { return "$" + strconv.Itoa(n) },
			plancase.Account, plancase.Container, c.Prefix, c.After, c.AfterSnapshot, c.Limit, c.Inc)
		checkQueryPlans(t, ctx, conn, worst, "", c.Name, q, args, c.Limit)

		// The same case through the Store, against the model.
		if err := c.Check(ctx, s, plancase.Account, plancase.Container, model); err != nil {
			t.Errorf("%s: %v", c.Name, err)
		}
	}
	for _, l := range worst.Lines("rows read") {
		t.Log(l)
	}
	checkDelimitedPlans(t, ctx, s, conn, model)
	for _, err := range plancase.CheckPages(ctx, s, model) {
		t.Error(err)
	}
}

// checkDelimitedPlans is TestListEntriesPlan for ListDelimited (List
// Blobs with a delimiter): rows read bounded by the limit, never by the
// names under the prefixes the page skips, in custom and generic plans.
// A walk step reads one index entry of blobs and, for the names it lands
// on, of snapshots and blocks; the entries are then read by key: the
// bound of ListEntries holds.
func checkDelimitedPlans(t *testing.T, ctx context.Context, s leasedb.Store, conn *pgx.Conn, model []plancase.Entry) {
	worst, worstBatched := plancase.Worst{}, plancase.Worst{}
	for _, c := range plancase.DelimCases() {
		q, args := sqlq.ListDelimited(postgres.Dialect, plancase.Account, plancase.Container, c.Prefix, c.Delimiter, c.After, c.Limit, c.Inc)
		checkQueryPlans(t, ctx, conn, worst, "delimited ", c.Name, q, args, c.Limit)
		if c.Inc == (leasedb.ListInclude{}) {
			// What Postgres runs for committed blobs alone.
			q, args := sqlq.ListDelimitedBatched(postgres.Dialect.Placeholder, plancase.Account, plancase.Container, c.Prefix, c.Delimiter, c.After, c.Limit)
			checkQueryPlansWithin(t, ctx, conn, worstBatched, "delimited batched ", c.Name, q, args, c.Limit, batchedPlanBound(c.Limit))
		}
		if err := c.Check(ctx, s, plancase.Account, plancase.Container, model); err != nil {
			t.Errorf("delimited %s: %v", c.Name, err)
		}
	}
	for _, l := range worst.Lines("rows read") {
		t.Log("delimited, " + l)
	}
	for _, l := range worstBatched.Lines("rows read") {
		t.Log("delimited batched, " + l)
	}
}

// checkQueryPlans runs q once in a custom and once in a generic plan and
// fails the case (named label+name in messages) on a sequential scan or on
// more rows read than planBound(limit), by the plan or by the statistics
// counters; it notes the rows read in worst.
func checkQueryPlans(t *testing.T, ctx context.Context, conn *pgx.Conn, worst plancase.Worst, label, name, q string, args []any, limit int) {
	t.Helper()
	checkQueryPlansWithin(t, ctx, conn, worst, label, name, q, args, limit, planBound(limit))
}

// checkQueryPlansWithin is checkQueryPlans with the bound on the rows
// read given.
func checkQueryPlansWithin(t *testing.T, ctx context.Context, conn *pgx.Conn, worst plancase.Worst, label, name, q string, args []any, limit, bound int) {
	t.Helper()
	for _, generic := range []bool{false, true} {
		mode := "custom"
		if generic {
			mode = "generic"
		}
		m, err := explainRows(ctx, conn, q, args, generic)
		if err != nil {
			t.Fatalf("%s%s (%s plan): %v", label, name, mode, err)
		}
		bad := false
		if m.seqScans != nil {
			t.Errorf("%s%s (%s plan): sequential scan of %v", label, name, mode, m.seqScans)
			bad = true
		}
		if m.planRows > bound || m.statRows > bound {
			t.Errorf("%s%s (%s plan): read %d rows by the plan, %d by the statistics; want at most %d",
				label, name, mode, m.planRows, m.statRows, bound)
			bad = true
		}
		if bad {
			t.Logf("plan of %s%s (%s):\n%s", label, name, mode, explainText(ctx, conn, q, args, generic))
		}
		worst.Note(mode+" plan", name, limit, max(m.planRows, m.statRows))
	}
}

// planMeasure is what one execution of a query read.
type planMeasure struct {
	// planRows sums, over the plan's scans, actual rows × loops plus rows
	// removed by filters and index rechecks.
	planRows int
	// statRows is the number of index entries and heap rows the
	// statistics collector counted for blobs, snapshots, blocks, blob_tags and their
	// indexes (exact, where EXPLAIN rounds per-loop averages).
	statRows int
	// seqScans lists the sequential scans of those tables (plan nodes,
	// and the statistics' count).
	seqScans []string
}

// explainRows runs q once under EXPLAIN (ANALYZE, FORMAT JSON), inside a
// transaction that also reads the statistics counters of the listed tables
// before and after. With generic, q is a prepared statement forced to its
// generic plan.
func explainRows(ctx context.Context, conn *pgx.Conn, q string, args []any, generic bool) (planMeasure, error) {
	var m planMeasure
	tx, err := conn.Begin(ctx)
	if err != nil {
		return m, err
	}
	done := func() {}
	defer func() {
		tx.Rollback(ctx)
		done()
	}()
	const counters = `SELECT c.relname, c.relkind = 'r',
		pg_stat_get_xact_numscans(c.oid), pg_stat_get_xact_tuples_returned(c.oid)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = current_schema() AND (c.relname IN ('blobs', 'snapshots', 'blocks', 'blob_tags')
			OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid IN ('blobs'::regclass, 'snapshots'::regclass, 'blocks'::regclass, 'blob_tags'::regclass)))`
	type counter struct {
		table           bool
		scans, returned int64
	}
	read := func() (map[string]counter, error) {
		rows, err := tx.Query(ctx, counters)
		if err != nil {
			return nil, err
		}
		out := map[string]counter{}
		for rows.Next() {
			var name string
			var c counter
			if err := rows.Scan(&name, &c.table, &c.scans, &c.returned); err != nil {
				return nil, err
			}
			out[name] = c
		}
		return out, rows.Err()
	}
	before, err := read()
	if err != nil {
		return m, err
	}
	stmt, eargs, done, err := explainStmt(ctx, tx, "EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) ", q, args, generic)
	if err != nil {
		return m, err
	}
	var doc string
	if err := tx.QueryRow(ctx, stmt, eargs...).Scan(&doc); err != nil {
		return m, err
	}
	after, err := read()
	if err != nil {
		return m, err
	}
	for name, a := range after {
		b := before[name]
		if a.table && a.scans > b.scans {
			// For a table, numscans counts sequential scans only.
			m.seqScans = append(m.seqScans, fmt.Sprintf("%s (statistics: %d)", name, a.scans-b.scans))
		}
		// A table's returned rows are those of its sequential scans; an
		// index's are the entries its scans returned.
		m.statRows += int(a.returned - b.returned)
	}

	var plans []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal([]byte(doc), &plans); err != nil {
		return m, fmt.Errorf("decode plan: %w", err)
	}
	if len(plans) != 1 {
		return m, fmt.Errorf("%d plans", len(plans))
	}
	var walk func(n *planNode)
	walk = func(n *planNode) {
		loops := n.ActualLoops
		if n.RelationName != "" || n.IndexName != "" {
			m.planRows += int(n.ActualRows * loops)
		}
		m.planRows += int((n.RemovedByFilter + n.RemovedByRecheck) * loops)
		if n.NodeType == "Seq Scan" {
			switch n.RelationName {
			case "blobs", "snapshots", "blocks", "blob_tags":
				m.seqScans = append(m.seqScans, fmt.Sprintf("%s (plan node)", n.RelationName))
			}
		}
		for i := range n.Plans {
			walk(&n.Plans[i])
		}
	}
	walk(&plans[0].Plan)
	return m, nil
}

// planNode is the part of a node of EXPLAIN's JSON plan that
// explainRows reads. Counts are per loop (averages).
type planNode struct {
	NodeType         string     `json:"Node Type"`
	RelationName     string     `json:"Relation Name"`
	IndexName        string     `json:"Index Name"`
	ActualRows       float64    `json:"Actual Rows"`
	ActualLoops      float64    `json:"Actual Loops"`
	RemovedByFilter  float64    `json:"Rows Removed by Filter"`
	RemovedByRecheck float64    `json:"Rows Removed by Index Recheck"`
	Plans            []planNode `json:"Plans"`
}

// explainStmt returns the statement that explains q with args: q itself
// with its parameters, or, for the generic plan, EXECUTE of q prepared
// with plan_cache_mode = force_generic_plan (set for the transaction) and
// the arguments as literals. done (never nil) deallocates that statement
// (a rollback does not undo PREPARE); call it when the transaction has
// ended.
func explainStmt(ctx context.Context, tx pgx.Tx, explain, q string, args []any, generic bool) (stmt string, eargs []any, done func(), err error) {
	if !generic {
		return explain + q, args, func() {}, nil
	}
	if _, err := tx.Exec(ctx, `SET LOCAL plan_cache_mode = force_generic_plan`); err != nil {
		return "", nil, func() {}, err
	}
	if _, err := tx.Exec(ctx, `PREPARE list_entries_plan AS `+q); err != nil {
		return "", nil, func() {}, err
	}
	conn := tx.Conn()
	done = func() { conn.Exec(ctx, `DEALLOCATE list_entries_plan`) }
	lits := make([]string, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			lits[i] = "'" + strings.ReplaceAll(v, "'", "''") + "'"
		case int:
			lits[i] = strconv.Itoa(v)
		default:
			return "", nil, done, fmt.Errorf("argument %d: unexpected type %T", i+1, a)
		}
	}
	return explain + `EXECUTE list_entries_plan(` + strings.Join(lits, ", ") + `)`, nil, done, nil
}

// explainText returns the text plan of q with actual rows, for failure
// messages.
func explainText(ctx context.Context, conn *pgx.Conn, q string, args []any, generic bool) string {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err.Error()
	}
	done := func() {}
	defer func() {
		tx.Rollback(ctx)
		done()
	}()
	stmt, eargs, done, err := explainStmt(ctx, tx, "EXPLAIN (ANALYZE, TIMING OFF) ", q, args, generic)
	if err != nil {
		return err.Error()
	}
	rows, err := tx.Query(ctx, stmt, eargs...)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return err.Error()
		}
		b.WriteString(line + "\n")
	}
	if err := rows.Err(); err != nil {
		return err.Error()
	}
	return b.String()
}

// filledStore starts a database, opens a migrated store on it, inserts
// plancase's two containers and runs fill, and returns the store and a
// connection of its own (closed when t ends) for the plan tests' own
// statements.
func filledStore(t *testing.T, ctx context.Context, fill []string) (*postgres.Store, *pgx.Conn) {
	t.Helper()
	if testing.Short() {
		t.Skip("fills 200,000 blob rows (-short)")
	}
	dsn := pgtest.Start(t)
	s := open(t, dsn)
	conn := pgtest.Connect(t, dsn)
	for _, q := range append([]string{plancase.InsertContainers}, fill...) {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return s, conn
}
