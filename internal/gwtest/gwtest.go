// Package gwtest assembles gateways for tests that drive one over HTTP
// (gateway's own external tests, cmd/blobgw, internal/bench): a metadata
// store opened as the binary opens it, a disk backend, the development
// account, a logger that writes nowhere.
package gwtest

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/blobgw/blobgw/backends"
	"github.com/blobgw/blobgw/backends/disk"
	"github.com/blobgw/blobgw/gateway"
	"github.com/blobgw/blobgw/gateway/auth"
	"github.com/blobgw/blobgw/internal/config"
	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/dbopen"
)

// OpenStore opens the metadata store at dsn (a SQLite file path or a
// Postgres DSN) with dbopen, which migrates it; closed when tb ends.
func OpenStore(tb testing.TB, dsn string) leasedb.Store {
	tb.Helper()
	store, err := dbopen.Open(context.Background(), dsn)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { store.Close() })
	return store
}

// DiskBackend is a disk backend in dir/blobs.
func DiskBackend(tb testing.TB, dir string) *disk.Store {
	tb.Helper()
	be, err := disk.New(filepath.Join(dir, "blobs"))
	if err != nil {
		tb.Fatal(err)
	}
	return be
}

// DevAccounts is the development account (config.DevAccountName) as the
// gateway's accounts.
func DevAccounts(tb testing.TB) auth.MapAccounts {
	tb.Helper()
	acct, err := auth.NewAccount(config.DevAccountName, config.DevAccountKey)
	if err != nil {
		tb.Fatal(err)
	}
	return auth.MapAccounts{config.DevAccountName: acct}
}

// Discard is a logger that writes nowhere.
func Discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Gateway is a gateway over store and be serving the development account,
// logging nowhere.
func Gateway(tb testing.TB, store leasedb.Store, be backends.Backend, opts gateway.Options) *gateway.Server {
	tb.Helper()
	return gateway.New(&leasedb.DB{Store: store}, be, DevAccounts(tb), Discard(), opts)
}
