package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

// findNames blobs in each of containers c and c2, d/0000000 …, with the
// tags n (the number, unique), group (number % 100) and, on every 10,000th,
// rare = yes; migration 0009's triggers index them as they go in.
const findNames = 100000

var findFill = []string{
	`INSERT INTO containers (account, name, etag) VALUES ('acct', 'c', '"c"'), ('acct', 'c2', '"c2"')`,
	`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 99999)
	INSERT INTO blobs (account, container, name, blob_type, etag, tags)
		SELECT 'acct', cs.c, printf('d/%07d', i), 'BlockBlob', '"b' || i || '"',
			CASE WHEN i % 10000 = 0
				THEN json_object('n', printf('%07d', i), 'group', CAST(i % 100 AS TEXT), 'rare', 'yes')
				ELSE json_object('n', printf('%07d', i), 'group', CAST(i % 100 AS TEXT)) END
		FROM n, (SELECT 'c' AS c UNION ALL SELECT 'c2') AS cs`,
}

// TestFindTaggedPlan proves that Find Blobs by Tags reads the tag index, not
// the blobs, on SQLite: an equality is a search of blob_tags' key (no
// sort), every query's pages stay within a bound set by its results, not
// by the container, and retagging or deleting one blob fetches a few
// pages. The results are compared with what the data implies. Checked
// without statistics and after ANALYZE.
func TestFindTaggedPlan(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "meta.db")
	s := open(t, path)
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range findFill {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			tx.Rollback()
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var nt int
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM blob_tags`).Scan(&nt); err != nil {
		t.Fatal(err)
	}
	if want := 2 * (2*findNames + findNames/10000); nt != want {
		t.Fatalf("%d index rows, want %d", nt, want)
	}
	fullScan, err := pagesFetched(ctx, conn, `SELECT count(*) FROM blob_tags WHERE account = ? AND key = ?`, "acct", "group")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("reading every group entry fetches %d pages", fullScan)

	name := func(i int) string { return fmt.Sprintf("d/%07d", i) }
	eq := func(k, v string) leasedb.TagRange {
		return leasedb.TagRange{Key: k, Lo: v, LoOp: ">=", Hi: v, HiOp: "<="}
	}
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
	group7 := func(i int) bool { return i%100 == 7 }
	cases := []struct {
		what      string
		container string
		r         leasedb.TagRange
		keep      func(i int) bool
		ac, an    string
		limit     int
		matches   int // index entries in the range from the cursor on
	}{
		{"rare, account", "", eq("rare", "yes"), func(i int) bool { return i%10000 == 0 }, "", "", 10, 10},
		{"group 7, c, first page", "c", eq("group", "7"), group7, "", "", 10, 10},
		{"group 7, c, mid cursor", "c", eq("group", "7"), group7, "c", name(50007), 10, 10},
		{"group 7, account, cursor in c", "", eq("group", "7"), group7, "c", name(90007), 1000, 1000},
		{"group 7, account, cursor in c2", "", eq("group", "7"), group7, "c2", name(30007), 10, 10},
		{"n > 0099990, c", "c", leasedb.TagRange{Key: "n", Lo: "0099990", LoOp: ">"}, func(i int) bool { return i > 99990 }, "", "", 5, 9},
		{"0050000 <= n < 0050020, account", "", leasedb.TagRange{Key: "n", Lo: "0050000", LoOp: ">=", Hi: "0050020", HiOp: "<"},
			func(i int) bool { return i >= 50000 && i < 50020 }, "c", name(50009), 100, 30},
	}
	for _, phase := range []string{"no statistics", "ANALYZE"} {
		if phase == "ANALYZE" {
			if _, err := conn.ExecContext(ctx, `ANALYZE`); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range cases {
			q, args := sqlq.FindTagged(func(int) string { return "?" }, "acct", c.container, c.r, c.ac, c.an, c.limit)
			plan, err := queryPlan(ctx, conn, q, args)
			if err != nil {
				t.Fatalf("%s: %v", c.what, err)
			}
			text := planText(plan)
			search := false
			for _, st := range plan {
				d := st.detail
				switch {
				case strings.HasPrefix(d, "SCAN "):
					t.Errorf("%s (%s): %s", c.what, phase, d)
				case strings.HasPrefix(d, "SEARCH t USING PRIMARY KEY (account=? AND key=?"):
					search = true
				case strings.HasPrefix(d, "USE TEMP B-TREE") && c.r.Lo == c.r.Hi:
					t.Errorf("%s (%s): an equality is sorted: %s", c.what, phase, d)
				}
			}
			if !search {
				t.Errorf("%s (%s): no search of blob_tags by key:\n%s", c.what, phase, text)
			}
			// About 4 pages per result (a descent of blobs' key for the
			// tags; the index entries sit together) and per entry a
			// range reads; the constant covers the first descents.
			pages, err := pagesFetched(ctx, conn, q, args...)
			if err != nil {
				t.Fatal(err)
			}
			if bound := 6*min(c.limit, c.matches) + 2*c.matches + 40; pages > bound {
				t.Errorf("%s (%s): %d pages fetched, want at most %d; plan:\n%s", c.what, phase, pages, bound, text)
			}
			t.Logf("%s (%s): %d pages for limit %d", c.what, phase, pages, c.limit)

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
	// The triggers find a row's old entries by its old tags.
	for i, w := range []string{
		`UPDATE blobs SET tags = '{"group": "x"}' WHERE account = ? AND container = ? AND name = ?`,
		`DELETE FROM blobs WHERE account = ? AND container = ? AND name = ?`,
	} {
		pages, err := pagesFetched(ctx, conn, w, "acct", "c", name(10000+i))
		if err != nil {
			t.Fatalf("%s: %v", w, err)
		}
		if pages > 100 || pages*20 > fullScan {
			t.Errorf("%s: %d pages fetched; want at most 100 (all group entries: %d)", w, pages, fullScan)
		}
		t.Logf("%s: %d pages", w, pages)
	}
	var n int
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM blob_tags WHERE container = 'c' AND name IN (?, ?)`, name(10000), name(10001)).Scan(&n); err != nil || n != 1 {
		t.Fatalf("after retagging one blob and deleting another: %d index rows for them (%v), want 1", n, err)
	}
}
