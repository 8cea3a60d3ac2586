// Command blobgw is the one binary: serve the Blob REST API, migrate the
// metadata schema, run a collection pass.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/blobgw/blobgw/backends"
	"github.com/blobgw/blobgw/backends/disk"
	"github.com/blobgw/blobgw/backends/s3"
	"github.com/blobgw/blobgw/gateway"
	"github.com/blobgw/blobgw/internal/config"
	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/dbopen"
	"github.com/urfave/cli/v2"
	"gopkg.in/yaml.v3"
)

func main() {
	if err := newApp().Run(os.Args); err != nil {
		var ec cli.ExitCoder
		if errors.As(err, &ec) {
			if msg := err.Error(); msg != "" {
				fmt.Fprintln(os.Stderr, "blobgw:", msg)
			}
			os.Exit(ec.ExitCode())
		}
		fmt.Fprintln(os.Stderr, "blobgw:", err)
		os.Exit(1)
	}
}

// configFlags are shared by every command that touches the store.
func configFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "config", Aliases: []string{"c"}, EnvVars: []string{"BLOBGW_CONFIG"}, Usage: "YAML config file"},
		&cli.StringFlag{Name: "listen", EnvVars: []string{"BLOBGW_LISTEN"}, Usage: "listen address (default 127.0.0.1:10000)"},
		&cli.StringFlag{Name: "data-dir", EnvVars: []string{"BLOBGW_DATA_DIR"}, Usage: "directory for blob bytes (default ./data)"},
		&cli.StringFlag{Name: "metadata", EnvVars: []string{"BLOBGW_METADATA"}, Usage: "metadata DSN: a SQLite path or postgres:// URL (default <data-dir>/blobgw.db)"},
		&cli.StringFlag{Name: "backend", EnvVars: []string{"BLOBGW_BACKEND"}, Usage: "byte backend: disk (default) or s3"},
		&cli.StringSliceFlag{Name: "account", EnvVars: []string{"BLOBGW_ACCOUNTS"}, Usage: "account as name:key1[,key2] (repeatable; ';' separates several in the env var)"},
		&cli.DurationFlag{Name: "gc-grace", EnvVars: []string{"BLOBGW_GC_GRACE"}, Usage: "how long replaced bytes stay readable (default 15m)"},
		&cli.DurationFlag{Name: "gc-interval", EnvVars: []string{"BLOBGW_GC_INTERVAL"}, Usage: "collector pass interval (default 30s)"},
		&cli.DurationFlag{Name: "intent-ttl", EnvVars: []string{"BLOBGW_INTENT_TTL"}, Usage: "longest upload before its staged bytes are collectable (default 24h)"},
		&cli.DurationFlag{Name: "body-idle-timeout", EnvVars: []string{"BLOBGW_BODY_IDLE_TIMEOUT"}, Usage: "fail a request body that sends nothing for this long with 408, and cut a response the client reads nothing of for as long (default 60s)"},
		&cli.IntFlag{Name: "max-uploads", EnvVars: []string{"BLOBGW_MAX_UPLOADS"}, Usage: "uploads served at once per replica; more get 503 ServerBusy (default 256)"},
		&cli.Int64Flag{Name: "inline-max-bytes", EnvVars: []string{"BLOBGW_INLINE_MAX_BYTES"}, Usage: "keep a Put Blob or Append Block body up to this size in the metadata row, not the backend; 0: off (default 8192, at most 65536)"},
		&cli.IntFlag{Name: "max-connections", EnvVars: []string{"BLOBGW_MAX_CONNECTIONS"}, Usage: "connections held at once per replica; more get 503 ServerBusy (default 4096)"},
		&cli.DurationFlag{Name: "read-header-timeout", EnvVars: []string{"BLOBGW_READ_HEADER_TIMEOUT"}, Usage: "close a connection whose request headers take longer (default 30s)"},
		&cli.DurationFlag{Name: "idle-timeout", EnvVars: []string{"BLOBGW_IDLE_TIMEOUT"}, Usage: "close a keep-alive connection idle this long (default 2m)"},
		&cli.DurationFlag{Name: "block-expiry", EnvVars: []string{"BLOBGW_BLOCK_EXPIRY"}, Usage: "discard uncommitted blocks of a blob this long after its last Put Block (default 168h)"},
		&cli.BoolFlag{Name: "strict-conditions", EnvVars: []string{"BLOBGW_STRICT_CONDITIONS"}, Usage: "reject condition header combinations the REST docs forbid on writes"},
		&cli.StringFlag{Name: "log-level", EnvVars: []string{"BLOBGW_LOG_LEVEL"}, Usage: "debug, info, warn or error"},
		&cli.StringFlag{Name: "s3-endpoint", EnvVars: []string{"BLOBGW_S3_ENDPOINT"}, Usage: "s3 backend: endpoint URL (empty: AWS)"},
		&cli.StringFlag{Name: "s3-region", EnvVars: []string{"BLOBGW_S3_REGION"}, Usage: "s3 backend: region (default us-east-1)"},
		&cli.StringFlag{Name: "s3-bucket", EnvVars: []string{"BLOBGW_S3_BUCKET"}, Usage: "s3 backend: bucket"},
		&cli.StringFlag{Name: "s3-prefix", EnvVars: []string{"BLOBGW_S3_PREFIX"}, Usage: "s3 backend: key prefix"},
		&cli.StringFlag{Name: "s3-access-key", EnvVars: []string{"BLOBGW_S3_ACCESS_KEY"}, Usage: "s3 backend: access key (empty: the AWS default chain)"},
		&cli.StringFlag{Name: "s3-secret-key", EnvVars: []string{"BLOBGW_S3_SECRET_KEY"}, Usage: "s3 backend: secret key"},
		&cli.BoolFlag{Name: "s3-path-style", EnvVars: []string{"BLOBGW_S3_PATH_STYLE"}, Usage: "s3 backend: path-style addressing (MinIO)"},
	}
}

