package postgres_test

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
	"github.com/blobgw/blobgw/leasedb/pgtest"
)

// findNames blobs in each of containers c and c2, d/0000000 …, with the
// tags n (the number, unique), group (number % 100) and, on every 10,000th,
// rare = yes. The triggers of migration 0009 index them as they go in.
const findNames = 100000

var findFill = []string{
	`INSERT INTO containers (account, name, etag) VALUES ('acct', 'c', '"c"'), ('acct', 'c2', '"c2"')`,
	`INSERT INTO blobs (account, container, name, blob_type, etag, tags)
		SELECT 'acct', c, 'd/' || lpad(i::text, 7, '0'), 'BlockBlob', '"b' || i || '"',
			json_build_object('n', lpad(i::text, 7, '0'), 'group', (i % 100)::text)::jsonb
			|| CASE WHEN i % 10000 = 0 THEN '{"rare": "yes"}'::jsonb ELSE '{}'::jsonb END
		FROM generate_series(0, 99999) AS i, (VALUES ('c'), ('c2')) AS cs(c)`,
	`ANALYZE containers, blobs, blob_tags`,
}

// TestFindTaggedPlan proves that Find Blobs by Tags reads the tag index, not
// the blobs: an equality reads its matches from the cursor on (about two
// rows per result: the index entry and the blob row), in one container or
// across the account; a range reads the entries in it. Each case is also
// run through the Store and compared with what the data implies.
func TestFindTaggedPlan(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dsn := pgtest.Start(t)
	s := open(t, dsn)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, q := range findFill {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var nt int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM blob_tags`).Scan(&nt); err != nil {
		t.Fatal(err)
	}
	if want := 2 * (2*findNames + findNames/10000); nt != want {
		t.Fatalf("%d index rows, want %d", nt, want)
	}
	name := func(i int) string { return fmt.Sprintf("d/%07d", i) }
	eq := func(k, v string) leasedb.TagRange {
		return leasedb.TagRange{Key: k, Lo: v, LoOp: ">=", Hi: v, HiOp: "<="}
	}
	// model lists the matches of a case: numbers i (in both containers,
	// c first, unless container is set) past the cursor.
	type match struct{ c, name string }
	model := func(container string, keep func(i int) bool, ac, an string, limit int) []match {
		var out []match
		for _, c := range []string{"c", "c2"} {
			if container != "" && c != container {
				continue
			}
			for i := 0; i < findNames && len(out) < limit; i++ {
				if keep(i) && (c > ac || c == ac && name(i) > an) {
					out = append(out, match{c, name(i)})
				}
			}
		}
		return out
	}
	cases := []struct {
		what      string
		container string
		r         leasedb.TagRange
		keep      func(i int) bool
		ac, an    string
		limit     int
		// matches is how many index entries the range holds from the
		// cursor on (what a range must read and sort).
		matches int
	}{
		{"rare, account", "", eq("rare", "yes"), func(i int) bool { return i%10000 == 0 }, "", "", 10, 10},
		{"rare, c", "c", eq("rare", "yes"), func(i int) bool { return i%10000 == 0 }, "", "", 1000, 10},
		{"group 7, c, first page", "c", eq("group", "7"), func(i int) bool { return i%100 == 7 }, "", "", 10, 10},
		{"group 7, c, mid cursor", "c", eq("group", "7"), func(i int) bool { return i%100 == 7 }, "c", name(50007), 10, 10},
		{"group 7, account, cursor in c", "", eq("group", "7"), func(i int) bool { return i%100 == 7 }, "c", name(90007), 1000, 1000},
		{"group 7, account, cursor in c2", "", eq("group", "7"), func(i int) bool { return i%100 == 7 }, "c2", name(30007), 10, 10},
		{"n > 0099990, c", "c", leasedb.TagRange{Key: "n", Lo: "0099990", LoOp: ">"}, func(i int) bool { return i > 99990 }, "", "", 5, 9},
		{"0050000 <= n < 0050020, account", "", leasedb.TagRange{Key: "n", Lo: "0050000", LoOp: ">=", Hi: "0050020", HiOp: "<"},
			func(i int) bool { return i >= 50000 && i < 50020 }, "c", name(50009), 100, 30},
	}
	// The triggers find a row's old entries by its old tags: retagging or
	// deleting one blob reads a few rows, not the index of its container.
	for _, w := range []string{
		`UPDATE blobs SET tags = '{"group": "x"}' WHERE account = $1 AND container = $2 AND name = $3`,
		`DELETE FROM blobs WHERE account = $1 AND container = $2 AND name = $3`,
	} {
		m, err := explainRows(ctx, conn, w, []any{"acct", "c", name(10000)}, false)
		if err != nil {
			t.Fatalf("%s: %v", w, err)
		}
		if m.seqScans != nil || m.planRows > 50 || m.statRows > 50 {
			t.Errorf("%s: sequential scans %v, %d rows by the plan, %d by the statistics; want at most 50",
				w, m.seqScans, m.planRows, m.statRows)
		}
		t.Logf("%s: %d rows read", w, max(m.planRows, m.statRows))
	}
	for _, c := range cases {
		q, args := sqlq.FindTagged(func(n int) string { return "$" + strconv.Itoa(n) }, "acct", c.container, c.r, c.ac, c.an, c.limit)
		// Two rows per result (index entry, blob row) and, for a range,
		// every entry in it; the constant covers the empty probes.
		bound := 2*min(c.limit, c.matches) + 2*c.matches + 50
		for _, generic := range []bool{false, true} {
			m, err := explainRows(ctx, conn, q, args, generic)
			if err != nil {
				t.Fatalf("%s: %v", c.what, err)
			}
			if m.seqScans != nil || m.planRows > bound || m.statRows > bound {
				t.Errorf("%s (generic %v): sequential scans %v, %d rows by the plan, %d by the statistics; want at most %d",
					c.what, generic, m.seqScans, m.planRows, m.statRows, bound)
				t.Logf("plan:\n%s", explainText(ctx, conn, q, args, generic))
			}
			t.Logf("%s (generic %v): %d rows read for limit %d", c.what, generic, max(m.planRows, m.statRows), c.limit)
		}
		var got []match
		if err := s.View(ctx, func(tx leasedb.Tx) error {
			rows, err := tx.FindTagged(ctx, "acct", c.container, c.r, c.ac, c.an, c.limit)
			for _, r := range rows {
				got = append(got, match{r.Container, r.Name})
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if want := model(c.container, c.keep, c.ac, c.an, c.limit); !reflect.DeepEqual(got, want) || len(want) == 0 {
			t.Errorf("%s: FindTagged = %v, want %v", c.what, got, want)
		}
	}
}
