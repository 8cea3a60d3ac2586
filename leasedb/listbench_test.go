package leasedb_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
	"github.com/blobgw/blobgw/leasedb/pgtest"
	"github.com/blobgw/blobgw/leasedb/postgres"
	"github.com/blobgw/blobgw/leasedb/sqlite"
)

// BenchmarkListPages measures List Blobs and Find Blobs by Tags pages in
// a container of N blobs (BLOBGW_LIST_BENCH_N, default 10,000; set it to
// 1000000 for the large case) spread over benchDirs directories, named
// dNNNNNN/fNNNNNNN and tagged all=1, on both stores: a flat page of 5,000
// and of 1,000 blobs, a page with delimiter "/" of 1,000 prefixes, a page
// with a delimiter no name holds (5,000 blobs through the delimited
// query) and a Find page of 5,000, each from the start, from a marker in
// the middle and from one near the end. Compare sub-benchmarks of one run
// side by side: the machine is noisy.
func BenchmarkListPages(b *testing.B) {
	n := 10000
	if v := os.Getenv("BLOBGW_LIST_BENCH_N"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 10000 {
			b.Fatalf("BLOBGW_LIST_BENCH_N=%q: want a number of at least 10000", v)
		}
	}
	b.Run("sqlite", func(b *testing.B) {
		benchPages(b, benchSqlite(b, benchFill(n, benchDirs, sqliteSeries)), n)
	})
	b.Run("postgres", func(b *testing.B) {
		db, _ := benchPostgres(b, benchFill(n, benchDirs, pgSeries))
		benchPages(b, db, n)
	})
}

// benchSqlite opens a migrated SQLite store in a temporary folder and
// runs the fill statements on a raw connection to the same file.
func benchSqlite(b *testing.B, fill []string) *leasedb.DB {
	b.Helper()
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "meta.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	if _, _, err := s.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	raw, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	for _, q := range fill {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			b.Fatalf("fill: %v", err)
		}
	}
	return &leasedb.DB{Store: s}
}

// benchPostgres starts a test server, opens a migrated store on it and
// runs the fill statements on a side connection, which it returns: with
// durable commits first (pgSyncCommit), VACUUM ANALYZE of the listing's
// tables last.
func benchPostgres(b *testing.B, fill []string) (*leasedb.DB, *pgx.Conn) {
	b.Helper()
	ctx := context.Background()
	dsn := pgtest.Start(b)
	s, err := postgres.Open(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	if _, _, err := s.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	conn := pgtest.Connect(b, dsn)
	for _, q := range append(append([]string{pgSyncCommit}, fill...), `VACUUM ANALYZE blobs, blob_tags`) {
		if _, err := conn.Exec(ctx, q); err != nil {
			b.Fatalf("fill: %v", err)
		}
	}
	return &leasedb.DB{Store: s}, conn
}

// pgSyncCommit makes the fill's commits durable before VACUUM runs: the
// test server runs with synchronous_commit=off, and Postgres sets no
// commit hint bits (so VACUUM marks no page all-visible, and every
// index-only scan reads the heap) for a commit not yet flushed.
const pgSyncCommit = `SET synchronous_commit = on`

// benchDirs is how many directories the benchmark's blobs are spread over.
const benchDirs = 3000

func benchPages(b *testing.B, db *leasedb.DB, n int) {
	ctx := context.Background()
	nameAt := func(i int) string { return benchNameAt(n, benchDirs, i) }
	dir := func(d int) string { return fmt.Sprintf("d%06d", d) }
	where, err := leasedb.ParseTagFilter(`"all" = '1'`)
	if err != nil {
		b.Fatal(err)
	}
	type page struct {
		name         string
		delimiter    string
		max          int
		mid, end     string // markers' names (the start has none)
		find         bool
		wantPrefixes bool
	}
	pages := []page{
		{name: "flat5000", max: 5000, mid: nameAt(n/2 - 1), end: nameAt(n - 5001)},
		{name: "flat1000", max: 1000, mid: nameAt(n/2 - 1), end: nameAt(n - 1001)},
		{name: "prefixes1000", delimiter: "/", max: 1000, mid: dir(benchDirs/2 - 1), end: dir(benchDirs - 1001), wantPrefixes: true},
		{name: "delimblobs5000", delimiter: "|", max: 5000, mid: nameAt(n/2 - 1), end: nameAt(n - 5001)},
		{name: "find5000", max: 5000, find: true, mid: nameAt(n/2 - 1), end: nameAt(n - 5001)},
	}
	for _, p := range pages {
		for _, pos := range []struct{ label, after string }{{"start", ""}, {"mid", p.mid}, {"end", p.end}} {
			marker := leasedb.EncodeMarker(pos.after)
			if p.wantPrefixes && pos.after != "" {
				// Past every name of the directory: the marker of a page
				// that ended with its prefix.
				marker = leasedb.EncodeMarker(pos.after + "/\U0010FFFF")
			}
			if p.find && pos.after != "" {
				marker = leasedb.EncodeMarker("c/" + pos.after)
			}
			b.Run(fmt.Sprintf("N=%d/%s/%s", n, p.name, pos.label), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					got := 0
					if p.find {
						res, err := db.FindBlobsByTags(ctx, "acct", "c", where, marker, p.max)
						if err != nil {
							b.Fatal(err)
						}
						got = len(res.Blobs)
					} else {
						res, err := db.ListBlobsInclude(ctx, "acct", "c", "", p.delimiter, marker, p.max, leasedb.ListInclude{})
						if err != nil {
							b.Fatal(err)
						}
						got = len(res.Items)
						if p.wantPrefixes && got > 0 && res.Items[0].Prefix == "" {
							b.Fatalf("first item %+v, want a prefix", res.Items[0])
						}
					}
					if got != p.max {
						b.Fatalf("%d entries, want %d", got, p.max)
					}
				}
			})
		}
	}
}