// loadConfig applies defaults < file < environment < flags (urfave/cli
// already gives flags precedence over their environment variables) and
// validates. Errors exit with status 2 and one line.
func loadConfig(c *cli.Context) (config.Config, error) {
	cfg := config.Default()
	if p := c.String("config"); p != "" {
		if err := cfg.LoadFile(p); err != nil {
			return cfg, cli.Exit(err.Error(), 2)
		}
	}
	if c.IsSet("listen") {
		cfg.Listen = c.String("listen")
	}
	if c.IsSet("data-dir") {
		cfg.DataDir = c.String("data-dir")
	}
	if c.IsSet("metadata") {
		cfg.Metadata = c.String("metadata")
	}
	if c.IsSet("backend") {
		cfg.Backend = c.String("backend")
	}
	if c.IsSet("account") {
		accts, err := config.ParseAccounts(c.StringSlice("account"))
		if err != nil {
			return cfg, cli.Exit("config: "+err.Error(), 2)
		}
		cfg.Accounts = accts
	}
	if c.IsSet("gc-grace") {
		cfg.GCGrace = c.Duration("gc-grace")
	}
	if c.IsSet("gc-interval") {
		cfg.GCInterval = c.Duration("gc-interval")
	}
	if c.IsSet("intent-ttl") {
		cfg.IntentTTL = c.Duration("intent-ttl")
	}
	if c.IsSet("body-idle-timeout") {
		cfg.BodyIdleTimeout = c.Duration("body-idle-timeout")
	}
	if c.IsSet("max-uploads") {
		cfg.MaxUploads = c.Int("max-uploads")
	}
	if c.IsSet("inline-max-bytes") {
		cfg.InlineMaxBytes = c.Int64("inline-max-bytes")
	}
	if c.IsSet("max-connections") {
		cfg.MaxConnections = c.Int("max-connections")
	}
	if c.IsSet("read-header-timeout") {
		cfg.ReadHeaderTimeout = c.Duration("read-header-timeout")
	}
	if c.IsSet("idle-timeout") {
		cfg.IdleTimeout = c.Duration("idle-timeout")
	}
	if c.IsSet("block-expiry") {
		cfg.BlockExpiry = c.Duration("block-expiry")
	}
	if c.IsSet("strict-conditions") {
		cfg.StrictConditions = c.Bool("strict-conditions")
	}
	if c.IsSet("log-level") {
		cfg.LogLevel = c.String("log-level")
	}
	for flag, dst := range map[string]*string{
		"s3-endpoint": &cfg.S3.Endpoint, "s3-region": &cfg.S3.Region, "s3-bucket": &cfg.S3.Bucket,
		"s3-prefix": &cfg.S3.Prefix, "s3-access-key": &cfg.S3.AccessKey, "s3-secret-key": &cfg.S3.SecretKey,
	} {
		if c.IsSet(flag) {
			*dst = c.String(flag)
		}
	}
	if c.IsSet("s3-path-style") {
		cfg.S3.PathStyle = c.Bool("s3-path-style")
	}
	applyServingFlags(c, &cfg)
	applyGCFlags(c, &cfg)
	if err := cfg.Validate(); err != nil {
		return cfg, cli.Exit("config: "+err.Error(), 2)
	}
	return cfg, nil
}

func newLogger(level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
}

