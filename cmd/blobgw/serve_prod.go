package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/blobgw/blobgw/gateway"
	"github.com/blobgw/blobgw/internal/config"
	"github.com/urfave/cli/v2"
)

// servingFlags are serve's production settings (config.Serving).
func servingFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "tls-cert", EnvVars: []string{"BLOBGW_TLS_CERT"}, Usage: "serve TLS with this PEM certificate (chain); re-read when it changes"},
		&cli.StringFlag{Name: "tls-key", EnvVars: []string{"BLOBGW_TLS_KEY"}, Usage: "the PEM private key of --tls-cert"},
		&cli.StringFlag{Name: "trusted-proxies", EnvVars: []string{"BLOBGW_TRUSTED_PROXIES"}, Usage: "CIDR,... of proxies whose X-Forwarded-Proto/-For or Forwarded headers are believed"},
		&cli.StringFlag{Name: "metrics-listen", EnvVars: []string{"BLOBGW_METRICS_LISTEN"}, Usage: "address of /metrics, /healthz, /readyz (default " + config.DefaultMetricsListen + "; \"off\": none)"},
		&cli.BoolFlag{Name: "pprof", EnvVars: []string{"BLOBGW_PPROF"}, Usage: "serve /debug/pprof/ on the metrics listener"},
		&cli.StringFlag{Name: "log-format", EnvVars: []string{"BLOBGW_LOG_FORMAT"}, Usage: "text (default) or json"},
		&cli.DurationFlag{Name: "drain-delay", EnvVars: []string{"BLOBGW_DRAIN_DELAY"}, Usage: "on SIGTERM, keep accepting connections this long while /readyz answers 503 (default 5s)"},
		&cli.DurationFlag{Name: "drain-timeout", EnvVars: []string{"BLOBGW_DRAIN_TIMEOUT"}, Usage: "then give in-flight requests this long to finish (default 30s)"},
	}
}

// applyServingFlags sets what the serving flags name over cfg.
func applyServingFlags(c *cli.Context, cfg *config.Config) {
	for flag, dst := range map[string]*string{"tls-cert": &cfg.TLSCert, "tls-key": &cfg.TLSKey,
		"metrics-listen": &cfg.MetricsListen, "log-format": &cfg.LogFormat} {
		if c.IsSet(flag) {
			*dst = c.String(flag)
		}
	}
	if c.IsSet("trusted-proxies") {
		cfg.TrustedProxies = config.ParseList(c.String("trusted-proxies"))
	}
	if c.IsSet("pprof") {
		cfg.Pprof = c.Bool("pprof")
	}
	if c.IsSet("drain-delay") {
		cfg.DrainDelay = c.Duration("drain-delay")
	}
	if c.IsSet("drain-timeout") {
		cfg.DrainTimeout = c.Duration("drain-timeout")
	}
}

// newFormatLogger is newLogger in the configured format; the gateway
// redacts credentials in whatever it logs (gateway.RedactingHandler), and
// so does every line of this logger.
func newFormatLogger(level, format string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: l}
	// The gateway writes its access line to this handler directly.
	return slog.New(gateway.RedactingHandler(gateway.NewLogHandler(os.Stderr, format, opts)))
}

// runServe serves the Blob API on ln (TLS when hs.TLSConfig is set) and
// the operator endpoints on their own listener until ctx ends (SIGTERM,
// SIGINT), then drains: readiness turns 503 at once, the API listener
// keeps accepting for drain_delay (so load balancers notice), then closes;
// in-flight requests get drain_timeout to finish, after which their
// connections are cut (an upload cut mid-body commits nothing; a commit
// already running completes, as commits run detached from the client).
// Then the collector stops and the Server releases its pooled intents;
// the caller closes the store.
func runServe(ctx context.Context, stop func(), log *slog.Logger, cfg config.Config, srv *gateway.Server, hs *http.Server, ln net.Listener) error {
	var inflight sync.WaitGroup
	api := hs.Handler
	hs.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inflight.Add(1)
		defer inflight.Done()
		api.ServeHTTP(w, r)
	})
	var ops *http.Server
	if !cfg.MetricsOff() {
		mln, err := net.Listen("tcp", cfg.MetricsListen)
		switch {
		case err != nil && cfg.MetricsListen != config.DefaultMetricsListen:
			return cli.Exit("metrics_listen: "+err.Error(), 1)
		case err != nil:
			// Only the default: another replica on this host may hold it.
			log.Error("metrics, health and readiness endpoints not started: the default address is taken (set --metrics-listen)",
				"addr", cfg.MetricsListen, "err", err)
		default:
			ops = &http.Server{Handler: srv.OpsHandler(cfg.Pprof), ReadHeaderTimeout: 10 * time.Second}
			go ops.Serve(mln)
			log.Info("metrics, health and readiness", "addr", mln.Addr().String(), "pprof", cfg.Pprof)
		}
	}
	collectCtx, stopCollector := context.WithCancel(context.Background())
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		srv.RunCollector(collectCtx, cfg.GCInterval)
	}()

	errc := make(chan error, 1)
	go func() {
		if hs.TLSConfig != nil {
			errc <- hs.ServeTLS(ln, "", "")
		} else {
			errc <- hs.Serve(ln)
		}
	}()
	var serveErr error
	select {
	case serveErr = <-errc:
	case <-ctx.Done():
	}
	// A second signal ends the process at once.
	stop()
	srv.SetDraining()
	if serveErr == nil && cfg.DrainDelay > 0 {
		log.Info("draining: readiness answers 503; still accepting connections", "drain_delay", cfg.DrainDelay)
		time.Sleep(cfg.DrainDelay)
	}
	log.Info("draining: listener closed; waiting for in-flight requests", "drain_timeout", cfg.DrainTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), cfg.DrainTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		log.Warn("drain timeout: cutting the connections still open", "err", err)
		hs.Close()
		// Handlers see their connections gone; let them return (a
		// commit in progress finishes) before the store closes.
		waitGroup(&inflight, 10*time.Second)
	}
	stopCollector()
	<-collected
	cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ccancel()
	if err := srv.Close(cctx); err != nil {
		log.Warn("releasing pooled upload intents", "err", err)
	}
	if ops != nil {
		ops.Close()
	}
	log.Info("stopped")
	if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	return serveErr
}

func waitGroup(wg *sync.WaitGroup, limit time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(limit):
	}
}
