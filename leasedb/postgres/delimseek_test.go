package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
)

// walkTracer keeps the text and arguments of the last List Blobs with
// delimiter statement (a recursive walk) the store ran.
type walkTracer struct {
	mu   sync.Mutex
	sql  string
	args []any
}

func (w *walkTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.HasPrefix(d.SQL, "WITH RECURSIVE walk") {
		w.mu.Lock()
		w.sql, w.args = d.SQL, append([]any(nil), d.Args...)
		w.mu.Unlock()
	}
	return ctx
}

func (w *walkTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestListDelimitedSeeks holds what one List Blobs page with delimiter "/"
// costs Postgres in index seeks and rows, through the Store: the
// statement the store ran for the page is run again under EXPLAIN
// ANALYZE. A seek costs Postgres a dozen or more rows' worth (a B-tree
// scan reads the rest of the leaf page it lands on), so
//   - where prefixes hold few names (3,000 directories of 3 blobs), a page
//     of 1,000 prefixes must take far fewer seeks than prefixes: the walk
//     reads on instead (one seek per prefix before; at most one per 8
//     prefixes now);
//   - where they hold many (40 directories of 500 blobs), it must still
//     skip them: rows read stay a few per prefix, not the 500 under each.
func TestListDelimitedSeeks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, c := range []struct {
		name             string
		dirs, per, max   int
		maxSeeks, maxRow int
	}{
		{name: "few", dirs: 3000, per: 3, max: 1000, maxSeeks: 1000 / 8, maxRow: 4 * 1000},
		{name: "many", dirs: 40, per: 500, max: 40, maxSeeks: 2 * 40, maxRow: 10 * 40},
	} {
		t.Run(c.name, func(t *testing.T) {
			dsn := pgtest.Start(t)
			tr := &walkTracer{}
			s, err := open(ctx, dsn, tr)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			if _, _, err := s.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { conn.Close(context.Background()) })
			for _, q := range []string{
				`INSERT INTO containers (account, name, etag) VALUES ('acct', 'c', '"c"')`,
				fmt.Sprintf(`INSERT INTO blobs (account, container, name, blob_type, etag)
					SELECT 'acct', 'c', 'd' || lpad(d::text, 5, '0') || '/f' || lpad(i::text, 4, '0'), 'BlockBlob', '"b"'
					FROM generate_series(0, %d) AS d, generate_series(0, %d) AS i`, c.dirs-1, c.per-1),
				`ANALYZE blobs`,
			} {
				if _, err := conn.Exec(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			db := &leasedb.DB{Store: s}
			res, err := db.ListBlobs(ctx, "acct", "c", "", "/", "", c.max)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Items) != c.max {
				t.Fatalf("%d items, want %d", len(res.Items), c.max)
			}
			for i, it := range res.Items {
				if want := fmt.Sprintf("d%05d/", i); it.Prefix != want {
					t.Fatalf("item %d: %+v, want prefix %q", i, it, want)
				}
			}
			tr.mu.Lock()
			q, args := tr.sql, tr.args
			tr.mu.Unlock()
			if q == "" {
				t.Fatal("the store ran no recursive walk for the page")
			}
			var doc string
			if err := conn.QueryRow(ctx, `EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) `+q, args...).Scan(&doc); err != nil {
				t.Fatal(err)
			}
			var plans []struct {
				Plan seekNode `json:"Plan"`
			}
			if err := json.Unmarshal([]byte(doc), &plans); err != nil || len(plans) != 1 {
				t.Fatalf("decode plan: %v (%d plans)", err, len(plans))
			}
			seeks, rows := 0.0, 0.0
			var walk func(n *seekNode)
			walk = func(n *seekNode) {
				if n.RelationName == "blobs" {
					seeks += n.ActualLoops
					rows += n.ActualRows * n.ActualLoops
				}
				for i := range n.Plans {
					walk(&n.Plans[i])
				}
			}
			walk(&plans[0].Plan)
			t.Logf("%d prefixes: %.0f seeks, %.0f rows read", c.max, seeks, rows)
			if int(seeks) > c.maxSeeks || int(rows) > c.maxRow {
				t.Errorf("%d prefixes took %.0f seeks and read %.0f rows; want at most %d and %d", c.max, seeks, rows, c.maxSeeks, c.maxRow)
			}
		})
	}
}

// seekNode is the part of a node of EXPLAIN's JSON plan the seek test
// reads.
type seekNode struct {
	RelationName string     `json:"Relation Name"`
	ActualRows   float64    `json:"Actual Rows"`
	ActualLoops  float64    `json:"Actual Loops"`
	Plans        []seekNode `json:"Plans"`
}

// TestPeekPrefix: a BlobPrefix row of a ListDelimited result is read
// from the row as received, in either result format, and any other row
// is left to the full scan.
func TestPeekPrefix(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, c := range []struct {
		sql        string
		mode       pgx.QueryExecMode
		name       string
		wantPrefix bool
	}{
		{`SELECT 'acct', 'c', CAST('d/é/' AS TEXT), '', 4`, pgx.QueryExecModeCacheStatement, "d/é/", true},
		{`SELECT 'acct', 'c', CAST('d/é/' AS TEXT), '', 4`, pgx.QueryExecModeSimpleProtocol, "d/é/", true},
		{`SELECT 'acct', 'c', CAST('d/x' AS TEXT), '', 2`, pgx.QueryExecModeCacheStatement, "", false},
		{`SELECT 'acct', 'c', CAST('d/x' AS TEXT), '', 2`, pgx.QueryExecModeSimpleProtocol, "", false},
		{`SELECT 'acct', 'c', CAST('d/' AS TEXT), '', CAST(4 AS BIGINT)`, pgx.QueryExecModeCacheStatement, "", false},
	} {
		rows, err := conn.Query(ctx, c.sql, c.mode)
		if err != nil {
			t.Fatal(err)
		}
		if !rows.Next() {
			t.Fatalf("%s: no row: %v", c.sql, rows.Err())
		}
		name, prefix, err := peekPrefix(rows)
		rows.Close()
		if err != nil || name != c.name || prefix != c.wantPrefix {
			t.Errorf("%s (mode %v): %q, %v, %v; want %q, %v", c.sql, c.mode, name, prefix, err, c.name, c.wantPrefix)
		}
	}
}
