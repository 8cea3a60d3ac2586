// Package config loads blobgw's settings from a YAML file, BLOBGW_*
// environment variables and command-line flags (flags override the
// environment, which overrides the file). It validates everything up front
// so a bad setting is one clear line before anything starts.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/blobgw/blobgw/gateway/auth"
	"gopkg.in/yaml.v3"
)

// DevAccountName and DevAccountKey are Azure's published development
// account (the Azurite and Azure Storage Emulator default); used when no
// account is configured.
const (
	DevAccountName = "devstoreaccount1"
	DevAccountKey  = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// Account is one configured storage account.
type Account struct {
	Name string   `yaml:"name"`
	Keys []string `yaml:"keys"`
	// ContainerDeleteRetentionDays is the account's container soft delete
	// retention (1-365 days; 0: off, Delete Container deletes at once).
	// Azure sets it on the storage account, outside the data plane, so it
	// lives here rather than in Set Blob Service Properties.
	ContainerDeleteRetentionDays int `yaml:"container_delete_retention_days"`
}

// ContainerDeleteRetention is each account's container soft delete
// retention, for gateway.Options; accounts with it off are absent.
func (c *Config) ContainerDeleteRetention() map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, a := range c.Accounts {
		if a.ContainerDeleteRetentionDays > 0 {
			out[a.Name] = time.Duration(a.ContainerDeleteRetentionDays) * 24 * time.Hour
		}
	}
	return out
}

// Config is every setting; config.example.yaml documents each key.
type Config struct {
	Listen           string        `yaml:"listen"`
	DataDir          string        `yaml:"data_dir"`
	Metadata         string        `yaml:"metadata"`
	Backend          string        `yaml:"backend"`
	Accounts         []Account     `yaml:"accounts"`
	GCGrace          time.Duration `yaml:"gc_grace"`
	GCInterval       time.Duration `yaml:"gc_interval"`
	IntentTTL        time.Duration `yaml:"intent_ttl"`
	StrictConditions bool          `yaml:"strict_conditions"`
	BodyIdleTimeout  time.Duration `yaml:"body_idle_timeout"`
	MaxUploads       int           `yaml:"max_uploads"`
	InlineMaxBytes   int64         `yaml:"inline_max_bytes"`
	BlockExpiry      time.Duration `yaml:"block_expiry"`
	EmulatorHosts    []string      `yaml:"emulator_hosts"`
	LogLevel         string        `yaml:"log_level"`
	S3               S3            `yaml:"s3"`

	// What idle and slow clients may hold (gateway.LimitConnections,
	// http.Server's ReadHeaderTimeout and IdleTimeout).
	MaxConnections    int           `yaml:"max_connections"`
	ReadHeaderTimeout time.Duration `yaml:"read_header_timeout"`
	IdleTimeout       time.Duration `yaml:"idle_timeout"`
	// The Go runtime's garbage collector (gc.go): GOGC and GOMEMLIMIT as
	// settings; those variables in the environment win.
	GoGCPercent   string `yaml:"go_gc_percent"`
	GoMemoryLimit string `yaml:"go_memory_limit"`
	// Serving: TLS, trusted proxies, metrics, log format, drain (serving.go).
	Serving `yaml:",inline"`
	// AccountsDefaulted is set by Validate when no account was configured
	// and Accounts holds the development account: serve seeds it only
	// into a store that holds no account.
	AccountsDefaulted bool `yaml:"-"`
}

// S3 configures the s3 backend (Amazon S3, MinIO or any S3-compatible
// store).
type S3 struct {
	Endpoint    string `yaml:"endpoint"`
	Region      string `yaml:"region"`
	Bucket      string `yaml:"bucket"`
	Prefix      string `yaml:"prefix"`
	AccessKey   string `yaml:"access_key"`
	SecretKey   string `yaml:"secret_key"`
	PathStyle   bool   `yaml:"path_style"`
	PartSize    int64  `yaml:"part_size"`
	Concurrency int    `yaml:"concurrency"`
}

// DefaultInlineMaxBytes is inline_max_bytes's default: a Put Blob body up
// to this size is kept in the metadata row (gateway/blob_inline.go; Append
// Block too, while the append blob's inline bytes stay within it).
// Measured side by side (BenchmarkInline, README Performance): inline
// halves a 4-8 KiB put's gateway CPU and costs a read of it about a fifth
// more; at 16 KiB the put saves about what each read loses, and at 64 KiB
// both lose.
const DefaultInlineMaxBytes = 8 << 10

// MaxInlineMaxBytes bounds inline_max_bytes: past 64 KiB inline loses on
// both put and get, an inline body is held in memory while it is read (at
// most max_uploads of them at once), and every copy of the row (snapshot,
// version) repeats it.
const MaxInlineMaxBytes = 64 << 10

// Default is the zero-set-up configuration: the dev account on
// 127.0.0.1:10000, bytes under ./data, metadata in ./data/blobgw.db.
func Default() Config {
	return Config{
		Listen:     "127.0.0.1:10000",
		DataDir:    "./data",
		Backend:    "disk",
		GCGrace:    15 * time.Minute,
		GCInterval: 30 * time.Second,
		IntentTTL:  24 * time.Hour,
		LogLevel:   "info",

		BodyIdleTimeout: 60 * time.Second,
		MaxUploads:      256,
		InlineMaxBytes:  DefaultInlineMaxBytes,
		BlockExpiry:     7 * 24 * time.Hour,

		MaxConnections:    4096,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		GoGCPercent:       DefaultGCPercent,
		GoMemoryLimit:     DefaultMemoryLimit,
		Serving:           defaultServing(),
	}
}

