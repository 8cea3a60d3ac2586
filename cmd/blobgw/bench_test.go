package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/blobgw/blobgw/backends/s3"
	"github.com/blobgw/blobgw/backends/s3/miniotest"
	"github.com/blobgw/blobgw/leasedb/pgtest"
)

// BenchmarkTransfer measures upload and download of one blob through a real
// `blobgw serve` process (SQLite + disk) with the Azure SDK (4 MiB blocks,
// concurrency 4), next to writing and reading the same bytes directly in the
// data directory, so throughput is reported as a ratio from one run: the
// baselines move the bytes through memory with 4 MiB reads and writes (the
// SDK's block size), and fsync the written file once; the kernel's
// copy_file_range figures are reported beside them. Each iteration times
// the transfers, the gateway first on even iterations and the baselines
// first on odd ones; every timed phase starts with no dirty pages and no
// cached pages (uploads then read their source once, so the bytes to write
// are in memory on both sides). The ratios reported are the medians
// of the per-iteration ratios (this machine's disk speed drifts between
// runs; a pair measured back to back is what compares). The gateway's peak
// RSS (VmHWM) is reported as a metric. Size: BLOBGW_BENCH_SIZE (bytes,
// default 1 GiB). BLOBGW_BENCH_METADATA=postgres keeps the metadata in a
// Postgres server (started by the harness) instead of SQLite.
//
//	go test ./cmd/blobgw -run '^$' -bench 'Transfer$' -benchtime 5x
func BenchmarkTransfer(b *testing.B) {
	size := benchSize(b)
	dir := b.TempDir()
	data := filepath.Join(dir, "data")
	args := []string{"--data-dir", data}
	if os.Getenv("BLOBGW_BENCH_METADATA") == "postgres" {
		// The replicas' store: a Postgres the harness starts.
		args = append(args, "--metadata", pgtest.Start(b))
	}
	client := startGateway(b, dir, args...)
	ctx := context.Background()
	if _, err := client.CreateContainer(ctx, "bench", nil); err != nil {
		b.Fatal(err)
	}
	// A source file of random bytes (the SDK and the baseline read the same).
	src := randomFile(b, dir, size)
	baseline := filepath.Join(data, "baseline.bin")
	// Uploads start with the source file in the page cache (the bytes to
	// write are in memory, on both sides), downloads with nothing cached
	// (both sides read the stored bytes from the disk).
	timed := func(f func() error) time.Duration {
		settle()
		t0 := time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	timedUp := func(f func() error) time.Duration {
		settle()
		warm(b, src)
		t0 := time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	upGateway := func() error {
		in, err := os.Open(src)
		if err != nil {
			return err
		}
		defer in.Close()
		_, err = client.UploadStream(ctx, "bench", "blob", in, &azblob.UploadStreamOptions{BlockSize: 4 << 20, Concurrency: 4})
		return err
	}
	// The same bytes written straight into the data directory and fsynced:
	// read into memory and written, 4 MiB at a time, as the SDK reads the
	// file it sends; and by the kernel's file-to-file copy, for comparison.
	upDirect := func() error { return copyFile(src, baseline, true, true) }
	upKernel := func() error {
		defer os.Remove(baseline + ".k")
		return copyFile(src, baseline+".k", false, true)
	}
	downGateway := func() error {
		dst, err := os.Create(filepath.Join(dir, "dst.bin"))
		if err != nil {
			return err
		}
		defer dst.Close()
		_, err = client.DownloadFile(ctx, "bench", "blob", dst, &azblob.DownloadFileOptions{BlockSize: 4 << 20, Concurrency: 4})
		return err
	}
	// Read the same bytes from the data directory into memory and write
	// them to a file, as the SDK does with what it receives; and the
	// kernel's copy, which no reader over a socket can match.
	downDirect := func() error { return copyFile(baseline, filepath.Join(dir, "dst2.bin"), true, false) }
	downKernel := func() error { return copyFile(baseline, filepath.Join(dir, "dst3.bin"), false, false) }

	var sum [6]time.Duration // up gw, up direct, down gw, down direct, down kernel, up kernel
	var upRatios, downRatios []float64
	for i := 0; i < b.N; i++ {
		var d [6]time.Duration
		if i%2 == 0 {
			d[0], d[1], d[5] = timedUp(upGateway), timedUp(upDirect), timedUp(upKernel)
			d[2], d[3], d[4] = timed(downGateway), timed(downDirect), timed(downKernel)
		} else {
			d[5], d[1], d[0] = timedUp(upKernel), timedUp(upDirect), timedUp(upGateway)
			d[4], d[3], d[2] = timed(downKernel), timed(downDirect), timed(downGateway)
		}
		os.Remove(baseline)
		for j := range d {
			sum[j] += d[j]
		}
		mb := func(d time.Duration) float64 { return float64(size) / d.Seconds() / 1e6 }
		b.Logf("iteration %d: up %.0f vs %.0f MB/s (copy_file_range %.0f), down %.0f vs %.0f MB/s (copy_file_range %.0f)",
			i, mb(d[0]), mb(d[1]), mb(d[5]), mb(d[2]), mb(d[3]), mb(d[4]))
		upRatios = append(upRatios, d[1].Seconds()/d[0].Seconds())
		downRatios = append(downRatios, d[3].Seconds()/d[2].Seconds())
	}
	mbps := func(d time.Duration) float64 { return float64(size) * float64(b.N) / d.Seconds() / 1e6 }
	b.ReportMetric(mbps(sum[0]), "up-MB/s")
	b.ReportMetric(mbps(sum[1]), "up-disk-MB/s")
	b.ReportMetric(median(upRatios), "up-ratio")
	b.ReportMetric(mbps(sum[5]), "up-copy-file-range-MB/s")
	b.ReportMetric(mbps(sum[2]), "down-MB/s")
	b.ReportMetric(mbps(sum[3]), "down-disk-MB/s")
	b.ReportMetric(median(downRatios), "down-ratio")
	b.ReportMetric(mbps(sum[4]), "down-copy-file-range-MB/s")
}

// settle gives every timed phase the same start: no dirty pages (sync) and,
// where the benchmark may (root), no cached file pages either, so reads on
// both sides come from the disk. Without the second half, reads depend on
// what this VM's proactive page reclaim (DAMON) happened to evict.
func settle() {
	syscall.Sync()
	if f, err := os.OpenFile("/proc/sys/vm/drop_caches", os.O_WRONLY, 0); err == nil {
		f.WriteString("3")
		f.Close()
	}
}

// copyFile copies src into a new file dst. viaMemory moves the bytes
// through a 4 MiB buffer (read(2) and write(2), no ReaderFrom/WriterTo
// shortcut); otherwise io.Copy lets the kernel copy them (copy_file_range).
// sync fsyncs dst.
func copyFile(src, dst string, viaMemory, sync bool) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer out.Close()
	if viaMemory {
		_, err = io.CopyBuffer(struct{ io.Writer }{out}, struct{ io.Reader }{in}, make([]byte, 4<<20))
	} else {
		_, err = io.Copy(out, in)
	}
	if err != nil || !sync {
		return err
	}
	return out.Sync()
}

// warm reads path once so its pages are cached.
func warm(b *testing.B, path string) {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := io.Copy(io.Discard, f); err != nil {
		b.Fatal(err)
	}
}

// startGateway builds blobgw, runs `serve` with args on a free port until the
// benchmark ends and returns an SDK client for the dev account. The peak
// RSS of the process is reported when the benchmark ends.
func startGateway(b *testing.B, dir string, args ...string) *azblob.Client {
	b.Helper()
	// BLOBGW_BENCH_BIN keeps the binary where a profiler can find its
	// symbols after the run (perf record -a, then perf report).
	bin := os.Getenv("BLOBGW_BENCH_BIN")
	if bin == "" {
		bin = filepath.Join(dir, "blobgw")
	}
	buildBlobgw(b, bin)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, append([]string{"serve", "--listen", addr, "--log-level", "warn"}, args...)...)
	cmd.Env = append(os.Environ(), "BLOBGW_CONFIG=")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if hwm, err := vmHWM(cmd.Process.Pid); err == nil {
			b.ReportMetric(float64(hwm)/(1<<20), "gateway-peak-RSS-MiB")
		}
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	waitListening(b, addr, 300)
	cred, _ := azblob.NewSharedKeyCredential("devstoreaccount1", "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==")
	client, err := azblob.NewClientWithSharedKeyCredential("http://"+addr+"/devstoreaccount1/", cred, nil)
	if err != nil {
		b.Fatal(err)
	}
	return client
}

