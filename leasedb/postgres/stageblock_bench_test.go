package postgres_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
)

// genericStore hides the optional interfaces of its transactions
// (BlockStager among them): a DB on it takes the generic Tx sequences.
type genericStore struct{ leasedb.Store }

func (g genericStore) Update(ctx context.Context, fn func(leasedb.Tx) error) error {
	return g.Store.Update(ctx, func(tx leasedb.Tx) error { return fn(struct{ leasedb.Tx }{tx}) })
}

// BenchmarkStageBlockBackendCPU drives Put Block's commit alone (no
// gateway, no body: DB.StageBlock of a 4 KiB block's row) over one
// connection per path, on a private server with production durability,
// and reports the Postgres CPU of that connection's backend per Put Block
// (/proc/PID/schedstat), and the time each took, for the store's few-statement path (BlockStager:
// 4 statements in 2 round trips) and for the generic Tx sequence (15 in
// 13), the two driven in alternating rounds (BLOBGW_BENCH_ROUNDS, default
// 3; b.N Put Blocks per path and round), with the ratio of each round.
// Each blob name gets 8 blocks, as a small file's many-block upload does;
// the intents are added before each round, outside the measure.
//
//	go test ./leasedb/postgres -run '^$' -bench StageBlockBackendCPU -benchtime 2000x -timeout 30m
func BenchmarkStageBlockBackendCPU(b *testing.B) {
	ctx := context.Background()
	srv, err := pgtest.StartServerArgs("-c", "fsync=on", "-c", "synchronous_commit=on", "-c", "full_page_writes=on")
	if err != nil {
		b.Skip(err)
	}
	b.Cleanup(func() { srv.Stop() })
	rounds := 3
	if v, err := strconv.Atoi(os.Getenv("BLOBGW_BENCH_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	type path struct {
		name string
		db   *leasedb.DB
		pid  int
		n    int
		us   []float64 // backend CPU per Put Block, by round
		wall []float64 // elapsed per Put Block, by round
	}
	var paths []*path
	for _, name := range []string{"fast", "generic"} {
		_, dsn, err := srv.CreateDatabase(ctx, "stagecpu")
		if err != nil {
			b.Fatal(err)
		}
		s := open(b, dsn+"&pool_max_conns=1&application_name=stagecpu")
		var store leasedb.Store = s
		if name == "generic" {
			store = genericStore{s}
		}
		p := &path{name: name, db: &leasedb.DB{Store: store}}
		if _, err := p.db.CreateContainer(ctx, "a", "c", nil, ""); err != nil {
			b.Fatal(err)
		}
		if err := pgtest.Connect(b, dsn).QueryRow(ctx, `SELECT pid FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = 'stagecpu'`).Scan(&p.pid); err != nil {
			b.Fatal(err)
		}
		paths = append(paths, p)
	}
	stage := func(p *path, count int) {
		keys := make([]string, count)
		for i := range keys {
			keys[i] = fmt.Sprintf("%s-%d", p.name, p.n+i)
		}
		if err := s0(p.db).Update(ctx, func(tx leasedb.Tx) error {
			return tx.(leasedb.IntentsAdder).AddIntents(ctx, keys, time.Now().Add(time.Hour))
		}); err != nil {
			b.Fatal(err)
		}
		cpu0, start := backendRunTime(b, p.pid), time.Now()
		for _, key := range keys {
			i := p.n
			p.n++
			ref := leasedb.BlobRef{Account: "a", Container: "c", Name: fmt.Sprintf("b-%d", i/8)}
			id := base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "block-%02d", i%8))
			if err := p.db.StageBlock(ctx, leasedb.StageBlockRequest{Ref: ref, Block: leasedb.Block{ID: id, Key: key, Size: 4096}}); err != nil {
				b.Fatal(err)
			}
		}
		p.wall = append(p.wall, float64(time.Since(start).Microseconds())/float64(count))
		p.us = append(p.us, float64(backendRunTime(b, p.pid)-cpu0)/1e3/float64(count))
	}
	// Warm up: the connections, their prepared statements (generic plans
	// after five runs), the caches.
	for _, p := range paths {
		stage(p, 50)
		p.us, p.wall = nil, nil
	}
	b.ResetTimer()
	for r := range rounds {
		order := paths
		if r%2 == 1 {
			order = []*path{paths[1], paths[0]}
		}
		for _, p := range order {
			stage(p, b.N)
		}
	}
	b.StopTimer()
	var ratios []float64
	for r := range rounds {
		ratios = append(ratios, paths[0].us[r]/paths[1].us[r])
	}
	for _, p := range paths {
		b.Logf("%s: backend µs per Put Block by round %.1f, elapsed µs %.1f", p.name, p.us, p.wall)
		b.ReportMetric(median(p.us), p.name+"-backend-us/op")
		b.ReportMetric(median(p.wall), p.name+"-elapsed-us/op")
	}
	b.Logf("fast/generic by round %.2f", ratios)
	b.ReportMetric(median(ratios), "fast/generic-x")
	b.ReportMetric(slices.Min(ratios), "fast/generic-min-x")
	b.ReportMetric(slices.Max(ratios), "fast/generic-max-x")
}

// s0 is db's store with its optional interfaces (genericStore's inner).
func s0(db *leasedb.DB) leasedb.Store {
	if g, ok := db.Store.(genericStore); ok {
		return g.Store
	}
	return db.Store
}

func median(x []float64) float64 {
	s := slices.Sorted(slices.Values(x))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