// LoadFile merges a YAML file over c. Unknown keys are errors: a typo must
// not silently fall back to a default.
func (c *Config) LoadFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("config file %s: %v", path, err)
	}
	return nil
}

// ParseAccounts parses "name:key1[,key2][;name2:key...]" (the BLOBGW_ACCOUNTS
// and --account form).
func ParseAccounts(specs []string) ([]Account, error) {
	var out []Account
	for _, spec := range specs {
		for _, one := range strings.Split(spec, ";") {
			one = strings.TrimSpace(one)
			if one == "" {
				continue
			}
			name, keys, ok := strings.Cut(one, ":")
			if !ok || name == "" || keys == "" {
				return nil, fmt.Errorf("account %q: want name:key[,key2]", redact(one))
			}
			out = append(out, Account{Name: name, Keys: strings.Split(keys, ",")})
		}
	}
	return out, nil
}

func redact(s string) string {
	name, _, _ := strings.Cut(s, ":")
	return name + ":…"
}

// Validate checks every setting and fills derived defaults (the dev
// account when none is configured, the SQLite path under the data dir).
func (c *Config) Validate() error {
	if c.Listen == "" {
		return errors.New("listen: empty address")
	}
	if c.DataDir == "" {
		return errors.New("data_dir: empty")
	}
	if c.Metadata == "" {
		c.Metadata = filepath.Join(c.DataDir, "blobgw.db")
	}
	switch c.Backend {
	case "disk":
		// The settings that name an S3 store mean one was wanted.
		if c.S3.Bucket != "" || c.S3.Endpoint != "" {
			return errors.New("s3.bucket or s3.endpoint is set but backend is disk: set backend s3, or remove them")
		}
	case "s3":
		if c.S3.Bucket == "" {
			return errors.New("s3.bucket: required with backend s3")
		}
		if (c.S3.AccessKey == "") != (c.S3.SecretKey == "") {
			return errors.New("s3: access_key and secret_key go together")
		}
		if c.S3.Region == "" {
			c.S3.Region = "us-east-1"
		}
	default:
		return fmt.Errorf("backend: %q is not supported (supported: disk, s3)", c.Backend)
	}
	if len(c.Accounts) == 0 {
		c.Accounts = []Account{{Name: DevAccountName, Keys: []string{DevAccountKey}}}
		c.AccountsDefaulted = true
	}
	seen := map[string]bool{}
	for _, a := range c.Accounts {
		if !ValidAccountName(a.Name) {
			return fmt.Errorf("accounts: %q is not a valid account name (3-24 lowercase letters and digits)", a.Name)
		}
		if seen[a.Name] {
			return fmt.Errorf("accounts: %q configured twice", a.Name)
		}
		seen[a.Name] = true
		if d := a.ContainerDeleteRetentionDays; d < 0 || d > 365 {
			return fmt.Errorf("accounts: %q container_delete_retention_days %d (want 0, off, or 1-365)", a.Name, d)
		}
		if len(a.Keys) == 0 || len(a.Keys) > 2 {
			return fmt.Errorf("accounts: %q needs one or two keys", a.Name)
		}
		for i, k := range a.Keys {
			if _, err := auth.DecodeKey(k); err != nil {
				return fmt.Errorf("accounts: %q key %d is not valid base64", a.Name, i+1)
			}
		}
	}
	if c.GCGrace < 0 || c.GCInterval <= 0 || c.IntentTTL <= 0 {
		return errors.New("gc_grace must be ≥ 0, gc_interval and intent_ttl > 0")
	}
	if c.BodyIdleTimeout <= 0 {
		return errors.New("body_idle_timeout must be > 0")
	}
	if c.MaxUploads <= 0 {
		return errors.New("max_uploads must be > 0")
	}
	if c.InlineMaxBytes < 0 || c.InlineMaxBytes > MaxInlineMaxBytes {
		return fmt.Errorf("inline_max_bytes must be 0 (off) to %d", MaxInlineMaxBytes)
	}
	if c.BlockExpiry <= 0 {
		return errors.New("block_expiry must be > 0")
	}
	if c.MaxConnections <= 0 {
		return errors.New("max_connections must be > 0")
	}
	if c.ReadHeaderTimeout <= 0 || c.IdleTimeout <= 0 {
		return errors.New("read_header_timeout and idle_timeout must be > 0")
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("log_level: %q (want debug, info, warn or error)", c.LogLevel)
	}
	if err := c.validateGC(); err != nil {
		return err
	}
	return c.Serving.validate()
}

// ValidAccountName is Azure's storage account name rule: 3-24 lowercase
// letters and digits (the configured accounts, blobgw account add).
func ValidAccountName(n string) bool {
	if len(n) < 3 || len(n) > 24 {
		return false
	}
	for _, c := range n {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// AuthAccounts builds the verifier's account table.
func (c *Config) AuthAccounts() (auth.MapAccounts, error) {
	m := auth.MapAccounts{}
	for _, a := range c.Accounts {
		acct := &auth.Account{Name: a.Name}
		for _, k := range a.Keys {
			key, err := auth.DecodeKey(k)
			if err != nil {
				return nil, err
			}
			acct.Keys = append(acct.Keys, key)
		}
		m[a.Name] = acct
	}
	return m, nil
}
