package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	msqlite "modernc.org/sqlite"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/plancase"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
	"github.com/blobgw/blobgw/leasedb/sqlite"
)

// series opens a fill statement with the common table expression n(i) of
// i = 0, step, 2×step, … below end: the fills' generate_series.
func series(step, end int) string {
	return fmt.Sprintf("WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + %d FROM n WHERE i + %d < %d)", step, step, end)
}

// planFill inserts the rows plancase describes, set-based, in one
// transaction.
var planFill = []string{
	series(1, 200000) + `
		INSERT INTO blobs (account, container, name, blob_type, etag)
		SELECT 'acct', 'c', 'd/' || printf('%07d', i), 'BlockBlob', '"b' || i || '"' FROM n`,
	series(1, 2000) + `
		INSERT INTO blobs (account, container, name, blob_type, etag)
		SELECT 'acct', 'c', 'm/' || printf('%05d', i), 'BlockBlob', '"m' || i || '"' FROM n`,
	series(8, 200000) + `,
		j(j) AS (VALUES (1), (2))
		INSERT INTO snapshots (account, container, name, snapshot, blob_type, etag)
		SELECT 'acct', 'c', 'd/' || printf('%07d', i), '2024-01-01T00:00:0' || j || '.0000000Z', 'BlockBlob', '"s' || i || '"'
		FROM n, j`,
	series(1, 200000) + `,
		j(j) AS (VALUES (1), (2))
		INSERT INTO blocks (account, container, blob, block_id, key, size, staged_at)
		SELECT 'acct', 'c', 'd/' || printf('%07d', i) || CASE WHEN i % 8 = 4 THEN '.u' ELSE '' END,
			'blk' || j, 'k/' || i || '/' || j, 1, 1704067200000000
		FROM n, j WHERE i % 8 IN (2, 4)`,
	// The other container: many rows under the same names.
	series(1, 50000) + `
		INSERT INTO blobs (account, container, name, blob_type, etag)
		SELECT 'acct', 'c2', 'd/' || printf('%07d', i), 'BlockBlob', '"o' || i || '"' FROM n`,
	series(5, 50000) + `,
		j(j) AS (VALUES (1), (2))
		INSERT INTO snapshots (account, container, name, snapshot, blob_type, etag)
		SELECT 'acct', 'c2', 'd/' || printf('%07d', i), '2024-01-01T00:00:0' || j || '.0000000Z', 'BlockBlob', '"o"'
		FROM n, j`,
	series(5, 50000) + `,
		j(j) AS (VALUES (1), (2))
		INSERT INTO blocks (account, container, blob, block_id, key, size, staged_at)
		SELECT 'acct', 'c2', 'd/' || printf('%07d', i) || '.u', 'blk' || j, 'o/' || i || '/' || j, 1, 1704067200000000
		FROM n, j`,
}

// planPageBound is the most b-tree pages one ListEntries query may fetch
// (page cache hits plus misses: SQLITE_DBSTATUS_CACHE_HIT and _MISS, the
// one work counter of a statement the driver exposes). A seek descends
// from the root, three or four pages on these tables, and a range then
// reads consecutive leaves holding dozens of rows each: the blobs and
// snapshots parts cost a descent each plus a leaf per few dozen rows,
// while the staged walk and the blob-row check of each staged name cost a
// descent per name, at most limit names: about 7×limit pages at most.
// 10×limit+100 leaves room for deeper trees; a full scan of the
// container's blob rows alone fetches thousands of pages, far above the
// bound at limits 1 and 10 (checked below; at 5000 the plan checks are
// what rule a scan out).
func planPageBound(limit int) int { return 10*limit + 100 }

