package config

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// DefaultMetricsListen is where the metrics, health and readiness
// endpoints listen unless metrics_listen says otherwise.
const DefaultMetricsListen = "127.0.0.1:9464"

// Serving are the settings of blobgw serve in production: TLS, trusted
// proxies, the operator listener, the log format and the drain on
// shutdown.
type Serving struct {
	// TLSCert and TLSKey are PEM files; both set: the Blob API is served
	// over TLS (HTTP/2 and HTTP/1.1), re-reading the files when they
	// change. Neither: plain HTTP.
	TLSCert string `yaml:"tls_cert"`
	TLSKey  string `yaml:"tls_key"`
	// TrustedProxies are CIDR prefixes (or addresses) whose forwarded
	// headers are believed.
	TrustedProxies []string `yaml:"trusted_proxies"`
	// MetricsListen is the address of /metrics, /healthz, /readyz
	// ("" or "off": none).
	MetricsListen string `yaml:"metrics_listen"`
	// Pprof serves /debug/pprof/ on the metrics listener.
	Pprof bool `yaml:"pprof"`
	// LogFormat is text or json.
	LogFormat string `yaml:"log_format"`
	// DrainDelay is how long a replica that got SIGTERM keeps accepting
	// connections while /readyz says 503; DrainTimeout bounds how long
	// in-flight requests then get to finish.
	DrainDelay   time.Duration `yaml:"drain_delay"`
	DrainTimeout time.Duration `yaml:"drain_timeout"`
}

func defaultServing() Serving {
	return Serving{MetricsListen: DefaultMetricsListen, LogFormat: "text", DrainDelay: 5 * time.Second, DrainTimeout: 30 * time.Second}
}

// MetricsOff reports whether the metrics listener is disabled.
func (s Serving) MetricsOff() bool {
	return s.MetricsListen == "" || strings.EqualFold(s.MetricsListen, "off")
}

// TrustedPrefixes parses TrustedProxies (validated already).
func (s Serving) TrustedPrefixes() []netip.Prefix {
	out, _ := parsePrefixes(s.TrustedProxies)
	return out
}

// ParseList splits a comma-separated flag or environment value.
func ParseList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func parsePrefixes(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, v := range list {
		for _, part := range ParseList(v) {
			if p, err := netip.ParsePrefix(part); err == nil {
				out = append(out, p.Masked())
				continue
			}
			a, err := netip.ParseAddr(part)
			if err != nil {
				return nil, fmt.Errorf("trusted_proxies: %q is not an address or CIDR prefix", part)
			}
			a = a.Unmap()
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	return out, nil
}

func (s Serving) validate() error {
	if (s.TLSCert == "") != (s.TLSKey == "") {
		return errors.New("tls_cert and tls_key go together")
	}
	if _, err := parsePrefixes(s.TrustedProxies); err != nil {
		return err
	}
	switch s.LogFormat {
	case "text", "json":
	default:
		return fmt.Errorf("log_format: %q (want text or json)", s.LogFormat)
	}
	if s.DrainDelay < 0 || s.DrainTimeout <= 0 {
		return errors.New("drain_delay must be ≥ 0 and drain_timeout > 0")
	}
	return nil
}