// waitListening waits until a started gateway accepts connections on
// addr, trying every 50 ms up to tries times, and fails b after that.
func waitListening(b *testing.B, addr string, tries int) {
	b.Helper()
	for i := 0; ; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		if i > tries {
			b.Fatal("gateway did not start")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func benchSize(b *testing.B) int64 {
	size := int64(1 << 30)
	if v := os.Getenv("BLOBGW_BENCH_SIZE"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		size = n
	}
	return size
}

// randomFile writes size random bytes to a new file in dir.
func randomFile(b *testing.B, dir string, size int64) string {
	b.Helper()
	src := filepath.Join(dir, "src.bin")
	f, err := os.Create(src)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := io.CopyN(f, rand.Reader, size); err != nil {
		b.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	return src
}

// BenchmarkTransferS3 is BenchmarkTransfer over MinIO: a PUT and GET
// through the gateway (S3 backend, SQLite metadata; the Azure SDK with
// 4 MiB blocks and ranges, concurrency 4) next to the same transfer done
// directly against the same MinIO with aws-sdk-go-v2's transfer manager in
// the same run: a multipart upload with concurrency 4 and parts as close
// to the gateway's 4 MiB blocks as S3 allows (5 MiB), and a download of
// 4 MiB ranges with concurrency 4 into a file. The ratios compare those.
// Two more direct figures are reported for context: 16 MiB parts (the s3
// backend's default) and one streamed GetObject.
//
//	go test ./cmd/blobgw -run '^$' -bench TransferS3 -benchtime 1x
func BenchmarkTransferS3(b *testing.B) {
	size := benchSize(b)
	cfg := miniotest.NewBucket(b)
	dir := b.TempDir()
	client := startGateway(b, dir, append([]string{"--data-dir", filepath.Join(dir, "data")}, append(s3ServeArgs(cfg), "--s3-prefix", "gw/")...)...)
	ctx := context.Background()
	if _, err := client.CreateContainer(ctx, "bench", nil); err != nil {
		b.Fatal(err)
	}
	src := randomFile(b, dir, size)
	st, err := s3.New(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	up := manager.NewUploader(st.Client(), func(u *manager.Uploader) { u.PartSize, u.Concurrency = 5<<20, 4 })
	up16 := manager.NewUploader(st.Client(), func(u *manager.Uploader) { u.PartSize, u.Concurrency = 16<<20, 4 })
	down := manager.NewDownloader(st.Client(), func(d *manager.Downloader) { d.PartSize, d.Concurrency = 4<<20, 4 })
	var upGW, upS3, up16S3, downGW, downS3, streamS3 time.Duration
	timed := func(d *time.Duration, f func() error) {
		syscall.Sync()
		t0 := time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		*d += time.Since(t0)
	}
	// fromSrc and toFile open the source file or create a download's
	// destination around one transfer, inside the timed span as before.
	fromSrc := func(put func(in *os.File) error) func() error {
		return func() error {
			in, err := os.Open(src)
			if err != nil {
				return err
			}
			defer in.Close()
			return put(in)
		}
	}
	toFile := func(name string, get func(dst *os.File) error) func() error {
		return func() error {
			dst, err := os.Create(filepath.Join(dir, name))
			if err != nil {
				return err
			}
			defer dst.Close()
			return get(dst)
		}
	}
	upload := func(u *manager.Uploader, key string) func() error {
		return fromSrc(func(in *os.File) error {
			_, err := u.Upload(ctx, &awss3.PutObjectInput{Bucket: aws.String(cfg.Bucket), Key: aws.String(key), Body: in})
			return err
		})
	}
	for i := 0; i < b.N; i++ {
		direct := fmt.Sprintf("direct/%d", i)
		timed(&upGW, fromSrc(func(in *os.File) error {
			_, err := client.UploadStream(ctx, "bench", "blob", in, &azblob.UploadStreamOptions{BlockSize: 4 << 20, Concurrency: 4})
			return err
		}))
		timed(&upS3, upload(up, direct))
		timed(&up16S3, upload(up16, direct+"-16"))
		timed(&downGW, toFile("dst.bin", func(dst *os.File) error {
			_, err := client.DownloadFile(ctx, "bench", "blob", dst, &azblob.DownloadFileOptions{BlockSize: 4 << 20, Concurrency: 4})
			return err
		}))
		timed(&downS3, toFile("dst2.bin", func(dst *os.File) error {
			_, err := down.Download(ctx, dst, &awss3.GetObjectInput{Bucket: aws.String(cfg.Bucket), Key: aws.String(direct)})
			return err
		}))
		timed(&streamS3, toFile("dst3.bin", func(dst *os.File) error {
			out, err := st.Client().GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String(cfg.Bucket), Key: aws.String(direct)})
			if err != nil {
				return err
			}
			defer out.Body.Close()
			_, err = io.Copy(dst, out.Body)
			return err
		}))
	}
	mbps := func(d time.Duration) float64 { return float64(size) * float64(b.N) / d.Seconds() / 1e6 }
	b.ReportMetric(mbps(upGW), "put-MB/s")
	b.ReportMetric(mbps(upS3), "put-direct-MB/s")
	b.ReportMetric(mbps(upGW)/mbps(upS3), "put-ratio")
	b.ReportMetric(mbps(up16S3), "put-direct-16MiB-parts-MB/s")
	b.ReportMetric(mbps(downGW), "get-MB/s")
	b.ReportMetric(mbps(downS3), "get-direct-MB/s")
	b.ReportMetric(mbps(downGW)/mbps(downS3), "get-ratio")
	b.ReportMetric(mbps(streamS3), "get-direct-one-stream-MB/s")
}

// vmHWM reads a process's peak resident set size in bytes.
func vmHWM(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmHWM")
}
