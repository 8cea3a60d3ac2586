package postgres_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
	"github.com/blobgw/blobgw/leasedb/postgres"
)

// BenchmarkPutBlobPoolWait drives the store alone (no gateway) with 8
// goroutines, each overwriting its own small inline blob with If-Match, on
// a private server with production durability (fsync and
// synchronous_commit on), with the pool's size at pgxpool's default on a
// 2-core machine (4) and at the store's default (16), and reports what
// the writes waited for a connection (pgxpool.Stat: acquire wait per put,
// acquires that found the pool empty) beside the rate:
//
//	go test ./leasedb/postgres -run '^$' -bench PutBlobPoolWait -benchtime 4000x
func BenchmarkPutBlobPoolWait(b *testing.B) {
	ctx := context.Background()
	srv, err := pgtest.StartServerArgs("-c", "fsync=on", "-c", "synchronous_commit=on", "-c", "full_page_writes=on")
	if err != nil {
		b.Skip(err)
	}
	b.Cleanup(func() { srv.Stop() })
	const clients = 8
	body := make([]byte, 4096)
	rand.Read(body)
	for _, conns := range []int{4, 16} {
		b.Run(fmt.Sprintf("pool=%d", conns), func(b *testing.B) {
			dsn, err := func() (string, error) { _, dsn, err := srv.CreateDatabase(ctx, "poolwait"); return dsn, err }()
			if err != nil {
				b.Fatal(err)
			}
			s := open(b, fmt.Sprintf("%s&pool_max_conns=%d", dsn, conns))
			db := &leasedb.DB{Store: s}
			if _, err := db.CreateContainer(ctx, "a", "c", nil, ""); err != nil {
				b.Fatal(err)
			}
			put := func(name, etag string) (string, error) {
				req := leasedb.PutBlobRequest{Ref: leasedb.BlobRef{Account: "a", Container: "c", Name: name}, Type: "BlockBlob",
					Extents: []leasedb.Extent{{Size: int64(len(body)), Data: body}}}
				if etag != "" {
					req.Cond.IfMatch = []string{etag}
				}
				out, _, err := db.PutBlob(ctx, req)
				if err != nil {
					return "", err
				}
				return strings.Trim(out.ETag, `"`), nil
			}
			etags := make([]string, clients)
			for i := range clients {
				if etags[i], err = put(fmt.Sprintf("b%d", i), ""); err != nil {
					b.Fatal(err)
				}
			}
			st0 := postgres.PoolStat(s)
			var wg sync.WaitGroup
			errs := make(chan error, clients)
			b.ResetTimer()
			start := time.Now()
			for i := range clients {
				n := b.N / clients
				if i < b.N%clients {
					n++
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range n {
						e, err := put(fmt.Sprintf("b%d", i), etags[i])
						if err != nil {
							errs <- err
							return
						}
						etags[i] = e
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
			st1 := postgres.PoolStat(s)
			ops := float64(b.N)
			b.ReportMetric(ops/elapsed.Seconds(), "puts/s")
			b.ReportMetric(float64((st1.AcquireDuration()-st0.AcquireDuration()).Microseconds())/ops, "acquire-wait-us/put")
			b.ReportMetric(float64(st1.EmptyAcquireCount()-st0.EmptyAcquireCount())/ops, "empty-acquires/put")
			b.ReportMetric(float64(st1.MaxConns()), "max-conns")
		})
	}
}