func newApp() *cli.App {
	app := &cli.App{
		Name:  "blobgw",
		Usage: "an Azure Blob Storage gateway over local disk or S3, with SQL-kept ETags and leases",
		// main decides the exit status; Run must not exit the process.
		ExitErrHandler: func(*cli.Context, error) {},
		// Account keys are comma-separated inside one --account value.
		DisableSliceFlagSeparator: true,
		Commands: []*cli.Command{
			{
				Name:  "serve",
				Usage: "serve the Blob REST API",
				Flags: append(append(append(configFlags(), servingFlags()...), gcFlags()...), &cli.BoolFlag{Name: "versioning",
					Usage: "turn blob versioning on for every configured account at start (kept in the metadata store; blobgw account versioning turns it off)"}),
				Action: serve,
			},
			{
				Name:  "migrate",
				Usage: "apply the embedded schema migrations to the metadata database",
				Flags: configFlags(),
				Action: func(c *cli.Context) error {
					cfg, err := loadConfig(c)
					if err != nil {
						return err
					}
					if err := ensureDataDir(cfg); err != nil {
						return err
					}
					from, to, err := dbopen.Migrate(c.Context, cfg.Metadata)
					if err != nil {
						return cli.Exit("migrate: "+err.Error(), 1)
					}
					if from == to {
						fmt.Printf("schema is up to date at version %d\n", to)
					} else {
						fmt.Printf("migrated schema from version %d to %d\n", from, to)
					}
					return nil
				},
			},
			{
				Name:  "config",
				Usage: "print the effective configuration (account keys redacted)",
				Flags: append(configFlags(), gcFlags()...),
				Action: func(c *cli.Context) error {
					cfg, err := loadConfig(c)
					if err != nil {
						return err
					}
					out := cfg
					out.Metadata = redactDSN(cfg.Metadata)
					if out.S3.SecretKey != "" {
						out.S3.SecretKey = "<redacted>"
					}
					out.Accounts = nil
					for _, a := range cfg.Accounts {
						ra := config.Account{Name: a.Name, ContainerDeleteRetentionDays: a.ContainerDeleteRetentionDays}
						for range a.Keys {
							ra.Keys = append(ra.Keys, "<redacted>")
						}
						out.Accounts = append(out.Accounts, ra)
					}
					enc := yaml.NewEncoder(c.App.Writer)
					defer enc.Close()
					return enc.Encode(out)
				},
			},
			{
				Name:  "gc",
				Usage: "run one collection pass at once: delete backend objects that are due (their gc_grace or intent_ttl passed)",
				// --now says so explicitly: gc never waits for gc_interval.
				Flags: append(configFlags(), &cli.BoolFlag{Name: "now", Usage: "run the pass at once (what gc always does; for scripts)"}),
				Action: func(c *cli.Context) error {
					cfg, err := loadConfig(c)
					if err != nil {
						return err
					}
					store, backend, err := openParts(c.Context, cfg)
					if err != nil {
						return err
					}
					defer store.Close()
					n, err := gateway.CollectPass(c.Context, store, backend, newLogger(cfg.LogLevel), gateway.CollectOptions{
						TempAge:     gateway.TempSweepAge(cfg.BodyIdleTimeout),
						BlockExpiry: cfg.BlockExpiry,
						Grace:       cfg.GCGrace,
					})
					fmt.Printf("deleted %d objects\n", n)
					return err
				},
			},
			leaseCommand(), fsckCommand(), accountCommand(), certCommand(),
			importCommand(), exportCommand(), benchCommand(),
		},
	}
	refuseArguments(app.Commands)
	return app
}

func ensureDataDir(cfg config.Config) error {
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return cli.Exit("data_dir: "+err.Error(), 2)
	}
	return nil
}

func openParts(ctx context.Context, cfg config.Config) (leasedb.Store, backends.Backend, error) {
	if err := ensureDataDir(cfg); err != nil {
		return nil, nil, err
	}
	store, err := dbopen.Open(ctx, cfg.Metadata)
	if err != nil {
		return nil, nil, cli.Exit("metadata: "+err.Error(), 1)
	}
	backend, err := openBackend(ctx, cfg)
	if err != nil {
		store.Close()
		return nil, nil, cli.Exit("backend: "+err.Error(), 1)
	}
	return store, backend, nil
}

// openInterruptible is openParts for a command that runs until it is done
// or interrupted: its context ends on Ctrl-C or SIGTERM (interruptible),
// and done closes the store, then releases the signals.
func openInterruptible(c *cli.Context, cfg config.Config) (ctx context.Context, store leasedb.Store, backend backends.Backend, done func(), err error) {
	ctx, stop := interruptible(c.Context)
	if store, backend, err = openParts(ctx, cfg); err != nil {
		stop()
		return nil, nil, nil, nil, err
	}
	return ctx, store, backend, func() { store.Close(); stop() }, nil
}

