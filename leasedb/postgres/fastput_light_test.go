package postgres_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
	"github.com/blobgw/blobgw/leasedb/pgtest"
	"github.com/blobgw/blobgw/leasedb/postgres"
	"github.com/blobgw/blobgw/svcerr"
)

// TestExtentsHaveKeySQL: LockForReplace's test for extents that name an
// object agrees with the extents themselves (false only when no extent
// has a key: inline bytes; true for every key, those that encoding/json's
// fallback escapes included), both from the extents_keys column every
// write sets (ExtentsKeys) and, where that is NULL (a row written before
// migration 0018), on the text EncodeExtents writes.
func TestExtentsHaveKeySQL(t *testing.T) {
	ctx := context.Background()
	conn := pgtest.Connect(t, pgtest.Start(t))
	inline := leasedb.Extent{Size: 3, Data: []byte("abc")}
	for _, x := range [][]leasedb.Extent{
		nil,
		{inline},
		{inline, {Size: 1, Data: []byte{0xff}, BlockID: "AAAA"}},
		{{Key: "k1", Size: 1}},
		{inline, {Key: "k2", Size: 1}},
		{{Key: "k3", Size: 1, BlockID: "QUFB"}, inline},
		{{Key: `quote"d`, Size: 1}},
		{{Key: "\x01ctl", Size: 1}},
		{{Key: "\\back", Size: 1}},
		{{Key: "é<&>", Size: 1}},
		{{Key: "p", Size: 512, At: 1024, Off: 512}},
	} {
		text, err := leasedb.EncodeExtents(x)
		if err != nil {
			t.Fatal(err)
		}
		want := slices.ContainsFunc(x, func(e leasedb.Extent) bool { return e.Key != "" })
		if got := postgres.ExtentsKeys(x); got != want {
			t.Errorf("extents %s: extents_keys %v, want %v", text, got, want)
		}
		for col, args := range map[string][]any{"NULL": {text}, "$2": {text, want}} {
			var got bool
			q := `SELECT ` + strings.ReplaceAll(strings.ReplaceAll(postgres.ExtentsHaveKeySQL, "b.extents_keys", col+"::bool"), "b.extents", "$1::text")
			if err := conn.QueryRow(ctx, q, args...).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("extents %s, extents_keys %s: has a key %v, want %v", text, col, got, want)
			}
		}
	}
}

