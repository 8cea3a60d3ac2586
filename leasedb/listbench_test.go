package leasedb_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
	"github.com/blobgw/blobgw/leasedb/postgres"
	"github.com/blobgw/blobgw/leasedb/sqlite"
)

// BenchmarkListPages measures List Blobs and Find Blobs by Tags pages in
// a container of N blobs (BLOBGW_LIST_BENCH_N, default 10,000; set it to
// 1000000 for the large case) spread over benchDirs directories, named
// dNNNN/fNNNNNNN and tagged all=1, on both stores: a flat page of 5,000
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
	ctx := context.Background()
	fill := func(exec func(q string) error, series string) {
		b.Helper()
		for _, q := range []string{
			`INSERT INTO containers (account, name, etag) VALUES ('acct', 'c', '"c"')`,
			`INSERT INTO blobs (account, container, name, blob_type, etag, tags) ` + fmt.Sprintf(series, n-1, benchDirs),
		} {
			if err := exec(q); err != nil {
				b.Fatalf("fill: %v", err)
			}
		}
	}
	b.Run("sqlite", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "meta.db")
		s, err := sqlite.Open(ctx, path)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		if _, _, err := s.Migrate(ctx); err != nil {
			b.Fatal(err)
		}
		raw, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
		if err != nil {
			b.Fatal(err)
		}
		defer raw.Close()
		fill(func(q string) error { _, err := raw.ExecContext(ctx, q); return err },
			`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
			SELECT 'acct', 'c', printf('d%%04d/f%%07d', i %% %d, i), 'BlockBlob', '"b' || i || '"', '{"all":"1"}' FROM n`)
		benchPages(b, &leasedb.DB{Store: s}, n)
	})
	b.Run("postgres", func(b *testing.B) {
		dsn := pgtest.Start(b)
		s, err := postgres.Open(ctx, dsn)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		if _, _, err := s.Migrate(ctx); err != nil {
			b.Fatal(err)
		}
		conn := pgtest.Connect(b, dsn)
		fill(func(q string) error { _, err := conn.Exec(ctx, q); return err },
			`SELECT 'acct', 'c', 'd' || lpad((i %% %[2]d)::text, 4, '0') || '/f' || lpad(i::text, 7, '0'), 'BlockBlob', '"b' || i || '"', '{"all":"1"}'
			FROM generate_series(0, %[1]d) AS i`)
		if _, err := conn.Exec(ctx, `VACUUM ANALYZE blobs, blob_tags`); err != nil {
			b.Fatal(err)
		}
		benchPages(b, &leasedb.DB{Store: s}, n)
	})
}

// benchDirs is how many directories the benchmark's blobs are spread over.
const benchDirs = 3000

func benchPages(b *testing.B, db *leasedb.DB, n int) {
	ctx := context.Background()
	// The name of the i-th blob in name order: directory by directory.
	nameAt := func(i int) string {
		// Directory d holds the numbers d, d+benchDirs, ...
		per, extra := n/benchDirs, n%benchDirs
		d, k := 0, i
		for {
			size := per
			if d < extra {
				size++
			}
			if k < size {
				return fmt.Sprintf("d%04d/f%07d", d, d+k*benchDirs)
			}
			k -= size
			d++
		}
	}
	dir := func(d int) string { return fmt.Sprintf("d%04d", d) }
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
