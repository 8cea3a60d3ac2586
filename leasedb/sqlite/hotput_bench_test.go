package sqlite

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// BenchmarkHotPut: the store's share of put-small-ifmatch (each of 8
// writers overwrites its own 4 KiB inline blob on the ETag its last put
// returned) and of put-small (every put a new name), through leasedb.DB
// with the group fsync, as blobgw serve runs them; cpu-µs/op is the
// process's CPU time (user + system) over the puts:
//
//	go test ./leasedb/sqlite -run '^$' -bench HotPut -benchtime 4000x -cpu 2
func BenchmarkHotPut(b *testing.B) {
	for _, mode := range []string{"ifmatch", "new"} {
		b.Run(mode, func(b *testing.B) {
			st, db, _ := hotStore(b)
			r0 := syncRounds(st.wal)
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			var writer, names atomic.Int64
			b.SetParallelism(4) // 8 writers on 2 cores, as the bench's 8 clients
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU()
			b.RunParallel(func(pb *testing.PB) {
				w := writer.Add(1)
				name := fmt.Sprintf("w%d", w)
				etag := ""
				if mode == "ifmatch" {
					req := hotPut("")
					req.Ref.Name = name
					bl, _, err := db.PutBlob(ctx, req)
					if err != nil {
						b.Error(err)
						return
					}
					etag = bl.ETag
				}
				for pb.Next() {
					req := hotPut(etag)
					if mode == "new" {
						req.Ref.Name = fmt.Sprintf("put-small/%d/%d", w, names.Add(1))
					} else {
						req.Ref.Name = name
					}
					bl, _, err := db.PutBlob(ctx, req)
					if err != nil {
						b.Error(err)
						return
					}
					if mode == "ifmatch" {
						etag = bl.ETag
					}
				}
			})
			b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
			b.ReportMetric(float64(syncRounds(st.wal)-r0)/float64(b.N), "fsyncs/op")
		})
	}
}

// syncRounds is how many group fsyncs g started.
func syncRounds(g *groupSync) uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.nextRound - 1
}

// processCPU is the CPU time this process has used (user + system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
