package robustness

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/jackc/pgx/v5"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/appendblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"

	"github.com/blobgw/blobgw/backends"
	"github.com/blobgw/blobgw/backends/s3"
	"github.com/blobgw/blobgw/backends/s3/miniotest"
	"github.com/blobgw/blobgw/internal/config"
	"github.com/blobgw/blobgw/internal/testproc"
	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/dbopen"
	"github.com/blobgw/blobgw/leasedb/pgtest"
)

var (
	duration = flag.Duration("robustness.duration", 40*time.Second, "how long the clients run (faults included); e.g. 30m for a long run")
	nClients = flag.Int("robustness.clients", 16, "concurrent azblob clients")
)

func TestMain(m *testing.M) {
	flag.Parse()
	miniotest.Managed()
	testproc.Main(m, miniotest.StopShared)
}

const (
	containerName = "robust"
	prefix        = "r/"
	nBlock        = 12 // block blobs r/b00..
	nAppend       = 6  // append blobs r/a00..
	intentTTL     = 10 * time.Second
)

func blobNames() []string {
	var names []string
	for i := range nBlock {
		names = append(names, fmt.Sprintf("%sb%02d", prefix, i))
	}
	for i := range nAppend {
		names = append(names, fmt.Sprintf("%sa%02d", prefix, i))
	}
	return names
}

func isAppend(name string) bool { return strings.HasPrefix(name, prefix+"a") }

// replica is one `blobgw serve` process on a fixed address, so that it can
// be killed and started again where the clients expect it.
type replica struct {
	t    *testing.T
	bin  string
	addr string
	args []string
	env  []string // more environment (BLOBGW_FAILPOINTS)
	dir  string

	mu       sync.Mutex
	n        int // starts so far, for the log file names
	proc     *testproc.Proc
	stopping bool
}

func (r *replica) start() error {
	r.mu.Lock()
	if r.stopping {
		r.mu.Unlock()
		return errors.New("stopping")
	}
	r.n++
	cmd := exec.Command(r.bin, append([]string{"serve", "--listen", r.addr, "--data-dir", filepath.Join(r.dir, "data"),
		"--log-level", "warn"}, r.args...)...)
	cmd.Env = append(append(os.Environ(), "BLOBGW_CONFIG="), r.env...)
	p, err := testproc.Start(cmd, filepath.Join(r.dir, fmt.Sprintf("serve.%d.log", r.n)), syscall.SIGKILL)
	if err != nil {
		r.mu.Unlock()
		return err
	}
	r.proc = p
	r.mu.Unlock()
	return p.WaitReady(time.Now().Add(30*time.Second), func() error {
		c, err := net.Dial("tcp", r.addr)
		if err == nil {
			c.Close()
		}
		return err
	})
}

func (r *replica) current() *testproc.Proc {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.proc
}

// kill is SIGKILL: requests in flight get a broken connection.
func (r *replica) kill() {
	p := r.current()
	p.Cmd.Process.Kill()
	<-p.Done()
}

// supervise starts the replica again whenever it exits (a kill, a
// failpoint), until stop; deaths counts the exits. A replica that cannot
// be started again fails the run through fail.
func (r *replica) supervise(deaths *atomic.Int64, fail func(error)) {
	go func() {
		for {
			<-r.current().Done()
			r.mu.Lock()
			stopping := r.stopping
			r.mu.Unlock()
			if stopping {
				return
			}
			deaths.Add(1)
			time.Sleep(500 * time.Millisecond)
			// Start-up may meet a cut or a failpoint itself (serve
			// exits when its start-up transaction fails): try again.
			var err error
			for attempt := 0; attempt < 10; attempt++ {
				if err = r.start(); err == nil || err.Error() == "stopping" {
					break
				}
			}
			if err != nil && err.Error() != "stopping" {
				fail(fmt.Errorf("restart replica %s: %v", r.addr, err))
				return
			}
		}
	}()
}

func (r *replica) stop() {
	r.mu.Lock()
	r.stopping = true
	p := r.proc
	r.mu.Unlock()
	if p != nil {
		p.Stop("blobgw serve", testproc.Step{Sig: syscall.SIGTERM, Wait: 10 * time.Second},
			testproc.Step{Sig: syscall.SIGKILL, Wait: 10 * time.Second})
	}
}

// recorder collects the history.
type recorder struct {
	t0      time.Time
	mu      sync.Mutex
	ops     []porcupine.Operation
	unknown []int // indexes of ops whose outcome is unknown
	kinds   map[string]int
	clients atomic.Int64
}

func (r *recorder) now() int64 { return time.Since(r.t0).Nanoseconds() }

