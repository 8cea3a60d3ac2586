package md5lanes

import (
	"crypto/md5"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkStreams hashes streams concurrent 16 MiB bodies in 64 KiB
// writes (about what a socket read hands the body pipeline), by
// crypto/md5 and by lanes, and reports the process CPU per MiB beside the
// wall time: on a shared 2-core machine the CPU is what decides.
//
//	go test ./internal/md5lanes -run '^$' -bench Streams -count 3
func BenchmarkStreams(b *testing.B) {
	const size, chunk = 16 << 20, 64 << 10
	data := body(9, size)
	for _, streams := range []int{1, 2, 3, 4, 6, 8, 16} {
		for _, kind := range []string{"crypto", "lanes"} {
			b.Run(fmt.Sprintf("%s/streams=%d", kind, streams), func(b *testing.B) {
				b.SetBytes(int64(size * streams))
				c0 := cpuTime(b)
				for range b.N {
					var wg sync.WaitGroup
					for range streams {
						wg.Add(1)
						go func() {
							defer wg.Done()
							var h Hash
							if kind == "lanes" {
								h = newLane()
							} else {
								h = &plain{Hash: md5.New()}
							}
							sumIn(h, data, chunk)
						}()
					}
					wg.Wait()
				}
				mib := float64(b.N) * float64(streams) * size / (1 << 20)
				b.ReportMetric(float64((cpuTime(b)-c0).Microseconds())/mib, "cpu-us/MiB")
			})
		}
	}
}
