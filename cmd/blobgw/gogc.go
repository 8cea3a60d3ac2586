package main

import (
	"fmt"
	"log/slog"
	"math"
	"runtime/debug"
	"runtime/metrics"
	"strconv"

	"github.com/blobgw/blobgw/internal/config"
	"github.com/urfave/cli/v2"
)

// gcFlags are the Go runtime's collector settings of serve (and config,
// which prints them).
func gcFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "go-gc-percent", EnvVars: []string{"BLOBGW_GO_GC_PERCENT"},
			Usage: "the Go collector's GOGC: heap growth over the live heap before a collection, 10-100000 or off (default " + config.DefaultGCPercent + "; GOGC in the environment wins)"},
		&cli.StringFlag{Name: "go-memory-limit", EnvVars: []string{"BLOBGW_GO_MEMORY_LIMIT"},
			Usage: "the Go runtime's soft memory limit (GOMEMLIMIT), e.g. 1GiB, or off (default " + config.DefaultMemoryLimit + "; GOMEMLIMIT in the environment wins)"},
	}
}

// applyGCFlags sets what the collector flags name over cfg.
func applyGCFlags(c *cli.Context, cfg *config.Config) {
	if c.IsSet("go-gc-percent") {
		cfg.GoGCPercent = c.String("go-gc-percent")
	}
	if c.IsSet("go-memory-limit") {
		cfg.GoMemoryLimit = c.String("go-memory-limit")
	}
}

// gcApplied is what the collector runs with after applyGC, and where each
// value came from (the setting's name or the environment variable's).
type gcApplied struct {
	Percent     int   // -1: off
	Limit       int64 // math.MaxInt64: none
	PercentFrom string
	LimitFrom   string
}

// applyGC hands go_gc_percent and go_memory_limit to the runtime
// (debug.SetGCPercent, debug.SetMemoryLimit), except a value whose
// environment variable (GOGC, GOMEMLIMIT; getenv reads it) is set: the
// runtime read that one at start, and it wins. A GOGC the runtime cannot
// read it silently replaces with 100, so that is refused here rather than
// served under a value the operator did not ask for (a malformed
// GOMEMLIMIT already stops the runtime at start). It returns what the
// runtime reports afterwards.
func applyGC(cfg config.Config, getenv func(string) string) (gcApplied, error) {
	percent, limit := cfg.GCSettings()
	a := gcApplied{PercentFrom: "go_gc_percent", LimitFrom: "go_memory_limit"}
	if v := getenv("GOGC"); v != "" {
		if _, err := strconv.Atoi(v); err != nil && v != "off" {
			return a, fmt.Errorf("GOGC=%q in the environment: want a whole number or off", v)
		}
		a.PercentFrom = "GOGC"
	} else {
		debug.SetGCPercent(percent)
	}
	if getenv("GOMEMLIMIT") != "" {
		a.LimitFrom = "GOMEMLIMIT"
	} else {
		debug.SetMemoryLimit(limit)
	}
	a.Percent, a.Limit = runtimeGC()
	return a, nil
}

// runtimeGC reads the collector's current GOGC (-1: off) and memory limit
// from runtime/metrics, without changing them.
func runtimeGC() (percent int, limit int64) {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(s)
	// GOGC=off is the runtime's -1, reported as that int64's bits.
	return int(int64(s[0].Value.Uint64())), int64(s[1].Value.Uint64())
}

// logAttrs are the start-up log line's attributes.
func (a gcApplied) logAttrs() []any {
	p := strconv.Itoa(a.Percent)
	if a.Percent < 0 {
		p = "off"
	}
	return []any{"go_gc_percent", p, "from", a.PercentFrom,
		"go_memory_limit", formatLimit(a.Limit), "limit_from", a.LimitFrom}
}

// formatLimit writes a memory limit as GOMEMLIMIT would take it.
func formatLimit(n int64) string {
	if n == math.MaxInt64 {
		return "off"
	}
	for _, u := range []struct {
		unit string
		size int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.unit
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// startGC applies the collector settings for serve and logs them; a bad
// GOGC exits with status 2 like a bad setting.
func startGC(cfg config.Config, log *slog.Logger, getenv func(string) string) error {
	a, err := applyGC(cfg, getenv)
	if err != nil {
		return cli.Exit("config: "+err.Error(), 2)
	}
	log.Info("go garbage collector", a.logAttrs()...)
	if a.Percent < 0 && a.Limit == math.MaxInt64 {
		log.Warn("the Go collector is off with no memory limit (GOGC=off from the environment): the heap grows without bound; set GOMEMLIMIT or go_memory_limit")
	}
	return nil
}
