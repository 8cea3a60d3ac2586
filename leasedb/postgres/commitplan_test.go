package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
	"github.com/blobgw/blobgw/leasedb/postgres"
	"github.com/blobgw/blobgw/svcerr"
)

// TestCommitReplacePlanFindsIntentsByKey: the few-statement Put Blob's
// write (CommitReplace) takes its upload intents out of gc_queue by key.
// pgx prepares it and Postgres ends up running its generic plan, planned
// without the keys; that plan must still find the intents through the
// primary key, never by walking gc_queue_due (every queued key not yet
// claimed: all the keys freed within the collection grace, 15 minutes of
// overwrites) and filtering, which made every Put Blob cost more the
// longer the queue was. The queue is checked without statistics (a new
// deployment, or a queue that grew since autovacuum last analyzed it) and
// with them.
func TestCommitReplacePlanFindsIntentsByKey(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn := pgtest.Start(t)
	open(t, dsn) // migrates
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// Keys freed by overwrites, waiting out the grace, a few intents and
	// a few claimed keys.
	for _, q := range []string{
		`INSERT INTO gc_queue (key, due_at, is_intent)
			SELECT 'b/' || md5(i::text), now() + interval '15 minutes', i % 50 = 0 FROM generate_series(1, 20000) AS i`,
		`INSERT INTO gc_queue (key, due_at, claimed_at)
			SELECT 'c/' || md5(i::text), now(), now() FROM generate_series(1, 200) AS i`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, `PREPARE commit_replace AS `+postgres.CommitReplaceSQL); err != nil {
		t.Fatal(err)
	}
	var nargs int
	if err := conn.QueryRow(ctx, `SELECT cardinality(parameter_types) FROM pg_prepared_statements WHERE name = 'commit_replace'`).Scan(&nargs); err != nil {
		t.Fatal(err)
	}
	nulls := strings.TrimSuffix(strings.Repeat("NULL, ", nargs), ", ")
	if _, err := conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	for _, stats := range []bool{false, true} {
		if stats {
			if _, err := conn.Exec(ctx, `ANALYZE gc_queue`); err != nil {
				t.Fatal(err)
			}
		}
		var plan string
		if err := conn.QueryRow(ctx, `EXPLAIN (FORMAT JSON) EXECUTE commit_replace(`+nulls+`)`).Scan(&plan); err != nil {
			t.Fatal(err)
		}
		scans, err := relationScans(plan, "gc_queue")
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range scans {
			if !strings.HasSuffix(s, " gc_queue_pkey") && s != "Bitmap Heap Scan" {
				var text string
				rows, _ := conn.Query(ctx, `EXPLAIN EXECUTE commit_replace(`+nulls+`)`)
				for rows.Next() {
					var l string
					rows.Scan(&l)
					text += l + "\n"
				}
				rows.Close()
				t.Fatalf("statistics %v: the generic plan reads gc_queue by %s, want its primary key only:\n%s", stats, s, text)
			}
		}
		if len(scans) == 0 {
			t.Fatalf("statistics %v: no scan of gc_queue in the plan:\n%s", stats, plan)
		}
	}
}

// relationScans lists the scan nodes of relation in an EXPLAIN (FORMAT
// JSON) plan as "<node type> <index name>": those that name it, and the
// bitmap index scans (which name only the index) of its indexes, whose
// names begin with relation + "_".
func relationScans(plan, relation string) ([]string, error) {
	var out []string
	err := planNodes(plan, func(n map[string]any) {
		typ, _ := n["Node Type"].(string)
		rel, _ := n["Relation Name"].(string)
		idx, _ := n["Index Name"].(string)
		if strings.Contains(typ, "Scan") && (rel == relation || strings.HasPrefix(idx, relation+"_")) {
			out = append(out, strings.TrimSpace(typ+" "+idx))
		}
	})
	return out, err
}

// planNodes calls visit on every node of an EXPLAIN (FORMAT JSON) plan,
// each before the nodes under it.
func planNodes(plan string, visit func(node map[string]any)) error {
	var doc []struct{ Plan map[string]any }
	if err := json.Unmarshal([]byte(plan), &doc); err != nil {
		return err
	}
	var walk func(n map[string]any)
	walk = func(n map[string]any) {
		visit(n)
		kids, _ := n["Plans"].([]any)
		for _, k := range kids {
			if m, ok := k.(map[string]any); ok {
				walk(m)
			}
		}
	}
	for _, d := range doc {
		walk(d.Plan)
	}
	return nil
}