func openBackend(ctx context.Context, cfg config.Config) (backends.Backend, error) {
	if cfg.Backend == "s3" {
		st, err := s3.New(ctx, s3.Config{
			Endpoint: cfg.S3.Endpoint, Region: cfg.S3.Region, Bucket: cfg.S3.Bucket, Prefix: cfg.S3.Prefix,
			AccessKey: cfg.S3.AccessKey, SecretKey: cfg.S3.SecretKey, PathStyle: cfg.S3.PathStyle,
			PartSize: cfg.S3.PartSize, Concurrency: cfg.S3.Concurrency,
		})
		if err != nil {
			return nil, err
		}
		if err := st.EnsureBucket(ctx); err != nil {
			return nil, err
		}
		return st, nil
	}
	return disk.New(filepath.Join(cfg.DataDir, "blobs"))
}

func serve(c *cli.Context) error {
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	log := newFormatLogger(cfg.LogLevel, cfg.LogFormat)
	if err := startGC(cfg, log, os.Getenv); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	store, backend, err := openParts(ctx, cfg)
	if err != nil {
		return err
	}
	defer store.Close()
	if ts := backends.FeaturesOf(backend).TempSweeper; ts != nil {
		// Temp files of uploads that a crash interrupted.
		if n, err := ts.SweepTemp(ctx, time.Hour); err != nil {
			log.Warn("cleaning stale temp files", "err", err)
		} else if n > 0 {
			log.Info("removed stale temp files", "count", n)
		}
	}
	// The accounts live in the metadata store, shared by every replica.
	accounts, err := startAccounts(ctx, cfg, store, log)
	if err != nil {
		return err
	}
	db := &leasedb.DB{Store: store, Grace: cfg.GCGrace, StrictConditions: cfg.StrictConditions}
	if c.Bool("versioning") {
		for _, a := range cfg.Accounts {
			if err := db.SetVersioning(ctx, a.Name, true); err != nil {
				return cli.Exit("versioning: "+oneLine(err.Error()), 1)
			}
		}
	}
	srv := gateway.New(db, backend, accounts, log, gateway.Options{IntentTTL: cfg.IntentTTL, EmulatorHosts: cfg.EmulatorHosts,
		BodyIdleTimeout: cfg.BodyIdleTimeout, MaxUploads: cfg.MaxUploads, BlockExpiry: cfg.BlockExpiry,
		InlineMaxBytes:           cfg.InlineMaxBytes,
		ContainerDeleteRetention: cfg.ContainerDeleteRetention(),
		TrustedProxies:           cfg.TrustedPrefixes()})
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return cli.Exit("listen: "+err.Error(), 1)
	}
	// The listener records request headers so that metadata names keep the
	// case the client sent (Go's server canonicalizes them). Behind TLS it
	// would record ciphertext: names are lowercased there. The connection
	// limit counts raw TCP connections (under TLS an over-limit connection
	// is closed: its busy answer would need the handshake).
	// A response that makes no progress for body_idle_timeout is cut.
	if cfg.TLSCert == "" {
		ln = gateway.PreserveHeaderCase(gateway.LimitWriteStalls(srv.LimitConnections(ln, cfg.MaxConnections), cfg.BodyIdleTimeout))
	} else {
		ln = gateway.LimitWriteStalls(srv.LimitTLSConnections(ln, cfg.MaxConnections), cfg.BodyIdleTimeout)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: cfg.ReadHeaderTimeout, IdleTimeout: cfg.IdleTimeout,
		ConnContext: gateway.ConnContext}
	if err := setupTLS(hs, cfg, log); err != nil {
		ln.Close()
		return cli.Exit(err.Error(), 1)
	}
	scheme := "http"
	if hs.TLSConfig != nil {
		scheme = "https"
	}
	names := make([]string, 0, len(cfg.Accounts))
	for _, a := range cfg.Accounts {
		names = append(names, a.Name)
	}
	log.Info("blobgw serving", "addr", ln.Addr().String(), "accounts", names, "data_dir", cfg.DataDir,
		"metadata", redactDSN(cfg.Metadata), "endpoint", fmt.Sprintf("%s://%s/%s", scheme, ln.Addr(), names[0]))
	return runServe(ctx, stop, log, cfg, srv, hs, ln)
}

// redactDSN hides a password in a postgres URL for logging.
func redactDSN(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		if _, has := u.User.Password(); has {
			return u.Redacted()
		}
	}
	return dsn
}