// TestListEntriesPlan proves that the List Blobs query reads a bounded
// part of a large container: for every case SQLite's plan is a key range
// search on every table it reads (EXPLAIN QUERY PLAN, and the bytecode:
// no cursor on those tables is rewound to read from one end), the pages
// the query fetches are bounded by its limit, and the Store returns what
// the data implies. It checks the plans without statistics, as blobgw
// runs (it never runs ANALYZE), and again after ANALYZE.
func TestListEntriesPlan(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, db := filledStore(t, ctx, planFill)
	var nb, ns, nk, no int
	if err := db.QueryRowContext(ctx, plancase.FillCounts(func(n int) string { return "?" + strconv.Itoa(n) }), plancase.Container, plancase.Other).Scan(&nb, &ns, &nk, &no); err != nil {
		t.Fatal(err)
	}
	if err := plancase.CheckFill(nb, ns, nk, no); err != nil {
		t.Fatal(err)
	}

	// Root pages of the listed tables (their primary keys: they are
	// WITHOUT ROWID) and of their indexes, for the bytecode check.
	roots := map[int64]string{}
	rows, err := db.QueryContext(ctx, `SELECT rootpage, name FROM sqlite_schema
		WHERE tbl_name IN ('blobs', 'snapshots', 'blocks') AND rootpage > 0`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var root int64
		var name string
		if err := rows.Scan(&root, &name); err != nil {
			t.Fatal(err)
		}
		roots[root] = name
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}

	// One connection of our own, to read its page counters around each
	// query.
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fullScan, err := pagesFetched(ctx, conn, `SELECT count(*) FROM blobs WHERE account = ? AND container = ?`, plancase.Account, plancase.Container)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("reading every blob row of the container fetches %d pages", fullScan)
	if planPageBound(10)*10 > fullScan {
		t.Fatalf("page bound %d at limit 10 does not tell a page from a scan (%d pages)", planPageBound(10), fullScan)
	}

	model := plancase.Model()
	for _, phase := range []string{"no statistics", "ANALYZE"} {
		if phase == "ANALYZE" {
			var stats int
			if _, err := conn.ExecContext(ctx, `ANALYZE`); err != nil {
				t.Fatal(err)
			}
			if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_stat1 WHERE tbl IN ('blobs', 'snapshots', 'blocks')`).Scan(&stats); err != nil || stats == 0 {
				t.Fatalf("ANALYZE left %d statistics rows: %v", stats, err)
			}
		}
		var cases []planCase
		for _, c := range plancase.Cases() {
			q, args := sqlq.ListEntries(func(int) string { return "?" },
				plancase.Account, plancase.Container, c.Prefix, c.After, c.AfterSnapshot, c.Limit, c.Inc)
			cases = append(cases, planCase{c.Name, q, args, c.Limit, planPageBound(c.Limit),
				func() error { return c.Check(ctx, s, plancase.Account, plancase.Container, model) }})
		}
		checkPlanCases(t, ctx, conn, roots, "", phase, cases)
		checkDelimitedPlans(t, ctx, s, conn, roots, model, phase)
	}
	for _, err := range plancase.CheckPages(ctx, s, model) {
		t.Error(err)
	}
}

// checkDelimitedPlans is TestListEntriesPlan for ListDelimited (List
// Blobs with a delimiter): key range searches only, and pages fetched
// bounded by the limit, never by the names under the prefixes the page
// skips.
func checkDelimitedPlans(t *testing.T, ctx context.Context, s leasedb.Store, conn *sql.Conn, roots map[int64]string, model []plancase.Entry, phase string) {
	var cases []planCase
	for _, c := range plancase.DelimCases() {
		q, args := sqlq.ListDelimited(sqlite.Dialect, plancase.Account, plancase.Container, c.Prefix, c.Delimiter, c.After, c.Limit, c.Inc)
		cases = append(cases, planCase{c.Name, q, args, c.Limit, delimPageBound(c.Limit),
			func() error { return c.Check(ctx, s, plancase.Account, plancase.Container, model) }})
	}
	checkPlanCases(t, ctx, conn, roots, "delimited ", phase, cases)
}

// planCase is one listing case as checkPlanCases runs it: its statement,
// its limit and the pages it may fetch, and its run through the Store
// against the model.
type planCase struct {
	name  string
	q     string
	args  []any
	limit int
	bound int
	check func() error
}

// checkPlanCases checks every case's plan and pages (checkQueryPlan) and,
// in the first phase only (a plan does not change what a query returns),
// its result through the Store; then it logs the worst pages per limit of
// each family. label ("" or "delimited ") starts every message.
func checkPlanCases(t *testing.T, ctx context.Context, conn *sql.Conn, roots map[int64]string, label, phase string, cases []planCase) {
	t.Helper()
	worst := plancase.Worst{}
	for _, c := range cases {
		checkQueryPlan(t, ctx, conn, roots, worst, label, c.name, phase, c.q, c.args, c.limit, c.bound)
		if phase != "no statistics" {
			continue
		}
		if err := c.check(); err != nil {
			t.Errorf("%s%s: %v", label, c.name, err)
		}
	}
	for _, l := range worst.Lines("pages fetched") {
		t.Log(label + l)
	}
}

// checkQueryPlan fails the case (named label+name in messages) when q's
// plan or bytecode scans a table, or when running it fetches more than
// bound pages; it notes the pages fetched in worst.
func checkQueryPlan(t *testing.T, ctx context.Context, conn *sql.Conn, roots map[int64]string, worst plancase.Worst, label, name, phase, q string, args []any, limit, bound int) {
	t.Helper()
	plan, err := queryPlan(ctx, conn, q, args)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	bad := checkPlan(plan, q)
	scans, err := bytecodeScans(ctx, conn, q, args, roots)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	bad = append(bad, scans...)
	pages, err := pagesFetched(ctx, conn, q, args...)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if pages > bound {
		bad = append(bad, fmt.Sprintf("fetched %d pages, want at most %d", pages, bound))
	}
	for _, b := range bad {
		t.Errorf("%s%s (%s): %s", label, name, phase, b)
	}
	if bad != nil {
		t.Logf("plan of %s%s (%s):\n%s", label, name, phase, planText(plan))
	}
	worst.Note(phase, name, limit, pages)
}

// delimPageBound is the most pages one ListDelimited query may fetch. A
// walk step seeks the blobs key (a descent, three or four pages) and, for
// the names it lands on, the snapshots and blocks keys; the entries are
// then read by key, one descent per name (and per name with snapshots):
// about 10 pages per step with every include, at most limit steps. A
// prefix costs the same one step however many names it holds: walking the
// 100,000 names under d/01 fetches thousands of pages.
func delimPageBound(limit int) int { return 14*limit + 100 }

// planStep is one row of EXPLAIN QUERY PLAN.
type planStep struct {
	id, parent int
	detail     string
}

func queryPlan(ctx context.Context, conn *sql.Conn, q string, args []any) ([]planStep, error) {
	rows, err := conn.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []planStep
	for rows.Next() {
		var st planStep
		var notused int
		if err := rows.Scan(&st.id, &st.parent, &notused, &st.detail); err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, rows.Err()
}

// planText renders plan as an indented tree.
func planText(plan []planStep) string {
	depth := map[int]int{0: 0}
	var b strings.Builder
	for _, st := range plan {
		d := depth[st.parent] + 1
		depth[st.id] = d
		fmt.Fprintf(&b, "%s%s\n", strings.Repeat("  ", d), st.detail)
	}
	return b.String()
}

var (
	// stepObject is the table, alias, subquery or CTE a SCAN or SEARCH
	// step reads: "SCAN staged", "SEARCH blobs USING PRIMARY KEY (...)".
	stepObject = regexp.MustCompile(`^(SCAN|SEARCH) (\S+)`)
	// tableAlias finds "blobs b" and "blobs AS b" in the query text.
	tableAlias = regexp.MustCompile(`\b(blobs|snapshots|blocks)\s+(?:AS\s+)?([A-Za-z_]\w*)`)
	// rangeSearch is the one acceptable access to a listed table: a
	// search of its key within the container, with a bound on the name.
	rangeSearch = regexp.MustCompile(`^SEARCH \S+ USING (PRIMARY KEY|INDEX \S+|COVERING INDEX \S+) \(account=\? AND container=\? AND (name|blob)[=<>]`)
)

// checkPlan returns what is wrong with plan: a SCAN of blobs, snapshots
// or blocks (by name or by an alias of q), or a SEARCH of them that is not
// a range of the key within the container. A SCAN of a subquery (its
// sibling step is its CO-ROUTINE or MATERIALIZE) or of the staged CTE is
// fine.
func checkPlan(plan []planStep, q string) []string {
	tables := map[string]bool{"blobs": true, "snapshots": true, "blocks": true}
	keywords := map[string]bool{"WHERE": true, "ORDER": true, "LIMIT": true, "ON": true, "JOIN": true, "GROUP": true}
	for _, m := range tableAlias.FindAllStringSubmatch(q, -1) {
		if !keywords[strings.ToUpper(m[2])] {
			tables[m[2]] = true
		}
	}
	// Subqueries read by a SCAN step, by parent step.
	subqueries := map[[2]string]bool{}
	for _, st := range plan {
		for _, kw := range []string{"CO-ROUTINE ", "MATERIALIZE "} {
			if name, ok := strings.CutPrefix(st.detail, kw); ok {
				subqueries[[2]string{fmt.Sprint(st.parent), name}] = true
			}
		}
	}
	var bad []string
	for _, st := range plan {
		m := stepObject.FindStringSubmatch(st.detail)
		if m == nil || !tables[m[2]] {
			continue
		}
		switch {
		case m[1] == "SCAN" && subqueries[[2]string{fmt.Sprint(st.parent), m[2]}]:
			// The derived table of that name, not the base table.
		case m[1] == "SCAN":
			bad = append(bad, "full scan: "+st.detail)
		case !rangeSearch.MatchString(st.detail):
			bad = append(bad, "search not bounded to a key range of the container: "+st.detail)
		}
	}
	return bad
}

// bytecodeScans returns the b-trees of roots (by name) that q's bytecode
// opens and then rewinds (Rewind, Last): a scan from one end, where a
// range search seeks (SeekGE, SeekGT, ...).
func bytecodeScans(ctx context.Context, conn *sql.Conn, q string, args []any, roots map[int64]string) ([]string, error) {
	rows, err := conn.QueryContext(ctx, "EXPLAIN "+q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	if len(cols) < 4 || cols[1] != "opcode" {
		return nil, fmt.Errorf("EXPLAIN columns %v", cols)
	}
	cursors := map[int64]string{} // cursor number -> b-tree name
	var bad []string
	opened := 0
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		op := fmt.Sprint(vals[1])
		p1, _ := vals[2].(int64)
		p2, _ := vals[3].(int64)
		switch op {
		case "OpenRead", "ReopenIdx":
			if name, ok := roots[p2]; ok {
				cursors[p1] = name
				opened++
			}
		case "Rewind", "Last":
			if name, ok := cursors[p1]; ok {
				bad = append(bad, fmt.Sprintf("bytecode %s of cursor %d on %s", op, p1, name))
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if opened == 0 {
		return nil, fmt.Errorf("bytecode opens none of %v", roots)
	}
	return bad, nil
}

// pagesFetched runs q to the end on conn and returns the pages it fetched
// from the page cache (hits and misses).
func pagesFetched(ctx context.Context, conn *sql.Conn, q string, args ...any) (int, error) {
	status := func(reset bool) (int, error) {
		total := 0
		err := conn.Raw(func(dc any) error {
			st, ok := dc.(msqlite.DBStatus)
			if !ok {
				return fmt.Errorf("driver connection %T has no DBStatus", dc)
			}
			for _, op := range []msqlite.DBStatusOp{msqlite.DBStatusCacheHit, msqlite.DBStatusCacheMiss} {
				n, _, err := st.Status(op, reset)
				if err != nil {
					return err
				}
				total += n
			}
			return nil
		})
		return total, err
	}
	if _, err := status(true); err != nil {
		return 0, err
	}
	rows, err := conn.QueryContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	for rows.Next() {
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	return status(false)
}

// filledStore opens a migrated store in a new file, inserts plancase's two
// containers and runs fill in one transaction, and returns the store and
// a database handle of one connection on the same file (closed when t
// ends), for the plan tests' own statements.
func filledStore(t *testing.T, ctx context.Context, fill []string) (*sqlite.Store, *sql.DB) {
	t.Helper()
	if testing.Short() {
		t.Skip("fills 200,000 blob rows (-short)")
	}
	path := filepath.Join(t.TempDir(), "meta.db")
	s := open(t, path)
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range append([]string{plancase.InsertContainers}, fill...) {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			tx.Rollback()
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return s, db
}
