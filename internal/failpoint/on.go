//go:build failpoints

package failpoint

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Enabled reports whether the binary was built with the failpoints tag.
const Enabled = true

// EnvVar arms failpoints: a comma-separated list of name=kill:p, each
// firing with probability p (0 < p ≤ 1) every time the process passes it,
// e.g. BLOBGW_FAILPOINTS=after-stage=kill:0.05,after-commit=kill:0.02.
const EnvVar = "BLOBGW_FAILPOINTS"

var (
	once  sync.Once
	armed map[string]float64
)

// Parse reads an EnvVar value.
func Parse(s string) (map[string]float64, error) {
	m := map[string]float64{}
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		name, spec, ok := strings.Cut(part, "=")
		action, prob, ok2 := strings.Cut(spec, ":")
		if !ok || !ok2 || name == "" || action != "kill" {
			return nil, fmt.Errorf("failpoint %q: want name=kill:probability", part)
		}
		p, err := strconv.ParseFloat(prob, 64)
		if err != nil || p <= 0 || p > 1 {
			return nil, fmt.Errorf("failpoint %q: probability must be in (0, 1]", part)
		}
		m[name] = p
	}
	return m, nil
}

func load() {
	m, err := Parse(os.Getenv(EnvVar))
	if err != nil {
		// A test that arms a failpoint wrongly must not run unarmed.
		fmt.Fprintf(os.Stderr, "blobgw: %s: %v\n", EnvVar, err)
		os.Exit(2)
	}
	armed = m
}

// Inject fires the failpoint name if it is armed: with its probability,
// the process SIGKILLs itself (nothing deferred runs, no buffer is
// flushed, no connection is closed cleanly: a crash).
func Inject(name string) {
	once.Do(load)
	p, ok := armed[name]
	if !ok || rand.Float64() >= p {
		return
	}
	fmt.Fprintf(os.Stderr, "blobgw: failpoint %s fired: SIGKILL\n", name)
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way
}
