package robustness

import (
	"flag"
	"testing"
	"time"
)

var (
	fpDuration = flag.Duration("robustness.failpoints-duration", 20*time.Second,
		"TestLinearizableFailpoints: how long the clients run")
	fpSpec = flag.String("robustness.failpoints", "after-stage=kill:0.002,after-commit=kill:0.0005,collector-claim=kill:0.02",
		"TestLinearizableFailpoints: BLOBGW_FAILPOINTS of the replicas (internal/failpoint)")
)

// TestLinearizableFailpoints is the history check with blobgw built with
// -tags failpoints: each replica SIGKILLs itself at random after a body's
// bytes are in the backend but before their commit (after-stage), after a
// transaction's COMMIT succeeded but before the caller heard of it
// (after-commit: the client gets no answer to a write that took effect),
// and in the collector between claiming entries and deleting their objects
// (collector-claim); a supervisor starts it again. The history must stay
// linearizable, and nothing acknowledged may be lost or leaked.
func TestLinearizableFailpoints(t *testing.T) {
	runLinearizable(t, scenario{duration: *fpDuration, failpoints: *fpSpec})
}

var (
	sigstopRun = flag.Bool("robustness.sigstop", false, "run TestLinearizableSIGSTOP (about 2 minutes)")
	allFaults  = flag.Bool("robustness.all-faults", false,
		"TestLinearizable adds the failpoints (-robustness.failpoints) and a SIGSTOP to its faults: every fault kind in one run")
)

// TestLinearizableSIGSTOP is the history check with one replica stopped
// (SIGSTOP) for longer than a lease term and its clients' timeouts while
// it has requests in flight, then resumed (SIGCONT): its stale requests
// complete against a store where leases were broken and taken and blobs
// rewritten meanwhile, and must neither break lease exclusivity nor
// overwrite what they were conditioned against. Behind
// -robustness.sigstop, since the stop alone takes 21 s.
func TestLinearizableSIGSTOP(t *testing.T) {
	if !*sigstopRun {
		t.Skip("-robustness.sigstop runs it")
	}
	runLinearizable(t, scenario{duration: 50 * time.Second, sigstop: true})
}