// BenchmarkListPrefixPages measures a List Blobs page of 1,000 prefixes
// (delimiter "/") against a flat page of 1,000 blobs, side by side in
// each iteration (the machine is noisy, so a ratio of two runs far apart
// means little): prefix/flat is the ratio of their times through
// DB.ListBlobsInclude. On Postgres it also runs the two walks' statements
// themselves on one connection, each followed by the row scan: old is
// sqlq.ListDelimited (one seek per name), new sqlq.ListDelimitedBatched
// (what Postgres runs for committed blobs alone). The shapes are a
// container of N blobs (BLOBGW_LIST_BENCH_N, default 10,000) spread over
// a number of directories: at 10,000 blobs 3,000 (about 3 names per
// prefix) and 1,000 (10); at 1,000,000 300,000 (about 3) and 3,000 (333).
// Each page runs from the start and, where a full page follows it, from a
// marker in the middle.
func BenchmarkListPrefixPages(b *testing.B) {
	n := 10000
	if v := os.Getenv("BLOBGW_LIST_BENCH_N"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 10000 {
			b.Fatalf("BLOBGW_LIST_BENCH_N=%q: want a number of at least 10000", v)
		}
	}
	shapes := []int{n * 3 / 10, n / 10}
	if n >= 1000000 {
		shapes = []int{n * 3 / 10, 3000}
	}
	for _, dirs := range shapes {
		label := fmt.Sprintf("N=%d/dirs=%d", n, dirs)
		b.Run("sqlite/"+label, func(b *testing.B) {
			benchPrefixPages(b, benchSqlite(b, benchFill(n, dirs, sqliteSeries)), nil, n, dirs)
		})
		b.Run("postgres/"+label, func(b *testing.B) {
			db, conn := benchPostgres(b, benchFill(n, dirs, pgSeries))
			benchPrefixPages(b, db, conn, n, dirs)
		})
	}
}

// The blob rows of the listing benchmarks, n of them over dirs
// directories, named dNNNNNN/fNNNNNNN (blob i in directory i mod dirs)
// and tagged all=1, as one INSERT ... SELECT per store.
const (
	sqliteSeries = `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
			SELECT 'acct', 'c', printf('d%%06d/f%%07d', i %% %d, i), 'BlockBlob', '"b' || i || '"', '{"all":"1"}' FROM n`
	pgSeries = `SELECT 'acct', 'c', 'd' || lpad((i %% %[2]d)::text, 6, '0') || '/f' || lpad(i::text, 7, '0'), 'BlockBlob', '"b' || i || '"', '{"all":"1"}'
			FROM generate_series(0, %[1]d) AS i`
)

