package main

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
)

// importBenchBlobs is how many blobs BenchmarkImport splits its bytes into.
const importBenchBlobs = 8

// BenchmarkImport measures `blobgw import azure` from one in-process gateway
// into another (both SQLite + disk, as migrate_data_test.go starts them):
// BLOBGW_BENCH_SIZE bytes (default 256 MiB) in 8 equal blobs. In the same
// run the same blobs are copied between the same two gateways by a plain
// Azure SDK loop (DownloadStream piped into UploadStream, with the
// importer's shape: --parallel 4 blobs at a time, migrateBlockSize blocks,
// 2 uploads in flight per blob), so the importer's own cost (hashing,
// verification, the property calls that make reruns idempotent) shows as a
// ratio: import-MB/s over plain-MB/s. Each iteration imports into a fresh
// gateway; every timed phase starts with no dirty pages (syscall.Sync).
//
//	go test ./cmd/blobgw -run '^$' -bench BenchmarkImport -benchtime 1x
//	BLOBGW_BENCH_SIZE=33554432 go test ./cmd/blobgw -run '^$' -bench BenchmarkImport -benchtime 1x
func BenchmarkImport(b *testing.B) {
	size := int64(256 << 20)
	if v := os.Getenv("BLOBGW_BENCH_SIZE"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < importBenchBlobs {
			b.Fatalf("BLOBGW_BENCH_SIZE=%q: want a byte count of at least %d", v, importBenchBlobs)
		}
		size = n
	}
	per := size / importBenchBlobs
	size = per * importBenchBlobs
	ctx := context.Background()

	src := newMigGateway(b, nil)
	if _, err := src.client.CreateContainer(ctx, "bench", nil); err != nil {
		b.Fatal(err)
	}
	data := make([]byte, per)
	rand.New(rand.NewSource(1)).Read(data)
	names := make([]string, importBenchBlobs)
	for i := range names {
		names[i] = fmt.Sprintf("blob-%02d", i)
		// One blob's worth of random bytes, with the first 8 made unique.
		copy(data, fmt.Sprintf("%08d", i))
		if _, err := src.client.UploadBuffer(ctx, "bench", names[i], data, &blockblob.UploadBufferOptions{BlockSize: migrateBlockSize, Concurrency: 4}); err != nil {
			b.Fatal(err)
		}
	}
	data = nil
	sas := src.accountSAS(b)

	var importTime, plainTime time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dst := newMigGateway(b, nil)
		if _, err := dst.client.CreateContainer(ctx, "plain", nil); err != nil {
			b.Fatal(err)
		}
		syscall.Sync()
		b.StartTimer()

		t0 := time.Now()
		run := runCLICtx(b, ctx, "import", "azure", "--source-url", sas, "--dest-url", dst.url, "--container", "bench", "--parallel", "4")
		importTime += time.Since(t0)
		run.ok(b, fmt.Sprintf("copied %d, skipped 0, failed 0", importBenchBlobs))

		b.StopTimer()
		syscall.Sync()
		b.StartTimer()
		t0 = time.Now()
		plainCopy(b, src, dst, names)
		plainTime += time.Since(t0)
	}
	b.StopTimer()
	mbps := func(d time.Duration) float64 { return float64(size) * float64(b.N) / d.Seconds() / 1e6 }
	b.ReportMetric(mbps(importTime), "import-MB/s")
	b.ReportMetric(mbps(plainTime), "plain-MB/s")
	b.ReportMetric(mbps(importTime)/mbps(plainTime), "import-ratio")
}

// plainCopy copies src's bench/<names> to dst's plain/<names> with the SDK
// only, in the importer's shape (see BenchmarkImport).
func plainCopy(b *testing.B, src, dst *migGateway, names []string) {
	ctx := context.Background()
	ch := make(chan string)
	errs := make(chan error, len(names))
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range ch {
				dl, err := src.client.DownloadStream(ctx, "bench", name, nil)
				if err != nil {
					errs <- err
					continue
				}
				_, err = dst.client.UploadStream(ctx, "plain", name, dl.Body, &blockblob.UploadStreamOptions{BlockSize: migrateBlockSize, Concurrency: 2})
				dl.Body.Close()
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	for _, n := range names {
		ch <- n
	}
	close(ch)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}