// TestPutBlobClaimedIntentIsLost: CommitReplace takes intents by key and
// counts the unclaimed ones, so an intent the collector claimed (it is
// about to delete the object) fails the put as a missing intent does, and
// the failed statement leaves the claimed entry and the name as they were.
func TestPutBlobClaimedIntentIsLost(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t)
	s := open(t, dsn)
	db := &leasedb.DB{Store: s}
	updateNow(t, s, func(tx leasedb.Tx, now time.Time) error {
		if err := tx.InsertContainer(ctx, &leasedb.Container{Account: "a", Name: "c", ETag: `"0x1"`, LastModified: now}); err != nil {
			return err
		}
		// Due at once: the collector claims it.
		return tx.AddIntent(ctx, "k1", now.Add(-time.Second))
	})
	claimed, err := s.ClaimDue(ctx, 10, time.Hour)
	if err != nil || !slices.Equal(claimed, []string{"k1"}) {
		t.Fatalf("ClaimDue = %v, %v; want [k1]", claimed, err)
	}
	_, _, err = db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: leasedb.BlobRef{Account: "a", Container: "c", Name: "b"},
		Type: "BlockBlob", Extents: []leasedb.Extent{{Key: "k1", Size: 1}}})
	if e, ok := svcerr.As(err); !ok || e.Code != svcerr.OperationTimedOut {
		t.Fatalf("Put Blob on a claimed intent: %v; want %s", err, svcerr.OperationTimedOut)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var entries, claimedEntries, blobs int
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM gc_queue WHERE key = 'k1'),
		(SELECT count(*) FROM gc_queue WHERE key = 'k1' AND is_intent AND claimed_at IS NOT NULL),
		(SELECT count(*) FROM blobs)`).Scan(&entries, &claimedEntries, &blobs); err != nil {
		t.Fatal(err)
	}
	if entries != 1 || claimedEntries != 1 || blobs != 0 {
		t.Fatalf("after the refused put: %d queue entries of k1 (%d claimed intents), %d blob rows; want 1 (1), 0", entries, claimedEntries, blobs)
	}
}

// TestPutBlobRunsGenericPlans: the two statements of a Put Blob
// (LockForReplace, CommitReplace) are planned once per connection and then
// run from their cached generic plan. Postgres (plan_cache_mode auto)
// plans a prepared statement anew for every execution while its generic
// plan looks costlier than the custom ones; for these statements that
// planning costs more than running them (BenchmarkPostgresCPU with
// plan_cache_mode = force_custom_plan: 2.3 times the database CPU per
// Put Blob). A change to either statement that makes Postgres keep
// planning it fails here.
func TestPutBlobRunsGenericPlans(t *testing.T) {
	ctx := context.Background()
	dsn := statementsDB(t)
	// One connection: its prepared statements see every put.
	s := open(t, dsn+"&pool_max_conns=1")
	db := &leasedb.DB{Store: s}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE EXTENSION pg_stat_statements`); err != nil {
		t.Fatal(err)
	}
	addContainer(t, s)
	if _, err := conn.Exec(ctx, `SELECT pg_stat_statements_reset()`); err != nil {
		t.Fatal(err)
	}
	const puts = 40
	etag := ""
	for i := range puts {
		key := fmt.Sprintf("k%d", i)
		if err := db.AddIntent(ctx, key, time.Hour); err != nil {
			t.Fatal(err)
		}
		var cond leasedb.Conditions
		if etag != "" {
			cond.IfMatch = []string{etag}
		}
		b, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: leasedb.BlobRef{Account: "a", Container: "c", Name: "b"},
			Type: "BlockBlob", Extents: []leasedb.Extent{{Key: key, Size: 1}}, Cond: cond})
		if err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
		etag = strings.Trim(b.ETag, `"`)
	}
	for _, st := range []struct{ name, like string }{
		{"LockForReplace", `%pg_advisory_xact_lock%FOR UPDATE%`},
		{"CommitReplace", `WITH chk AS MATERIALIZED%`},
	} {
		var calls, plans int64
		if err := conn.QueryRow(ctx, `SELECT coalesce(sum(calls), 0)::bigint, coalesce(sum(plans), 0)::bigint
			FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND query LIKE $1`, st.like).Scan(&calls, &plans); err != nil {
			t.Fatal(err)
		}
		// The first five executions are planned for their values (custom
		// plans), then the generic plan is built once.
		if calls < puts || plans > 8 {
			t.Errorf("%s: %d executions, %d of them planned; want %d executions and at most 8 planned", st.name, calls, plans, puts)
		}
	}
}
