package sqlite_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb/internal/plancase"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

// findFill writes the blobs plancase.FindCases finds (plancase.FindNames
// in each container, their tags indexed by migration 0009's triggers).
var findFill = []string{
	series(1, 100000) + `
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
	s, db := filledStore(t, ctx, findFill)
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var nt int
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM blob_tags`).Scan(&nt); err != nil {
		t.Fatal(err)
	}
	if want := plancase.FindIndexRows; nt != want {
		t.Fatalf("%d index rows, want %d", nt, want)
	}
	fullScan, err := pagesFetched(ctx, conn, `SELECT count(*) FROM blob_tags WHERE account = ? AND key = ?`, "acct", "group")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("reading every group entry fetches %d pages", fullScan)

	name := plancase.FindName
	for _, phase := range []string{"no statistics", "ANALYZE"} {
		if phase == "ANALYZE" {
			if _, err := conn.ExecContext(ctx, `ANALYZE`); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range plancase.FindCases() {
			q, args := sqlq.FindTagged(func(int) string { return "?" }, "acct", c.Container, c.R, c.AC, c.AN, c.Limit)
			plan, err := queryPlan(ctx, conn, q, args)
			if err != nil {
				t.Fatalf("%s: %v", c.What, err)
			}
			text := planText(plan)
			search := false
			for _, st := range plan {
				d := st.detail
				switch {
				case strings.HasPrefix(d, "SCAN "):
					t.Errorf("%s (%s): %s", c.What, phase, d)
				case strings.HasPrefix(d, "SEARCH t USING PRIMARY KEY (account=? AND key=?"):
					search = true
				case strings.HasPrefix(d, "USE TEMP B-TREE") && c.R.Lo == c.R.Hi:
					t.Errorf("%s (%s): an equality is sorted: %s", c.What, phase, d)
				}
			}
			if !search {
				t.Errorf("%s (%s): no search of blob_tags by key:\n%s", c.What, phase, text)
			}
			// About 4 pages per result (a descent of blobs' key for the
			// tags; the index entries sit together) and per entry a
			// range reads; the constant covers the first descents.
			pages, err := pagesFetched(ctx, conn, q, args...)
			if err != nil {
				t.Fatal(err)
			}
			if bound := 6*min(c.Limit, c.Matches) + 2*c.Matches + 40; pages > bound {
				t.Errorf("%s (%s): %d pages fetched, want at most %d; plan:\n%s", c.What, phase, pages, bound, text)
			}
			t.Logf("%s (%s): %d pages for limit %d", c.What, phase, pages, c.Limit)

			if err := c.Check(ctx, s); err != nil {
				t.Errorf("%s: %v", c.What, err)
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
