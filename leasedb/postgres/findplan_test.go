package postgres_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb/internal/plancase"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

// findFill writes the blobs plancase.FindCases finds (plancase.FindNames
// in each container, their tags indexed by migration 0009's triggers).
var findFill = []string{
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
	s, conn := filledStore(t, ctx, findFill)
	var nt int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM blob_tags`).Scan(&nt); err != nil {
		t.Fatal(err)
	}
	if want := plancase.FindIndexRows; nt != want {
		t.Fatalf("%d index rows, want %d", nt, want)
	}
	name := plancase.FindName
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
	for _, c := range plancase.FindCases() {
		q, args := sqlq.FindTagged(func(n int) string { return "$" + strconv.Itoa(n) }, "acct", c.Container, c.R, c.AC, c.AN, c.Limit)
		// Two rows per result (index entry, blob row) and, for a range,
		// every entry in it; the constant covers the empty probes.
		bound := 2*min(c.Limit, c.Matches) + 2*c.Matches + 50
		for _, generic := range []bool{false, true} {
			m, err := explainRows(ctx, conn, q, args, generic)
			if err != nil {
				t.Fatalf("%s: %v", c.What, err)
			}
			if m.seqScans != nil || m.planRows > bound || m.statRows > bound {
				t.Errorf("%s (generic %v): sequential scans %v, %d rows by the plan, %d by the statistics; want at most %d",
					c.What, generic, m.seqScans, m.planRows, m.statRows, bound)
				t.Logf("plan:\n%s", explainText(ctx, conn, q, args, generic))
			}
			t.Logf("%s (generic %v): %d rows read for limit %d", c.What, generic, max(m.planRows, m.statRows), c.Limit)
		}
		if err := c.Check(ctx, s); err != nil {
			t.Errorf("%s: %v", c.What, err)
		}
	}
}