func (r *recorder) add(client int, in Input, out Output, call, ret int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if out.NotSent {
		r.kinds["not sent"]++
		return
	}
	if out.Unknown {
		r.unknown = append(r.unknown, len(r.ops))
	}
	r.ops = append(r.ops, porcupine.Operation{ClientId: client, Input: in, Output: out, Call: call, Return: ret})
	if in.Kind == List {
		return // counted once per listing by list
	}
	k := string(in.Kind)
	switch {
	case out.Unknown:
		k += " ?"
	case out.OK:
		k += " ok"
	default:
		k += " refused"
	}
	r.kinds[k]++
}

// classify turns an SDK error into an outcome: a 4xx with an error code (or
// a 304) is a definite refusal; anything else may or may not have taken
// effect.
func classify(err error) Output {
	if err == nil {
		return Output{OK: true}
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		// Nothing was sent: a replica being started again after a kill
		// refuses connections. Counting these as possibly applied would
		// fill the history with open-ended operations.
		return Output{NotSent: true}
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		if re.StatusCode == http.StatusNotModified {
			return Output{Code: "NotModified"}
		}
		if re.StatusCode >= 400 && re.StatusCode < 500 && re.ErrorCode != "" {
			return Output{Code: re.ErrorCode}
		}
	}
	return Output{Unknown: true}
}

// etagOf is the ETag without quotes: headers carry it quoted, a listing's
// Etag element bare. The quoted form goes back in If-Match and
// If-None-Match (quote).
func etagOf(e *azcore.ETag) string {
	if e == nil {
		return ""
	}
	return strings.Trim(string(*e), `"`)
}

func quote(etag string) *azcore.ETag {
	if etag == "*" {
		return to.Ptr(azcore.ETagAny)
	}
	return to.Ptr(azcore.ETag(`"` + etag + `"`))
}

