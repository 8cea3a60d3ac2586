package postgres

import (
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// defaultMaxConns is the pool's size when the DSN does not set
// pool_max_conns. pgxpool's own default, max(4, cores), assumes a
// connection is busy on a CPU; with synchronous_commit on it spends most of
// a small write waiting for its commit's WAL flush (LWLock/WALWrite,
// IO/WALSync in pg_stat_activity), and Postgres flushes the commits of all
// the connections waiting at once in one fsync. With 4 connections on a
// 2-core machine, 8 clients' Put Blobs queued in the pool for a connection
// while the server had flush capacity to spare (BenchmarkPostgresCPU's wait
// profile: 4 backends, half the clients waiting in the gateway). Connections
// are opened on demand, so an idle replica holds few; 16 per replica leaves
// room for several replicas under Postgres's default max_connections (100).
const defaultMaxConns = 16

// sizePool raises the pool's size to defaultMaxConns unless the DSN chose
// one: pgxpool.ParseConfig does not say whether pool_max_conns was given,
// so the DSN's text is looked at (the key in a URL's query or a key=value
// string). A password or name that happens to hold the text only keeps
// pgxpool's default.
func sizePool(cfg *pgxpool.Config, dsn string) {
	if strings.Contains(dsn, "pool_max_conns") {
		return
	}
	if cfg.MaxConns < defaultMaxConns {
		cfg.MaxConns = defaultMaxConns
	}
}
