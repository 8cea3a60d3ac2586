package s3_test

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/blobgw/blobgw/backends/backendtest"
	"github.com/blobgw/blobgw/backends/s3"
	"github.com/blobgw/blobgw/backends/s3/miniotest"
)

// The benchmarks move a 256 MiB object through the Store and, as a
// baseline, through aws-sdk-go-v2 directly (manager.Uploader, GetObject)
// with the same part size and concurrency against the same MinIO; compare
// their MB/s:
//
//	go test -run '^$' -bench . -benchtime 3x ./backends/s3/
const benchSize = 256 << 20

func benchStore(b *testing.B) (*s3.Store, *miniotest.Server) {
	b.Helper()
	srv := miniotest.SharedServer(b)
	return newStore(b, srv.NewBucket(b)), srv
}

// deleteObject removes a benchmark object outside the timed region, so that
// MinIO's disk does not fill up.
func deleteObject(b *testing.B, c *awss3.Client, bucket, key string) {
	b.Helper()
	b.StopTimer()
	defer b.StartTimer()
	if _, err := c.DeleteObject(context.Background(), &awss3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkPut(b *testing.B) {
	s, srv := benchStore(b)
	ctx := context.Background()
	b.SetBytes(benchSize)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		key := fmt.Sprintf("put-%d", i)
		if err := s.Put(ctx, key, backendtest.NewReader(benchSize, uint64(i)), benchSize); err != nil {
			b.Fatal(err)
		}
		deleteObject(b, srv.Client(), s.Bucket(), key)
	}
}

func BenchmarkPutSDK(b *testing.B) {
	srv := miniotest.SharedServer(b)
	bucket := srv.NewBucket(b).Bucket
	up := manager.NewUploader(srv.Client(), func(u *manager.Uploader) {
		u.PartSize = s3.DefaultPartSize
		u.Concurrency = s3.DefaultConcurrency
	})
	ctx := context.Background()
	b.SetBytes(benchSize)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		key := fmt.Sprintf("put-%d", i)
		if _, err := up.Upload(ctx, &awss3.PutObjectInput{
			Bucket: aws.String(bucket),
			Key:    aws.String(key),
			Body:   backendtest.NewReader(benchSize, uint64(i)),
			// The Store's checksum, so that only the plumbing differs.
			ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c,
		}); err != nil {
			b.Fatal(err)
		}
		deleteObject(b, srv.Client(), bucket, key)
	}
}

func BenchmarkGet(b *testing.B) {
	s, _ := benchStore(b)
	ctx := context.Background()
	if err := s.Put(ctx, "get", backendtest.NewReader(benchSize, 1), benchSize); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(benchSize)
	b.ReportAllocs()
	for b.Loop() {
		rc, err := s.Open(ctx, "get", 0, -1)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, rc)
		rc.Close()
		if err != nil || n != benchSize {
			b.Fatalf("read %d bytes, %v", n, err)
		}
	}
}

func BenchmarkGetSDK(b *testing.B) {
	s, srv := benchStore(b)
	ctx := context.Background()
	if err := s.Put(ctx, "get", backendtest.NewReader(benchSize, 1), benchSize); err != nil {
		b.Fatal(err)
	}
	c := srv.Client()
	b.SetBytes(benchSize)
	b.ReportAllocs()
	for b.Loop() {
		out, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String(s.Bucket()), Key: aws.String("get")})
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, out.Body)
		out.Body.Close()
		if err != nil || n != benchSize {
			b.Fatalf("read %d bytes, %v", n, err)
		}
	}
}
