package postgres_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
	"github.com/blobgw/blobgw/leasedb/postgres"
)

// TestPoolSize: without pool_max_conns the pool holds 16 connections
// (pgxpool's own default is max(4, cores)); a DSN's pool_max_conns wins,
// in URL and key=value form.
func TestPoolSize(t *testing.T) {
	dsn := pgtest.Start(t)
	kv := urlToKeyValue(t, dsn)
	for _, c := range []struct {
		name string
		dsn  string
		want int32
	}{
		{"url default", dsn, 16},
		{"url pool_max_conns", dsn + "&pool_max_conns=3", 3},
		{"key=value default", kv, 16},
		{"key=value pool_max_conns", kv + " pool_max_conns=5", 5},
		{"url pool_max_conns above", dsn + "&pool_max_conns=40", 40},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := open(t, c.dsn)
			if got := postgres.PoolMaxConns(s); got != c.want {
				t.Errorf("pool max conns = %d, want %d", got, c.want)
			}
		})
	}
}

// urlToKeyValue turns pgtest's postgres:// URL into the key=value form.
func urlToKeyValue(t *testing.T, dsn string) string {
	t.Helper()
	rest, ok := strings.CutPrefix(dsn, "postgres://")
	if !ok {
		t.Fatalf("dsn %q is not a postgres:// URL", dsn)
	}
	userHost, rest, _ := strings.Cut(rest, "/")
	db, query, _ := strings.Cut(rest, "?")
	user, hostPort, _ := strings.Cut(userHost, "@")
	user, _, _ = strings.Cut(user, ":")
	host, port, _ := strings.Cut(hostPort, ":")
	kv := "host=" + host + " port=" + port + " user=" + user + " dbname=" + db
	for _, p := range strings.Split(query, "&") {
		if p != "" {
			kv += " " + p
		}
	}
	return kv
}

// TestEightTransactionsAtOnce: 8 writes (the benchmark's client count)
// hold a transaction each at the same time; with pgxpool's default on a
// 2-core machine (4 connections) the fifth waited in the pool for one of
// the first four to end. Each transaction waits inside fn until all 8 are
// in; the deadline only bounds a failing run.
func TestEightTransactionsAtOnce(t *testing.T) {
	s := open(t, pgtest.Start(t))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n = 8
	var in sync.WaitGroup
	in.Add(n)
	all := make(chan struct{})
	go func() { in.Wait(); close(all) }()
	errs := make(chan error, n)
	for range n {
		go func() {
			errs <- s.Update(ctx, func(tx leasedb.Tx) error {
				if _, err := tx.Now(ctx); err != nil { // the transaction has begun
					return err
				}
				in.Done()
				select {
				case <-all:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatalf("not all %d transactions were open at once: %v", n, err)
		}
	}
}
