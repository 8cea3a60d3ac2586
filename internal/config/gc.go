package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The garbage collector settings of blobgw serve: go_gc_percent is the Go
// runtime's GOGC (how far the heap may grow past the live heap before the
// next collection) and go_memory_limit its GOMEMLIMIT (a soft ceiling on the
// memory the runtime holds, past which it collects harder). Both are
// applied at start with runtime/debug.SetGCPercent and SetMemoryLimit,
// except that GOGC or GOMEMLIMIT set in the process's environment wins (the
// runtime reads those at start and serve leaves that value alone), so an
// operator who tunes the runtime the way every Go program is tuned keeps
// what the variable says.
const (
	// DefaultGCPercent: the live heap of a serving gateway is small (tens of
	// MiB) and small requests allocate fast, so at the runtime's 100 the
	// collector ran once every 40-55 small puts and took 12-33 % of the
	// gateway's CPU. Measured side by side (BenchmarkGCSettings, README
	// Performance), 400 cut the collector's own CPU per small operation 4.5-10
	// times for 7-12 MiB more peak RSS. But the default stays the runtime's
	// 100: under abuse (TestAbuse: thousands of parallel uploads, each with
	// its buffers) a 400 let the gateway's peak RSS reach 427 MiB, over that
	// test's 400 MiB bound, in one of three CI runs, and the total CPU gain
	// was beyond the measurements' spread in one run of three. Set 400 (or
	// more) where memory is plentiful, ideally with go_memory_limit.
	DefaultGCPercent = "100"
	// DefaultMemoryLimit: none. A default ceiling would have to guess the
	// machine; one under a deployment's live heap would keep the collector
	// running all the time. Where the process has a memory budget (a
	// container limit), set go_memory_limit a little under it.
	DefaultMemoryLimit = "off"
	// MinMemoryLimit: below this a gateway's own working set (connection
	// buffers, the pools of upload buffers) would keep the collector
	// running continuously.
	MinMemoryLimit = 64 << 20
	// MaxGCPercent bounds go_gc_percent: a heap allowed to grow a thousand
	// times its live size is a typo, not a tuning.
	MaxGCPercent = 100000
)

// ParseGCPercent parses go_gc_percent: "off" (-1: collect only when the
// memory limit is reached) or a whole number from 10 to MaxGCPercent.
func ParseGCPercent(s string) (int, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "off") {
		return -1, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 10 || n > MaxGCPercent {
		return 0, fmt.Errorf("go_gc_percent: %q (want a whole number from 10 to %d, or off)", s, MaxGCPercent)
	}
	return n, nil
}

// ParseMemoryLimit parses go_memory_limit in GOMEMLIMIT's form: a number of
// bytes with an optional unit B, KiB, MiB, GiB or TiB, or "off" (no limit:
// math.MaxInt64, the runtime's own "none"). A limit under MinMemoryLimit
// is refused.
func ParseMemoryLimit(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "off") {
		return math.MaxInt64, nil
	}
	bad := fmt.Errorf("go_memory_limit: %q (want bytes with an optional unit B, KiB, MiB, GiB or TiB, e.g. 512MiB, or off)", s)
	num, mult := s, int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			num, mult = v, u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, bad
	}
	if n*mult < MinMemoryLimit {
		return 0, fmt.Errorf("go_memory_limit: %q is under the 64MiB a gateway needs (or off)", s)
	}
	return n * mult, nil
}

// GCSettings returns go_gc_percent and go_memory_limit parsed (valid after
// Validate).
func (c *Config) GCSettings() (percent int, limit int64) {
	percent, _ = ParseGCPercent(c.GoGCPercent)
	limit, _ = ParseMemoryLimit(c.GoMemoryLimit)
	return percent, limit
}

func (c *Config) validateGC() error {
	percent, err := ParseGCPercent(c.GoGCPercent)
	if err != nil {
		return err
	}
	limit, err := ParseMemoryLimit(c.GoMemoryLimit)
	if err != nil {
		return err
	}
	// GOGC=off alone never collects: the heap would grow until the
	// process is killed.
	if percent < 0 && limit == math.MaxInt64 {
		return fmt.Errorf("go_gc_percent: off needs a go_memory_limit (the heap would otherwise grow without bound)")
	}
	return nil
}