// TestLockForReplaceSkipsInlineExtents: LockForReplace reads whether the
// row's keys are shared (parsing its extents) and whether the name has
// other rows (snapshots, versions, soft-deleted rows) only when the row's
// extents name an object: a small blob's bytes, base64 in that text, are
// not parsed as JSON by every overwrite, and an inline row has no keys to
// keep. Those reads are the function blob_replace_keys, called for a row
// with a key and never for an inline row (its calls counted with
// track_functions), and the statement's own plan has none of their scans,
// which would be set up on every run whether or not they ran (EXPLAIN
// ANALYZE: no scan of json_array_elements or of the other rows' tables).
func TestLockForReplaceSkipsInlineExtents(t *testing.T) {
	ctx := context.Background()
	dsn, _, db := containerStore(t)
	if err := db.AddIntent(ctx, "k1", time.Hour); err != nil {
		t.Fatal(err)
	}
	body := []byte(strings.Repeat("0123456789abcdef", 256))
	for name, x := range map[string]leasedb.Extent{"inline": {Size: int64(len(body)), Data: body}, "keyed": {Key: "k1", Size: 1}} {
		if _, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: leasedb.BlobRef{Account: "a", Container: "c", Name: name},
			Type: "BlockBlob", Extents: []leasedb.Extent{x}}); err != nil {
			t.Fatal(err)
		}
	}
	conn := pgtest.Connect(t, dsn)
	for name, want := range map[string]int64{"inline": 0, "keyed": 1} {
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// The backend's function counts not yet flushed to the shared
		// statistics (about once a second) include earlier
		// transactions' calls: count the statement's own as the
		// difference around it.
		const countSQL = `SELECT COALESCE(pg_stat_get_xact_function_calls('blob_replace_keys(text, text, text, text)'::regprocedure), 0)`
		var (
			plan          string
			before, calls int64
		)
		_, err = tx.Exec(ctx, `SET LOCAL track_functions = 'pl'`)
		if err == nil {
			err = tx.QueryRow(ctx, countSQL).Scan(&before)
		}
		if err == nil {
			err = tx.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) `+postgres.LockForReplaceSQL, "a", "c", name, int64(1), int64(2), true).Scan(&plan)
		}
		if err == nil {
			err = tx.QueryRow(ctx, countSQL).Scan(&calls)
		}
		tx.Rollback(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if calls -= before; calls != want {
			t.Errorf("%s row: blob_replace_keys ran %d times; want %d", name, calls, want)
		}
		for _, what := range []string{"json_array_elements", "snapshots", "versions", "deleted_blobs", "extent_shares"} {
			if n, err := scanNodes(plan, what); err != nil {
				t.Fatal(err)
			} else if n > 0 {
				t.Errorf("%s row: the statement's plan has %d scans of %s; want them in blob_replace_keys only\n%s", name, n, what, plan)
			}
		}
	}
}

// TestLockForReplaceLeavesInlineTextUnread: for a plain Put Blob
// (ReadKeysIfPlain) over a row whose extents have no key, LockForReplace
// neither fetches nor sends the extents text (a small blob's bytes in
// base64, stored out of line: no block of blobs' TOAST table read, the
// column NULL) and gives the row with no extents (NoData); a row with a
// key is read with its keys, and ReadWhole reads an inline row's bytes.
// A row written before migration 0018 (extents_keys NULL) is judged by
// its text, with the same outcome.
func TestLockForReplaceLeavesInlineTextUnread(t *testing.T) {
	ctx := context.Background()
	dsn, s, db := containerStore(t)
	if err := db.AddIntent(ctx, "k1", time.Hour); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, 4096)
	rand.Read(body) // 5.5 KB of base64 that pglz cannot shrink: stored out of line
	rows := map[string]leasedb.Extent{"inline": {Size: int64(len(body)), Data: body}, "keyed": {Key: "k1", Size: 1}}
	for name, x := range rows {
		if _, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: leasedb.BlobRef{Account: "a", Container: "c", Name: name},
			Type: "BlockBlob", Extents: []leasedb.Extent{x}}); err != nil {
			t.Fatal(err)
		}
	}
	conn := pgtest.Connect(t, dsn)
	var toast uint32
	if err := conn.QueryRow(ctx, `SELECT reltoastrelid FROM pg_class WHERE relname = 'blobs'`).Scan(&toast); err != nil {
		t.Fatal(err)
	}
	for _, unknown := range []bool{false, true} {
		if unknown {
			if _, err := conn.Exec(ctx, `UPDATE blobs SET extents_keys = NULL`); err != nil {
				t.Fatal(err)
			}
		}
		for name, x := range rows {
			for _, read := range []leasedb.ReplaceRead{leasedb.ReadKeysIfPlain, leasedb.ReadWhole} {
				what := fmt.Sprintf("%s row, extents_keys unknown %v, read %d", name, unknown, read)
				skip := name == "inline" && read == leasedb.ReadKeysIfPlain
				// The statement alone: what it reads of the TOAST table
				// and what it sends.
				tx, err := conn.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				var ext *string
				var fetched int64
				err = tx.QueryRow(ctx, `SELECT extents FROM (`+postgres.LockForReplaceSQL+`) AS l (`+sqlq.BlobCols+`, found, cont, now, versioning, days, etag, keys)`,
					"a", "c", name, int64(1), int64(2), read == leasedb.ReadKeysIfPlain).Scan(&ext)
				if err == nil {
					err = tx.QueryRow(ctx, `SELECT pg_stat_get_xact_blocks_fetched($1)`, toast).Scan(&fetched)
				}
				tx.Rollback(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if skip != (ext == nil) {
					t.Errorf("%s: extents sent %v; want %v", what, ext != nil, !skip)
				}
				// A row of unknown extents_keys has its text searched.
				if name == "inline" && (skip && !unknown) != (fetched == 0) {
					t.Errorf("%s: %d blocks of the TOAST table read; want them read %v", what, fetched, !skip || unknown)
				}
				// Through LockForReplace.
				var st leasedb.ReplaceState
				errDone := errors.New("done")
				err = s.Update(ctx, func(tx leasedb.Tx) error {
					var err error
					if st, err = tx.(leasedb.BlobWriteLocker).LockForReplace(ctx, leasedb.BlobRef{Account: "a", Container: "c", Name: name}, read); err != nil {
						return err
					}
					return errDone
				})
				if !errors.Is(err, errDone) {
					t.Fatal(err)
				}
				want := []leasedb.Extent{x}
				switch {
				case skip:
					want = nil
				case read == leasedb.ReadKeysIfPlain:
					want[0].Data = nil
				}
				if st.Blob == nil || st.NoData != (read == leasedb.ReadKeysIfPlain) || fmt.Sprint(st.Blob.Extents) != fmt.Sprint(want) {
					t.Errorf("%s: blob %v, NoData %v; want extents %v, NoData %v", what, st.Blob, st.NoData, want, read == leasedb.ReadKeysIfPlain)
				}
			}
		}
	}
}

// scanNodes counts the scan nodes of what (a function or a relation) in
// an EXPLAIN (FORMAT JSON) plan, whether or not they ran.
func scanNodes(plan, what string) (int, error) {
	var n int
	err := planNodes(plan, func(m map[string]any) {
		if typ, _ := m["Node Type"].(string); strings.HasSuffix(typ, "Scan") && (m["Function Name"] == what || m["Relation Name"] == what) {
			n++
		}
	})
	return n, err
}

// TestLockForReplaceKeyState: what LockForReplace reads of a name for its
// row's keys (blob_replace_keys): NameRows when the name has a snapshot, a
// version or a soft-deleted row, SharedKeys when another name shares a
// key of the row, neither for a keyed row alone, and neither (not read)
// for an inline row, whatever the name has.
func TestLockForReplaceKeyState(t *testing.T) {
	ctx := context.Background()
	dsn, s, db := containerStore(t)
	conn := pgtest.Connect(t, dsn)
	copyRow := func(name, table, cols, extra string) string {
		return `INSERT INTO ` + table + ` (` + sqlq.BlobCols + cols + `) SELECT ` + sqlq.BlobCols + extra +
			` FROM blobs WHERE account = 'a' AND container = 'c' AND name = '` + name + `'`
	}
	for _, tc := range []struct {
		name               string
		inline             bool
		setup              func(name string) string
		nameRows, sharedKs bool
	}{
		{name: "alone"},
		{name: "snapshot", setup: func(n string) string { return copyRow(n, "snapshots", ", snapshot", ", 'snap'") }, nameRows: true},
		{name: "version", setup: func(n string) string {
			return strings.Replace(copyRow(n, "versions", "", ""), "version_id, sequence_number FROM", "'v1', sequence_number FROM", 1)
		}, nameRows: true},
		{name: "softdeleted", setup: func(n string) string {
			return copyRow(n, "deleted_blobs", ", snapshot, deleted_at, expires_at", ", '', 1, 2")
		}, nameRows: true},
		{name: "shared", setup: func(n string) string { return `INSERT INTO extent_shares (key, names) VALUES ('key-` + n + `', 2)` }, sharedKs: true},
		{name: "inline-snapshot", inline: true, setup: func(n string) string { return copyRow(n, "snapshots", ", snapshot", ", 'snap'") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref := leasedb.BlobRef{Account: "a", Container: "c", Name: tc.name}
			x := leasedb.Extent{Key: "key-" + tc.name, Size: 1}
			if tc.inline {
				x = leasedb.Extent{Size: 3, Data: []byte("abc")}
			} else if err := db.AddIntent(ctx, x.Key, time.Hour); err != nil {
				t.Fatal(err)
			}
			if _, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: ref, Type: "BlockBlob", Extents: []leasedb.Extent{x}}); err != nil {
				t.Fatal(err)
			}
			if tc.setup != nil {
				if _, err := conn.Exec(ctx, tc.setup(tc.name)); err != nil {
					t.Fatal(err)
				}
			}
			var st leasedb.ReplaceState
			errDone := errors.New("done")
			err := s.Update(ctx, func(tx leasedb.Tx) error {
				var err error
				if st, err = tx.(leasedb.BlobWriteLocker).LockForReplace(ctx, ref, leasedb.ReadWhole); err != nil {
					return err
				}
				return errDone
			})
			if !errors.Is(err, errDone) {
				t.Fatal(err)
			}
			if st.Blob == nil || st.NameRows != tc.nameRows || st.SharedKeys != tc.sharedKs {
				t.Errorf("blob %v, NameRows %v, SharedKeys %v; want a blob, %v, %v", st.Blob != nil, st.NameRows, st.SharedKeys, tc.nameRows, tc.sharedKs)
			}
		})
	}
}

// TestPutBlobLightCommit: a write with no intent to take and no key to
// free (an inline Put Blob over an absent or inline blob) commits with
// CommitReplace's light statement when the name has staged blocks, and
// that statement still drops them and queues their objects; without
// staged blocks with the bare statement (the row's upsert alone); each
// from its cached generic plan. Set Blob Metadata (which keeps them)
// takes none of them, but the UPDATE of its columns. A write with an
// intent takes the full one. (The one-round-trip Put Blob, which would
// take those inline puts, is off: onetrip_test.go.)
func TestPutBlobLightCommit(t *testing.T) {
	ctx := context.Background()
	dsn := statementsDB(t)
	s := open(t, dsn+"&pool_max_conns=1")
	postgres.NoOneTrip(s)
	db := &leasedb.DB{Store: s}
	conn := pgtest.Connect(t, dsn)
	if _, err := conn.Exec(ctx, `CREATE EXTENSION pg_stat_statements`); err != nil {
		t.Fatal(err)
	}
	addContainer(t, s)
	stage := func(name, id, key string) {
		t.Helper()
		if err := db.AddIntent(ctx, key, time.Hour); err != nil {
			t.Fatal(err)
		}
		if err := db.StageBlock(ctx, leasedb.StageBlockRequest{Ref: leasedb.BlobRef{Account: "a", Container: "c", Name: name},
			Block: leasedb.Block{ID: id, Key: key, Size: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	put := func(name string, x leasedb.Extent, cond leasedb.Conditions) *leasedb.Blob {
		t.Helper()
		b, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: leasedb.BlobRef{Account: "a", Container: "c", Name: name},
			Type: "BlockBlob", Extents: []leasedb.Extent{x}, Cond: cond})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// statements sums the CommitReplace executions since the last call,
	// bare (the upsert alone), light (no intents taken) and full; attrs
	// gets those of the columns' UPDATE (ReplaceWrite.Attrs), which plans
	// does not count.
	var attrs int64
	statements := func() (bare, light, full, plans int64) {
		t.Helper()
		if err := conn.QueryRow(ctx, `SELECT
			coalesce(sum(calls) FILTER (WHERE query LIKE 'WITH up AS (INSERT INTO blobs%'), 0)::bigint,
			coalesce(sum(calls) FILTER (WHERE query LIKE 'WITH chk AS MATERIALIZED%' AND query NOT LIKE '%DELETE FROM gc_queue%'), 0)::bigint,
			coalesce(sum(calls) FILTER (WHERE query LIKE 'WITH chk AS MATERIALIZED%' AND query LIKE '%DELETE FROM gc_queue%'), 0)::bigint,
			coalesce(sum(plans) FILTER (WHERE query NOT LIKE 'WITH up AS (UPDATE blobs%'), 0)::bigint,
			coalesce(sum(calls) FILTER (WHERE query LIKE 'WITH up AS (UPDATE blobs%'), 0)::bigint
			FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND (query LIKE 'WITH chk AS MATERIALIZED%' OR query LIKE 'WITH up AS (INSERT INTO blobs%' OR query LIKE 'WITH up AS (UPDATE blobs%')`).Scan(&bare, &light, &full, &plans, &attrs); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `SELECT pg_stat_statements_reset()`); err != nil {
			t.Fatal(err)
		}
		return bare, light, full, plans
	}
	statements()

	// Inline puts: the first creates the name, the others replace it, each
	// after a block was staged; the last has If-Match.
	const puts = 20
	var etag string
	for i := range puts {
		stage("n", "YmxrMQ==", fmt.Sprintf("staged-%d", i))
		var cond leasedb.Conditions
		if etag != "" && i == puts-1 {
			cond.IfMatch = []string{strings.Trim(etag, `"`)}
		}
		b := put("n", leasedb.Extent{Size: 2, Data: []byte{byte(i), 1}}, cond)
		etag = b.ETag
	}
	bare, light, full, plans := statements()
	if light != puts || full != 0 || bare != 0 {
		t.Errorf("inline puts over staged blocks: %d bare, %d light and %d full CommitReplace statements, want %d light", bare, light, full, puts)
	}
	if plans > 8 {
		t.Errorf("inline puts over staged blocks: %d of %d CommitReplace executions planned, want at most 8 (the generic plan cached)", plans, light+full)
	}
	var staged int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM blocks`).Scan(&staged); err != nil {
		t.Fatal(err)
	}
	keys, err := s.CollectionKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range puts {
		if k := fmt.Sprintf("staged-%d", i); !slices.Contains(keys, k) {
			t.Errorf("the object of the block staged before put %d (%s) is not queued for collection", i, k)
		}
	}
	if staged != 0 {
		t.Errorf("%d staged blocks left after the inline puts, want none", staged)
	}
	var got *leasedb.Blob
	if err := s.View(ctx, func(tx leasedb.Tx) error {
		got, err = tx.Blob(ctx, "a", "c", "n", leasedb.LockNone)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got == nil || got.ETag != etag || len(got.Extents) != 1 || !slices.Equal(got.Extents[0].Data, []byte{puts - 1, 1}) {
		t.Fatalf("the row is %+v, want the last put's (ETag %s)", got, etag)
	}

	// Without staged blocks, with If-Match.
	for i := range puts {
		etag = put("n", leasedb.Extent{Size: 2, Data: []byte{byte(i), 2}}, leasedb.Conditions{IfMatch: []string{strings.Trim(etag, `"`)}}).ETag
	}
	if bare, light, full, plans := statements(); bare != puts || light != 0 || full != 0 || plans > 8 {
		t.Errorf("inline puts: %d bare, %d light and %d full CommitReplace statements, %d planned; want %d bare, at most 8 planned",
			bare, light, full, plans, puts)
	}
	if err := s.View(ctx, func(tx leasedb.Tx) error {
		got, err = tx.Blob(ctx, "a", "c", "n", leasedb.LockNone)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got == nil || got.ETag != etag || len(got.Extents) != 1 || !slices.Equal(got.Extents[0].Data, []byte{puts - 1, 2}) {
		t.Fatalf("the row is %+v, want the last put's (ETag %s)", got, etag)
	}

	// Set Blob Metadata keeps the staged blocks: the UPDATE of the
	// columns it changes (ReplaceWrite.Attrs), which leaves them as they
	// are, and no upsert.
	stage("n", "YmxrMg==", "kept")
	if _, err := db.SetBlobMetadata(ctx, leasedb.BlobRef{Account: "a", Container: "c", Name: "n"}, "", leasedb.Conditions{},
		map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	if bare, light, full, _ := statements(); attrs != 1 || bare != 0 || light != 0 || full != 0 {
		t.Errorf("Set Blob Metadata: %d attributes, %d bare, %d light and %d full CommitReplace statements, want 1 attributes", attrs, bare, light, full)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM blocks WHERE key = 'kept'`).Scan(&staged); err != nil {
		t.Fatal(err)
	}
	if staged != 1 {
		t.Errorf("Set Blob Metadata left %d of the name's staged blocks, want 1", staged)
	}

	// A put with an intent to take goes the full way.
	if err := db.AddIntent(ctx, "k1", time.Hour); err != nil {
		t.Fatal(err)
	}
	put("n", leasedb.Extent{Key: "k1", Size: 1}, leasedb.Conditions{})
	if bare, light, full, _ := statements(); bare != 0 || light != 0 || full != 1 {
		t.Errorf("a put with an intent: %d bare, %d light and %d full CommitReplace statements, want 1 full", bare, light, full)
	}
}

// TestPutBlobInlineAwaitsNameLock is TestPutBlobAwaitsNameLock for the
// light commit (an inline put over an absent name: no intent, nothing to
// free): a row created while the put waited for the name's lock, which the
// put's snapshot could not see, still decides it (If-None-Match: * finds
// it) and is collected when the put replaces it (the retry frees its key).
func TestPutBlobInlineAwaitsNameLock(t *testing.T) {
	ctx := context.Background()
	s, race := nameLockRacer(t)
	db := &leasedb.DB{Store: s}
	create := func(name, key string) func(tx leasedb.Tx, now time.Time) error {
		return func(tx leasedb.Tx, now time.Time) error {
			return tx.PutBlob(ctx, &leasedb.Blob{Account: "a", Container: "c", Name: name, Type: "BlockBlob", ETag: `"0x2"`,
				Created: now, LastModified: now, Size: 1, Extents: []leasedb.Extent{{Key: key, Size: 1}}})
		}
	}
	putInline := func(name string, cond leasedb.Conditions) func() error {
		return func() error {
			_, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: leasedb.BlobRef{Account: "a", Container: "c", Name: name},
				Type: "BlockBlob", Extents: []leasedb.Extent{{Size: 2, Data: []byte("hi")}}, Cond: cond})
			return err
		}
	}
	current := func(name string) *leasedb.Blob {
		t.Helper()
		return readBlob(t, s, name)
	}

	t.Run("if-none-match finds the row created meanwhile", func(t *testing.T) {
		err := race("created", create("created", "holder-1"), putInline("created", leasedb.Conditions{IfNoneMatch: []string{"*"}}))
		if !svcerr.HasCode(err, svcerr.BlobAlreadyExists) {
			t.Fatalf("inline Put Blob with If-None-Match: * over a row created while it waited: %v, want BlobAlreadyExists", err)
		}
		if b := current("created"); b == nil || len(b.Extents) != 1 || b.Extents[0].Key != "holder-1" {
			t.Fatalf("the row is %+v, want the holder's", b)
		}
	})
	t.Run("an overwrite collects the row created meanwhile", func(t *testing.T) {
		if err := race("created2", create("created2", "holder-2"), putInline("created2", leasedb.Conditions{})); err != nil {
			t.Fatal(err)
		}
		if b := current("created2"); b == nil || len(b.Extents) != 1 || string(b.Extents[0].Data) != "hi" {
			t.Fatalf("the row is %+v, want the put's", b)
		}
		keys, err := s.CollectionKeys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(keys, "holder-2") {
			t.Fatal("the key of the row the inline put replaced was not queued for collection")
		}
	})
	// The put's first statement cannot see a block staged while it waited
	// for the name's lock (Put Block takes it); its commit must still drop
	// it and queue its object.
	for _, existing := range []bool{false, true} {
		name := fmt.Sprintf("staged-%v", existing)
		t.Run("a block staged meanwhile is dropped, row "+fmt.Sprint(existing), func(t *testing.T) {
			if existing {
				if err := putInline(name, leasedb.Conditions{})(); err != nil {
					t.Fatal(err)
				}
			}
			if err := race(name, func(tx leasedb.Tx, now time.Time) error {
				_, err := tx.StageBlock(ctx, "a", "c", name, leasedb.Block{ID: "YmxrMQ==", Key: name + "-block", Size: 1, StagedAt: now})
				return err
			}, putInline(name, leasedb.Conditions{})); err != nil {
				t.Fatal(err)
			}
			if blocks := stagedBlocks(t, s, name); len(blocks) != 0 {
				t.Fatalf("staged blocks after the put: %+v, want none", blocks)
			}
			keys, err := s.CollectionKeys(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(keys, name+"-block") {
				t.Fatal("the object of the block staged while the put waited was not queued for collection")
			}
		})
	}
}
