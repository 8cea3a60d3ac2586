package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/blobgw/blobgw/backends"
	"github.com/blobgw/blobgw/leasedb"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ReadyTimeout bounds each readiness probe (store and backend).
const ReadyTimeout = 2 * time.Second

// readyProbeKey is a key no upload ever gets (newKey makes "b/..."): Stat
// of it answers not-found from a reachable backend.
const readyProbeKey = "readyz/probe"

// Ready reports whether this replica can serve: not draining, the
// metadata store answers a trivial transaction and does not refuse every
// write (leasedb.WriteRefuser), and the backend answers a Stat, each
// within ReadyTimeout. The error says which failed.
func (s *Server) Ready(ctx context.Context) error {
	if s.draining.Load() {
		return errors.New("draining: shutting down")
	}
	sctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	if err := s.db.Store.View(sctx, func(tx leasedb.Tx) error {
		_, err := tx.Now(sctx)
		return err
	}); err != nil {
		return fmt.Errorf("metadata store: %w", err)
	}
	if err := leasedb.WritesRefused(s.db.Store); err != nil {
		// It still reads, but can only answer 503 to every write.
		return fmt.Errorf("metadata store refuses writes: %w", err)
	}
	bctx, cancel2 := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel2()
	if _, err := s.backend.Stat(bctx, readyProbeKey); err != nil && !errors.Is(err, backends.ErrNotFound) {
		return fmt.Errorf("backend: %w", err)
	}
	return nil
}

// SetDraining makes Ready fail from now on (graceful shutdown: load
// balancers take the replica out of rotation while it still serves).
func (s *Server) SetDraining() { s.draining.Store(true) }

// OpsHandler serves the operator endpoints, meant for a listener of their
// own (never the Blob API's): /metrics (Prometheus text format),
// /healthz (200 while the process runs), /readyz (200, or 503 with the
// reason) and, with withPprof, /debug/pprof/.
func (s *Server) OpsHandler(withPprof bool) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err := s.Ready(r.Context()); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "not ready:", Redact(err.Error()))
			return
		}
		fmt.Fprintln(w, "ready")
	})
	if withPprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}
