package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

// BenchmarkCommitUnderUploads measures small write transactions (one
// AddIntent each, 4 writers, as Put Block commits) while 3 other
// goroutines write 4 MiB files with fsync in the same directory (the
// uploads' bytes), once with SQLite's synchronous=FULL (the fsync inside
// COMMIT, under the write lock) and once with the Store's group commit.
//
//	go test ./leasedb/sqlite -run '^$' -bench CommitUnderUploads -benchtime 400x
func BenchmarkCommitUnderUploads(b *testing.B) {
	for _, mode := range []string{"full", "group"} {
		b.Run(mode, func(b *testing.B) {
			ctx := context.Background()
			dir := b.TempDir()
			s := migratedStore(b, filepath.Join(dir, "bench.db"))
			if mode == "full" {
				if _, err := s.w.ExecContext(ctx, "PRAGMA synchronous = FULL"); err != nil {
					b.Fatal(err)
				}
				s.wal = newGroupSync(func() error { return nil })
			}
			var stop atomic.Bool
			var load sync.WaitGroup
			block := make([]byte, 4<<20)
			for w := range 3 {
				load.Add(1)
				go func() {
					defer load.Done()
					for i := 0; !stop.Load(); i++ {
						p := filepath.Join(dir, fmt.Sprintf("load-%d-%d", w, i))
						if err := os.WriteFile(p, block, 0o600); err != nil {
							b.Error(err)
							return
						}
						f, err := os.Open(p)
						if err == nil {
							f.Sync()
							f.Close()
						}
						os.Remove(p)
					}
				}()
			}
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						err := s.Update(ctx, func(tx leasedb.Tx) error {
							return tx.AddIntent(ctx, fmt.Sprintf("k/%d", i), time.Now().Add(time.Hour))
						})
						if err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "commits/s")
			b.StopTimer()
			stop.Store(true)
			load.Wait()
		})
	}
}
