package gwtest

import (
	"testing"

	"github.com/blobgw/blobgw/backends/s3/miniotest"
	"github.com/blobgw/blobgw/internal/testproc"
	"github.com/blobgw/blobgw/leasedb/pgtest"
)

// Main is the TestMain of a package whose tests run gateways on both
// Postgres and MinIO (gateway, cmd/blobgw): one shared server of each,
// started on first use and stopped when the tests end.
func Main(m *testing.M) {
	pgtest.Managed()
	miniotest.Managed()
	testproc.Main(m, pgtest.StopShared, miniotest.StopShared)
}