func benchFill(n, dirs int, series string) []string {
	return []string{
		`INSERT INTO containers (account, name, etag) VALUES ('acct', 'c', '"c"')`,
		`INSERT INTO blobs (account, container, name, blob_type, etag, tags) ` + fmt.Sprintf(series, n-1, dirs),
	}
}

// benchNameAt is the name of the i-th of benchFill's n blobs over dirs
// directories, in name order.
func benchNameAt(n, dirs, i int) string {
	per, extra := n/dirs, n%dirs
	d := 0
	for {
		size := per
		if d < extra {
			size++
		}
		if i < size {
			return fmt.Sprintf("d%06d/f%07d", d, d+i*dirs)
		}
		i -= size
		d++
	}
}

func benchPrefixPages(b *testing.B, db *leasedb.DB, conn *pgx.Conn, n, dirs int) {
	ctx := context.Background()
	const size = 1000
	type pos struct{ label, flat, prefix string } // markers' names
	positions := []pos{{"start", "", ""}}
	if mid := dirs/2 - 1; dirs-mid-1 > size {
		positions = append(positions, pos{"mid", benchNameAt(n, dirs, n/2-1), fmt.Sprintf("d%06d/", mid) + "\U0010FFFF"})
	}
	fromTS := func(v pgtype.Timestamptz) time.Time { return v.Time }
	placeholder := func(n int) string { return "$" + strconv.Itoa(n) }
	walk := func(q string, args []any) error {
		rows, err := conn.Query(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		items, err := sqlq.ScanItems(rows, fromTS)
		if err != nil {
			return err
		}
		if len(items) < size || items[0].Prefix == "" {
			return fmt.Errorf("%d items, want %d prefixes or more", len(items), size)
		}
		return nil
	}
	for _, p := range positions {
		b.Run(p.label, func(b *testing.B) {
			var flat, prefix, old, batched time.Duration
			timed := func(d *time.Duration, f func() error) {
				start := time.Now()
				if err := f(); err != nil {
					b.Fatal(err)
				}
				*d += time.Since(start)
			}
			page := func(delimiter, marker string) func() error {
				return func() error {
					res, err := db.ListBlobsInclude(ctx, "acct", "c", "", delimiter, leasedb.EncodeMarker(marker), size, leasedb.ListInclude{})
					if err != nil {
						return err
					}
					if len(res.Items) != size || (delimiter != "") != (res.Items[0].Prefix != "") {
						return fmt.Errorf("delimiter %q: %d items, first %+v", delimiter, len(res.Items), res.Items[0])
					}
					return nil
				}
			}
			for i := 0; i < b.N; i++ {
				timed(&flat, page("", p.flat))
				timed(&prefix, page("/", p.prefix))
				if conn == nil {
					continue
				}
				timed(&old, func() error {
					return walk(sqlq.ListDelimited(sqlq.Dialect{Placeholder: placeholder, Strpos: "strpos"}, "acct", "c", "", "/", p.prefix, size+1, leasedb.ListInclude{}))
				})
				timed(&batched, func() error {
					return walk(sqlq.ListDelimitedBatched(placeholder, "acct", "c", "", "/", p.prefix, size+1))
				})
			}
			ms := func(d time.Duration) float64 { return float64(d) / float64(b.N) / 1e6 }
			b.ReportMetric(ms(flat), "flat-ms")
			b.ReportMetric(ms(prefix), "prefix-ms")
			b.ReportMetric(float64(prefix)/float64(flat), "prefix/flat")
			if conn != nil {
				b.ReportMetric(ms(old), "old-ms")
				b.ReportMetric(ms(batched), "new-ms")
				b.ReportMetric(float64(old)/float64(flat), "old/flat")
				b.ReportMetric(float64(batched)/float64(flat), "new/flat")
			}
		})
	}
}