func leaseIDOf(client int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", client+1) }

type faults struct {
	commitCuts, otherCuts, kills, pgRestarts, stops atomic.Int64
}

// scenario is one robustness run's faults.
type scenario struct {
	duration time.Duration
	// cuts: connections between the gateways and Postgres cut at random
	// (most right after a COMMIT); kill: a replica SIGKILLed; pgRestart:
	// Postgres restarted in immediate mode (each at 3/10 and 6/10 of the
	// run, again every ten minutes).
	cuts, kill, pgRestart bool
	// failpoints: blobgw is built with -tags failpoints and the replicas
	// run with BLOBGW_FAILPOINTS set to it (internal/failpoint).
	failpoints string
	// sigstop: a replica SIGSTOPped for longer than a lease term with
	// requests in flight, then SIGCONTed: what it had in flight goes on
	// against a store that moved on meanwhile.
	sigstop bool
}

// stopFor is how long a sigstop scenario keeps its replica stopped: longer
// than the 15 s lease term and the clients' request timeout (opCtx).
const stopFor = 21 * time.Second

// TestLinearizable is the run with connection cuts, a replica kill and a
// Postgres restart together.
func TestLinearizable(t *testing.T) {
	sc := scenario{duration: *duration, cuts: true, kill: true, pgRestart: true}
	if *allFaults {
		sc.failpoints, sc.sigstop = *fpSpec, true
	}
	runLinearizable(t, sc)
}

func runLinearizable(t *testing.T, sc scenario) {
	if testing.Short() {
		t.Skip("robustness run: skipped with -short")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "blobgw")
	build := []string{"build", "-o", bin}
	if sc.failpoints != "" {
		build = append(build, "-tags", "failpoints")
	}
	if out, err := exec.Command("go", append(build, "../cmd/blobgw")...).CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	// A private Postgres, since the run restarts it.
	pg := pgtest.PrivateServer(t)
	dsn := pg.NewDatabase(t)
	ctx := context.Background()
	{
		// An immediate restart must not lose acknowledged commits: the
		// server's default here is synchronous_commit=off.
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		var db string
		if err = conn.QueryRow(ctx, `SELECT current_database()`).Scan(&db); err == nil {
			_, err = conn.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{db}.Sanitize()+` SET synchronous_commit = on`)
		}
		conn.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
	}
	s3cfg := miniotest.NewBucket(t)
	s3cfg.Prefix = "gw/"
	common := []string{"--backend", "s3", "--s3-endpoint", s3cfg.Endpoint, "--s3-bucket", s3cfg.Bucket,
		"--s3-region", s3cfg.Region, "--s3-access-key", s3cfg.AccessKey, "--s3-secret-key", s3cfg.SecretKey,
		"--s3-path-style", "--s3-prefix", s3cfg.Prefix, "--gc-grace", "1s", "--gc-interval", "1s",
		"--intent-ttl", intentTTL.String()}

	var proxies []*pgtest.Proxy
	var replicas []*replica
	var clients []*azblob.Client
	cred, err := azblob.NewSharedKeyCredential(config.DevAccountName, config.DevAccountKey)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		px := pgtest.StartProxy(t, dsn)
		proxies = append(proxies, px)
		port, err := testproc.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		rdir := filepath.Join(dir, "replica"+strconv.Itoa(i))
		os.MkdirAll(rdir, 0o755)
		r := &replica{t: t, bin: bin, addr: "127.0.0.1:" + strconv.Itoa(port), dir: rdir,
			args: append([]string{"--metadata", px.DSN(dsn)}, common...)}
		if sc.failpoints != "" {
			// after-stage means a Put Blob's bytes are in the backend and
			// not committed: with small bodies inline (the default) there
			// would be none, so the failpoint runs keep every body in the
			// backend; the plain runs take the inline path.
			r.env = []string{"BLOBGW_FAILPOINTS=" + sc.failpoints, "BLOBGW_INLINE_MAX_BYTES=0"}
		}
		if err := r.start(); err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
		replicas = append(replicas, r)
		t.Cleanup(func() {
			r.stop()
			if t.Failed() {
				for n := 1; n <= r.n; n++ {
					b, _ := os.ReadFile(filepath.Join(r.dir, fmt.Sprintf("serve.%d.log", n)))
					t.Logf("replica %d (start %d) log tail:\n%s", i, n, testproc.Tail(b))
				}
			}
		})
		c, err := azblob.NewClientWithSharedKeyCredential("http://"+r.addr+"/"+config.DevAccountName+"/", cred,
			&azblob.ClientOptions{ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}})
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	if _, err := clients[0].CreateContainer(ctx, containerName, nil); err != nil {
		t.Fatal(err)
	}

	rec := &recorder{t0: time.Now(), kinds: map[string]int{}}
	rec.clients.Store(int64(*nClients))
	names := blobNames()
	deadline := time.Now().Add(sc.duration)
	var fl faults
	var faultErr error
	var faultMu sync.Mutex
	fail := func(err error) {
		faultMu.Lock()
		if faultErr == nil {
			faultErr = err
		}
		faultMu.Unlock()
	}
	var deaths atomic.Int64
	for _, r := range replicas {
		r.supervise(&deaths, fail)
	}
	// The clients stop at stopAt: the run's duration, extended in a
	// failpoint run while none has fired yet (extendUntilFired), so
	// that a run slowed by a loaded machine still carries the fault it
	// promises rather than passing without it.
	var stopAt atomic.Int64
	stopAt.Store(deadline.UnixNano())
	running := func() bool { return time.Now().UnixNano() < stopAt.Load() }
	var wg sync.WaitGroup
	var extended time.Duration
	if sc.failpoints != "" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			extended = extendUntilFired(replicas, &stopAt, deadline.Add(2*sc.duration))
		}()
	}
	for w := range *nClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wk := &worker{id: w, cid: w, rng: rand.New(rand.NewSource(int64(w) + time.Now().UnixNano())),
				clients: clients, rec: rec, names: names, seen: map[string]string{}, size: map[string]int64{}}
			for running() {
				wk.one()
			}
		}()
	}
	// The operator CLI is one more client: it breaks leases straight in the
	// store, racing the gateways' lease operations.
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewSource(time.Now().UnixNano()))
		cid := int(rec.clients.Add(1))
		for running() {
			name := names[rng.Intn(len(names))]
			in := Input{Kind: CLI, Blob: name, AppendPos: -1}
			call := rec.now()
			cmd := exec.Command(bin, "lease", "break", containerName, name, "--period", "0", "--metadata", dsn)
			cmd.Env = append(os.Environ(), "BLOBGW_CONFIG=")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var out Output
			var ee *exec.ExitError
			switch {
			case err == nil:
				out.OK = true
			case errors.As(err, &ee) && ee.ExitCode() == 1 && strings.Contains(stderr.String(), "has no lease"):
				out.Code = "LeaseNotPresentWithLeaseOperation"
			case errors.As(err, &ee) && ee.ExitCode() == 1 && strings.Contains(stderr.String(), "not found"):
				out.Code = "BlobNotFound"
			default:
				out.Unknown = true
			}
			rec.add(cid, in, out, call, rec.now())
			if out.Unknown {
				cid = int(rec.clients.Add(1))
			}
			time.Sleep(time.Duration(100+rng.Intn(300)) * time.Millisecond)
		}
	}()
	// Faults: connection cuts between each gateway and Postgres (most right
	// after a COMMIT reached the server), one replica SIGKILLed and
	// restarted, one Postgres immediate restart; in long runs again every
	// ten minutes.
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewSource(time.Now().UnixNano()))
		start := time.Now()
		nextKill := start.Add(sc.duration * 3 / 10)
		nextPG := start.Add(sc.duration * 6 / 10)
		for time.Now().Before(deadline) {
			time.Sleep(time.Duration(500+rng.Intn(1000)) * time.Millisecond)
			px := proxies[rng.Intn(len(proxies))]
			// Count the cuts made, not the queries matched.
			counted := func(cut func(pgtest.Query) pgtest.Cut, n *atomic.Int64) func(pgtest.Query) pgtest.Cut {
				return func(q pgtest.Query) pgtest.Cut {
					c := cut(q)
					if c != pgtest.Pass {
						n.Add(1)
					}
					return c
				}
			}
			switch {
			case !sc.cuts:
			case rng.Intn(10) < 7:
				px.SetCut(counted(pgtest.CutOnce(pgtest.Query.IsCommit, pgtest.CutAfterReply), &fl.commitCuts))
			default:
				skip := rng.Intn(5)
				px.SetCut(counted(pgtest.CutOnce(func(pgtest.Query) bool {
					skip--
					return skip < 0
				}, pgtest.CutBefore), &fl.otherCuts))
			}
			if now := time.Now(); sc.kill && now.After(nextKill) && now.Before(deadline) {
				// The supervisor starts it again.
				replicas[rng.Intn(len(replicas))].kill()
				fl.kills.Add(1)
				nextKill = nextKill.Add(10 * time.Minute)
			}
			if now := time.Now(); sc.pgRestart && now.After(nextPG) && now.Before(deadline) {
				if err := pg.Restart(); err != nil {
					fail(err)
					return
				}
				fl.pgRestarts.Add(1)
				nextPG = nextPG.Add(10 * time.Minute)
			}
		}
	}()
	if sc.sigstop {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(time.Now().UnixNano()))
			time.Sleep(time.Until(rec.t0.Add(sc.duration * 45 / 100)))
			if time.Until(deadline) < stopFor {
				fail(fmt.Errorf("a %v run is too short for a %v SIGSTOP", sc.duration, stopFor))
				return
			}
			pid := replicas[rng.Intn(len(replicas))].current().Cmd.Process.Pid
			if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
				fail(err)
				return
			}
			fl.stops.Add(1)
			time.Sleep(stopFor)
			syscall.Kill(pid, syscall.SIGCONT)
		}()
	}
	wg.Wait()
	for _, px := range proxies {
		px.SetCut(nil)
	}
	faultMu.Lock()
	err = faultErr
	faultMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	runTime := time.Since(rec.t0)
	// Wait for replicas being started again (after a kill or a
	// failpoint), so that the final reads reach all three.
	for _, r := range replicas {
		for i := 0; i < 300; i++ {
			if c, err := net.Dial("tcp", r.addr); err == nil {
				c.Close()
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	var fired map[string]int
	if sc.failpoints != "" {
		fired = firedFailpoints(replicas)
	}

	// Settle: every request has returned and nothing is cut any more, so
	// whatever an ambiguous request did has happened by now; its window
	// closes here, before the final reads that settle it.
	time.Sleep(3 * time.Second)
	settled := rec.now()
	for _, i := range rec.unknown {
		rec.ops[i].Return = settled
	}
	final := &worker{id: -1, cid: int(rec.clients.Add(1)), rng: rand.New(rand.NewSource(1)), clients: clients, rec: rec,
		names: names, seen: map[string]string{}, size: map[string]int64{}}
	for i, name := range names {
		for attempt := 0; ; attempt++ {
			if final.get(name, clients[i%3], false) || attempt > 20 {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	final.list(clients[1])

	checkStart := time.Now()
	model := Model.ToModel()
	res, info := porcupine.CheckOperationsVerbose(model, rec.ops, 5*time.Minute)
	checkTime := time.Since(checkStart)
	var kinds []string
	requests := 0
	for k, n := range rec.kinds {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
		if k != "not sent" {
			requests += n
		}
	}
	sort.Strings(kinds)
	t.Logf("%d operations (%d history entries: a listing is one per blob) in %v (%.0f/s), %d ambiguous; faults: %d cuts after COMMIT, %d other cuts, %d replica kills, %d Postgres restarts, %d SIGSTOPs; porcupine: %s in %v",
		requests, len(rec.ops), runTime.Round(time.Millisecond), float64(requests)/runTime.Seconds(), len(rec.unknown),
		fl.commitCuts.Load(), fl.otherCuts.Load(), fl.kills.Load(), fl.pgRestarts.Load(), fl.stops.Load(), res, checkTime.Round(time.Millisecond))
	t.Logf("per kind: %s", strings.Join(kinds, " "))
	if sc.failpoints != "" {
		t.Logf("failpoints %s: fired %v; replica exits %d; clients ran %v past the run's duration waiting for a first fire",
			sc.failpoints, fired, deaths.Load(), extended)
	}
	if res == porcupine.Unknown {
		t.Fatalf("porcupine gave up after %v (history too hard to check)", checkTime)
	}
	if res != porcupine.Ok {
		html, blobs, err := writeViolation("out", rec.ops, info)
		if err != nil {
			t.Errorf("writing the violation: %v", err)
		}
		for blob, txt := range blobs {
			t.Errorf("blob %s is not linearizable: its history is in %s", blob, txt)
		}
		t.Fatalf("porcupine: %s; history visualization: %s", res, html)
	}
	if sc.failpoints != "" {
		total := 0
		for _, n := range fired {
			total += n
		}
		if total == 0 {
			t.Errorf("no failpoint fired (%s)", sc.failpoints)
		}
	}
	if sc.duration >= 30*time.Second && sc.cuts && sc.kill && sc.pgRestart {
		// The default run must carry the load and the faults it promises.
		if fl.commitCuts.Load() == 0 || fl.kills.Load() == 0 || fl.pgRestarts.Load() == 0 {
			t.Errorf("a fault did not happen: %d commit cuts, %d kills, %d Postgres restarts", fl.commitCuts.Load(), fl.kills.Load(), fl.pgRestarts.Load())
		}
		if requests < 5000 {
			t.Errorf("%d operations in %v, want at least 5,000", requests, runTime)
		}
		// A check passes trivially on a history of unknowns: every kind
		// must have succeeded and been refused, and few answers be lost.
		for _, k := range []Kind{Put, Get, Delete, Append, Acquire, Renew, Release, Break, CLI} {
			if rec.kinds[string(k)+" ok"] == 0 || rec.kinds[string(k)+" refused"] == 0 {
				t.Errorf("%s: %d succeeded, %d refused; want both", k, rec.kinds[string(k)+" ok"], rec.kinds[string(k)+" refused"])
			}
		}
		if len(rec.unknown)*10 > requests {
			t.Errorf("%d of %d operations ambiguous, want under 10%%", len(rec.unknown), requests)
		}
	}

	checkStorage(t, ctx, dsn, s3cfg, bin, common)
}

// writeViolation writes porcupine's visualization of a failed check under
// dir and, per blob whose history is not linearizable, a text file with
// that history and the shortest failing prefix (by call time), which ends
// at the operation no linearization explains. It returns the absolute
// paths.
func writeViolation(dir string, ops []porcupine.Operation, info porcupine.LinearizationInfo) (html string, blobs map[string]string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	html, err = filepath.Abs(filepath.Join(dir, fmt.Sprintf("history-%s.html", time.Now().Format("20060102-150405.000"))))
	if err != nil {
		return "", nil, err
	}
	model := Model.ToModel()
	if err := porcupine.VisualizePath(model, info, html); err != nil {
		return html, nil, err
	}
	whole := porcupine.NondeterministicModel{Init: Model.Init, Step: Model.Step, Equal: Model.Equal}
	blobs = map[string]string{}
	for _, part := range Model.Partition(ops) {
		if porcupine.CheckOperations(whole.ToModel(), part) {
			continue
		}
		sort.Slice(part, func(i, j int) bool { return part[i].Call < part[j].Call })
		lo, hi := 1, len(part)
		for lo < hi {
			if mid := (lo + hi) / 2; porcupine.CheckOperations(whole.ToModel(), part[:mid]) {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		var b strings.Builder
		fmt.Fprintf(&b, "shortest failing prefix: %d operations, ending with\n  %s\n\ncall (s)     return (s)   client\n",
			lo, model.DescribeOperation(part[lo-1].Input, part[lo-1].Output))
		for _, op := range part {
			fmt.Fprintf(&b, "%12.6f %12.6f c%-3d %s\n", float64(op.Call)/1e9, float64(op.Return)/1e9, op.ClientId, model.DescribeOperation(op.Input, op.Output))
		}
		blob := part[0].Input.(Input).Blob
		txt := strings.TrimSuffix(html, ".html") + "-" + strings.ReplaceAll(blob, "/", "_") + ".txt"
		if err := os.WriteFile(txt, []byte(b.String()), 0o644); err != nil {
			return html, blobs, err
		}
		blobs[blob] = txt
	}
	return html, blobs, nil
}

// checkStorage checks the store against the backend: every blob row's
// objects exist; after the grace period, the intent TTL and a collection
// pass (`blobgw gc`), no object is left that no row references and no
// collection entry will delete.
func checkStorage(t *testing.T, ctx context.Context, dsn string, s3cfg s3.Config, bin string, common []string) {
	st, err := dbopen.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	db := &leasedb.DB{Store: st}
	referenced := map[string]bool{}
	rows := 0
	for marker := ""; ; {
		res, err := db.ListBlobs(ctx, config.DevAccountName, containerName, "", "", marker, 5000)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range res.Items {
			if it.Blob == nil {
				continue
			}
			rows++
			for _, k := range it.Blob.Keys() {
				referenced[k] = true
			}
		}
		if marker = res.Next; marker == "" {
			break
		}
	}
	backend, err := s3.New(ctx, s3cfg)
	if err != nil {
		t.Fatal(err)
	}
	objects := func() map[string]bool {
		m := map[string]bool{}
		if err := backend.List(ctx, "", func(o backends.ObjectInfo) error {
			m[o.Key] = true
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return m
	}
	have := objects()
	missing := 0
	for k := range referenced {
		if !have[k] {
			missing++
			t.Errorf("a blob row references object %s, missing from the backend", k)
		}
	}
	time.Sleep(intentTTL + 2*time.Second)
	gc := exec.Command(bin, append([]string{"gc", "--metadata", dsn, "--data-dir", t.TempDir()}, common...)...)
	gc.Env = append(os.Environ(), "BLOBGW_CONFIG=")
	if out, err := gc.CombinedOutput(); err != nil {
		t.Fatalf("blobgw gc: %v\n%s", err, out)
	}
	queued := map[string]bool{}
	keys, err := st.CollectionKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		queued[k] = true
	}
	var leaked []string
	pending := 0
	for k := range objects() {
		switch {
		case referenced[k]:
		case queued[k]:
			// Claimed by the killed replica's collector: another claims
			// it after ten minutes.
			pending++
		default:
			leaked = append(leaked, k)
		}
	}
	t.Logf("storage: %d blob rows reference %d objects, %d missing; after gc %d unreferenced objects still queued for collection, %d neither referenced nor queued",
		rows, len(referenced), missing, pending, len(leaked))
	if len(leaked) > 0 {
		sort.Strings(leaked)
		t.Errorf("%d objects neither referenced nor queued for collection: %v", len(leaked), leaked[:min(10, len(leaked))])
	}
}

// worker is one client: it picks a blob, an operation and a replica at
// random and records the call.
type worker struct {
	id, cid int
	rng     *rand.Rand
	clients []*azblob.Client
	rec     *recorder
	names   []string
	seq     int
	seen    map[string]string // last ETag this client saw per blob
	size    map[string]int64  // last length this client saw per append blob
	held    string            // the blob this client last acquired a lease on ("" after release)
}

func (w *worker) value() string {
	w.seq++
	return fmt.Sprintf("w%02d.%d;", w.id, w.seq)
}

func (w *worker) record(in Input, out Output, call int64) {
	w.rec.add(w.cid, in, out, call, w.rec.now())
	if out.Unknown {
		// Its window stays open, so the client continues as a new one.
		w.cid = int(w.rec.clients.Add(1))
	}
}

func opCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 20*time.Second)
}

func (w *worker) one() {
	name := w.names[w.rng.Intn(len(w.names))]
	c := w.clients[w.rng.Intn(len(w.clients))]
	r := w.rng.Intn(100)
	// Lease operations are a third of the mix, weighted towards breaking
	// and releasing, so that writes meet every lease state and are not
	// mostly refused by a lease someone keeps.
	switch {
	case r < 25:
		w.put(name, c)
	case r < 50 && isAppend(name):
		w.appendBlock(name, c)
	case r < 60:
		w.get(name, c, w.rng.Intn(2) == 0)
	case r < 66:
		w.del(name, c)
	case r < 72:
		w.leaseOp(name, c, Acquire)
	case r < 75:
		w.leaseOp(w.heldOr(name), c, Renew)
	case r < 80:
		w.leaseOp(w.heldOr(name), c, Release)
	case r < 88:
		w.leaseOp(name, c, Break)
	case r < 91:
		w.list(c)
	default:
		w.get(name, c, false)
	}
}

// heldOr is mostly the blob this client holds a lease on, so that Renew
// and Release meet their own lease often enough to succeed in every run
// (someone else's break may have ended it meanwhile), and otherwise name.
func (w *worker) heldOr(name string) string {
	if w.held != "" && w.rng.Intn(4) != 0 {
		return w.held
	}
	return name
}

func (w *worker) conditions(in *Input) *blob.AccessConditions {
	ac := &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{}, LeaseAccessConditions: &blob.LeaseAccessConditions{}}
	if in.IfMatch != "" {
		ac.ModifiedAccessConditions.IfMatch = quote(in.IfMatch)
	}
	if in.IfNoneMatch != "" {
		ac.ModifiedAccessConditions.IfNoneMatch = quote(in.IfNoneMatch)
	}
	if in.LeaseID != "" {
		ac.LeaseAccessConditions.LeaseID = to.Ptr(in.LeaseID)
	}
	return ac
}

// writeConds picks the preconditions of a write: none, If-Match with the
// last ETag this client saw, If-None-Match: * (Put only), and this
// client's lease id.
func (w *worker) writeConds(in *Input, put bool) {
	switch r := w.rng.Intn(4); {
	case r == 0 && w.seen[in.Blob] != "":
		in.IfMatch = w.seen[in.Blob]
	case r == 1 && put:
		in.IfNoneMatch = "*"
	}
	if w.rng.Intn(3) == 0 {
		in.LeaseID = leaseIDOf(w.id)
	}
}

func (w *worker) put(name string, c *azblob.Client) {
	in := Input{Kind: Put, Blob: name, AppendPos: -1}
	if !isAppend(name) {
		in.Value = w.value()
	}
	w.writeConds(&in, true)
	ctx, cancel := opCtx()
	defer cancel()
	cc := c.ServiceClient().NewContainerClient(containerName)
	call := w.rec.now()
	var etag *azcore.ETag
	var err error
	if isAppend(name) {
		var resp appendblob.CreateResponse
		resp, err = cc.NewAppendBlobClient(name).Create(ctx, &appendblob.CreateOptions{AccessConditions: w.conditions(&in)})
		etag = resp.ETag
	} else {
		var resp blockblob.UploadResponse
		resp, err = cc.NewBlockBlobClient(name).Upload(ctx, streaming.NopCloser(strings.NewReader(in.Value)),
			&blockblob.UploadOptions{AccessConditions: w.conditions(&in)})
		etag = resp.ETag
	}
	out := classify(err)
	if out.OK {
		out.ETag = etagOf(etag)
		w.seen[name] = out.ETag
		w.size[name] = int64(len(in.Value))
	}
	w.record(in, out, call)
}

func (w *worker) appendBlock(name string, c *azblob.Client) {
	in := Input{Kind: Append, Blob: name, Value: w.value(), AppendPos: -1}
	if w.rng.Intn(3) > 0 {
		in.AppendPos = w.size[name]
	}
	if w.rng.Intn(3) == 0 {
		in.LeaseID = leaseIDOf(w.id)
	}
	ctx, cancel := opCtx()
	defer cancel()
	opts := &appendblob.AppendBlockOptions{AccessConditions: w.conditions(&in)}
	if in.AppendPos >= 0 {
		opts.AppendPositionAccessConditions = &appendblob.AppendPositionAccessConditions{AppendPosition: to.Ptr(in.AppendPos)}
	}
	call := w.rec.now()
	resp, err := c.ServiceClient().NewContainerClient(containerName).NewAppendBlobClient(name).AppendBlock(ctx,
		streaming.NopCloser(strings.NewReader(in.Value)), opts)
	out := classify(err)
	if out.OK {
		out.ETag = etagOf(resp.ETag)
		w.seen[name] = out.ETag
		if resp.BlobAppendOffset != nil {
			if off, err := strconv.ParseInt(*resp.BlobAppendOffset, 10, 64); err == nil {
				w.size[name] = off + int64(len(in.Value))
			}
		}
	} else if out.Code == "AppendPositionConditionNotMet" {
		delete(w.size, name)
	}
	w.record(in, out, call)
}

// get reads the blob (with If-None-Match: the last ETag this client saw,
// when ifNoneMatch) and reports whether it got an answer; a read without
// one changes nothing and is left out of the history.
func (w *worker) get(name string, c *azblob.Client, ifNoneMatch bool) bool {
	in := Input{Kind: Get, Blob: name, AppendPos: -1}
	if ifNoneMatch {
		in.IfNoneMatch = w.seen[name]
	}
	ctx, cancel := opCtx()
	defer cancel()
	call := w.rec.now()
	resp, err := c.ServiceClient().NewContainerClient(containerName).NewBlobClient(name).DownloadStream(ctx,
		&blob.DownloadStreamOptions{AccessConditions: w.conditions(&in)})
	out := classify(err)
	if out.OK && resp.Body == nil {
		// The SDK answers a 304 to If-None-Match with no error and no body.
		out = Output{Code: "NotModified"}
	}
	if out.OK {
		body, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		if rerr != nil {
			return false
		}
		out.Content, out.ETag = string(body), etagOf(resp.ETag)
		w.seen[name] = out.ETag
		w.size[name] = int64(len(body))
	}
	if out.Unknown || out.NotSent {
		return false
	}
	w.rec.add(w.cid, in, out, call, w.rec.now())
	return true
}

func (w *worker) del(name string, c *azblob.Client) {
	in := Input{Kind: Delete, Blob: name, AppendPos: -1}
	w.writeConds(&in, false)
	ctx, cancel := opCtx()
	defer cancel()
	call := w.rec.now()
	_, err := c.ServiceClient().NewContainerClient(containerName).NewBlobClient(name).Delete(ctx,
		&blob.DeleteOptions{AccessConditions: w.conditions(&in)})
	w.record(in, classify(err), call)
}

func (w *worker) leaseOp(name string, c *azblob.Client, kind Kind) {
	in := Input{Kind: kind, Blob: name, AppendPos: -1}
	if kind != Break {
		in.LeaseID = leaseIDOf(w.id)
	}
	id := leaseIDOf(w.id)
	lc, err := lease.NewBlobClient(c.ServiceClient().NewContainerClient(containerName).NewBlobClient(name), &lease.BlobClientOptions{LeaseID: &id})
	if err != nil {
		panic(err)
	}
	ctx, cancel := opCtx()
	defer cancel()
	call := w.rec.now()
	switch kind {
	case Acquire:
		_, err = lc.AcquireLease(ctx, -1, nil)
	case Renew:
		_, err = lc.RenewLease(ctx, nil)
	case Release:
		_, err = lc.ReleaseLease(ctx, nil)
	case Break:
		_, err = lc.BreakLease(ctx, &lease.BlobBreakOptions{BreakPeriod: to.Ptr(int32(0))})
	}
	out := classify(err)
	switch {
	case kind == Acquire && out.OK:
		w.held = name
	case kind == Release && out.OK && name == w.held:
		w.held = ""
	}
	w.record(in, out, call)
}

// list lists the run's prefix and records one List observation per blob,
// each with the listing's call and return: a listing that starts after a
// write was acknowledged shows it, on any replica.
func (w *worker) list(c *azblob.Client) {
	ctx, cancel := opCtx()
	defer cancel()
	call := w.rec.now()
	listed := map[string]string{}
	pager := c.ServiceClient().NewContainerClient(containerName).NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: to.Ptr(prefix)})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return // a read without an answer changes nothing
		}
		for _, b := range page.Segment.BlobItems {
			listed[*b.Name] = etagOf(b.Properties.ETag)
		}
	}
	ret := w.rec.now()
	w.rec.mu.Lock()
	w.rec.kinds["list ok"]++
	w.rec.mu.Unlock()
	for _, name := range w.names {
		etag, ok := listed[name]
		w.rec.add(w.cid, Input{Kind: List, Blob: name, AppendPos: -1}, Output{OK: true, Listed: ok, ETag: etag}, call, ret)
	}
}

// firedFailpoints counts the failpoints fired in the replicas' logs so far,
// by name (internal/failpoint writes "blobgw: failpoint NAME fired" before
// its SIGKILL).
func firedFailpoints(replicas []*replica) map[string]int {
	fired := map[string]int{}
	for _, r := range replicas {
		r.mu.Lock()
		n := r.n
		r.mu.Unlock()
		for i := 1; i <= n; i++ {
			b, _ := os.ReadFile(filepath.Join(r.dir, fmt.Sprintf("serve.%d.log", i)))
			for _, line := range strings.Split(string(b), "\n") {
				if name, ok := strings.CutPrefix(line, "blobgw: failpoint "); ok {
					name, _, _ = strings.Cut(name, " ")
					fired[name]++
				}
			}
		}
	}
	return fired
}

// extendUntilFired keeps a failpoint run's clients going while no
// failpoint has fired: a second before they would stop (stopAt) it looks at
// the replicas' logs and, finding no fire, moves stopAt 5 s on, up to
// limit. The failpoints fire at random with a probability per pass, so
// their count follows the run's load: on a loaded machine a 20 s run
// passed them so few times that now and then none fired.
// It returns how far stopAt moved.
func extendUntilFired(replicas []*replica, stopAt *atomic.Int64, limit time.Time) time.Duration {
	first := stopAt.Load()
	for {
		time.Sleep(time.Until(time.Unix(0, stopAt.Load()).Add(-time.Second)))
		if len(firedFailpoints(replicas)) > 0 || !time.Now().Add(time.Second).Before(limit) {
			return time.Duration(stopAt.Load() - first)
		}
		stopAt.Add(int64(5 * time.Second))
	}
}
