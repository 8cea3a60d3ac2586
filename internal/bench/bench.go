// Package bench drives Blob REST endpoints (a blobgw, several replicas of
// one, Azurite, Azure itself) with the Azure SDK for Go and measures
// throughput, latency and errors per workload: the engine of `blobgw bench`.
//
// It only ever talks to an endpoint through the SDK, as any client would;
// it never reaches into a gateway's store or backend, so the same run
// measures a blobgw and an emulator alike. Every request is sent with the
// SDK's retries off, so each failure is counted by its error code instead
// of being hidden by a retry. A run stops issuing requests at its deadline
// but never cancels one in flight: a canceled write has an unknown
// outcome, and rmw-hot could then not prove that no update was lost.
package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
)

// Workloads are the workload names, in the order a run takes them.
var Workloads = []string{
	"put-small", "put-small-ifmatch", "get-small", "put-large", "get-large",
	"staged", "rmw-hot", "lease-cycle", "list", "tags",
}

// Endpoint is one service URL with the credentials to sign for it.
type Endpoint struct {
	// URL is the service URL, e.g. http://127.0.0.1:10000/devstoreaccount1/.
	URL string
	// Account and Key sign requests with Shared Key; or
	Account, Key string
	// ConnectionString, when set, replaces URL, Account and Key.
	ConnectionString string
}

// Set is a list of endpoints that serve one storage account (replicas
// behind no load balancer): clients are spread over them round robin.
type Set struct {
	Name      string
	Endpoints []Endpoint
}

// Config is one run.
type Config struct {
	Clients  int
	Duration time.Duration
	// SmallSize is the body of put-small, put-small-ifmatch, get-small and
	// rmw-hot; LargeSize of put-large, get-large and staged, which puts it
	// in blocks of BlockSize.
	SmallSize, LargeSize, BlockSize int64
	// ListBlobs is how many blobs the list workload prepares; PageSize is
	// the maxresults of each List Blobs page.
	ListBlobs, PageSize int
	// Rounds runs every workload this many times on each set, in an order
	// that alternates between rounds (A B, B A, ...), so slow drift of a
	// shared machine is shared by both sides; results are summed.
	Rounds int
	// Keep leaves the bench containers in place.
	Keep bool
	// Progress receives the live progress; Terminal rewrites one line.
	Progress io.Writer
	Terminal bool
	// Hook, if set, is called right before the timed phase of a workload
	// on a set (after its preparation) and returns what to call right after
	// it; that may add figures to Result.Extra (CPU time per operation of
	// the server processes, say).
	Hook func(set, workload string) func(*Result)
}

func (c *Config) defaults() {
	if c.Clients <= 0 {
		c.Clients = 8
	}
	if c.Duration <= 0 {
		c.Duration = 10 * time.Second
	}
	if c.SmallSize <= 0 {
		c.SmallSize = 4 << 10
	}
	if c.LargeSize <= 0 {
		c.LargeSize = 64 << 20
	}
	if c.BlockSize <= 0 {
		c.BlockSize = 4 << 20
	}
	if c.ListBlobs <= 0 {
		c.ListBlobs = 5000
	}
	if c.PageSize <= 0 {
		c.PageSize = 1000
	}
	if c.Rounds <= 0 {
		c.Rounds = 1
	}
}

// Result is one workload on one set.
type Result struct {
	Workload  string   `json:"workload"`
	Set       string   `json:"set"`
	Endpoints []string `json:"endpoints"`
	Clients   int      `json:"clients"`
	Seconds   float64  `json:"seconds"`
	// Ops are successful operations (one Put Blob; a whole staged upload;
	// a whole acquire-renew-release cycle; one listed page; for rmw-hot
	// one successful increment however many attempts it took).
	Ops      int64   `json:"ops"`
	OpsPerS  float64 `json:"ops_per_s"`
	Bytes    int64   `json:"bytes"`
	MBPerS   float64 `json:"mb_per_s"`
	Requests int64   `json:"requests"`
	P50ms    float64 `json:"p50_ms"`
	P90ms    float64 `json:"p90_ms"`
	P99ms    float64 `json:"p99_ms"`
	// Errors counts failed operations by the service's error code (or
	// "transport" when no response came back).
	Errors map[string]int64 `json:"errors"`
	// Items is what list read (entries); rmw-hot's conflicts are the
	// attempts refused with 412 ConditionNotMet.
	Items        int64   `json:"items,omitempty"`
	Conflicts    int64   `json:"conflicts,omitempty"`
	ConflictRate float64 `json:"conflict_rate,omitempty"`
	// rmw-hot: the counter read back after the run, what it must be, and
	// whether it is (a Put whose outcome is unknown may or may not count).
	CounterFinal    *int64 `json:"counter_final,omitempty"`
	CounterExpected *int64 `json:"counter_expected,omitempty"`
	LostUpdates     *int64 `json:"lost_updates,omitempty"`
	// Extra holds figures a Hook added.
	Extra map[string]float64 `json:"extra,omitempty"`

	lat []time.Duration
}

// ErrorCount is the number of failed operations.
func (r *Result) ErrorCount() int64 {
	var n int64
	for _, v := range r.Errors {
		n += v
	}
	return n
}

// Ratio compares one workload between the sets: A over B.
type Ratio struct {
	Workload string  `json:"workload"`
	A        string  `json:"a"`
	B        string  `json:"b"`
	Ops      float64 `json:"ops_ratio"`
	MB       float64 `json:"mb_ratio,omitempty"`
}

// Report is a whole run.
type Report struct {
	Results []*Result `json:"results"`
	Ratios  []Ratio   `json:"ratios,omitempty"`
}

// Validate checks workload names.
func Validate(workloads []string) error {
	for _, w := range workloads {
		if !validWorkload(w) {
			return fmt.Errorf("unknown workload %q (one of %s)", w, strings.Join(Workloads, ", "))
		}
	}
	return nil
}

func validWorkload(w string) bool {
	for _, k := range Workloads {
		if k == w {
			return true
		}
	}
	return false
}

// Run runs the workloads on every set and, with two sets or more, the
// ratios of each set to the last one (the baseline).
func Run(ctx context.Context, cfg Config, workloads []string, sets []Set) (*Report, error) {
	cfg.defaults()
	if err := Validate(workloads); err != nil {
		return nil, err
	}
	if len(sets) == 0 {
		return nil, errors.New("bench: no endpoint set")
	}
	targets := make([]*target, len(sets))
	for i, s := range sets {
		t, err := newTarget(ctx, cfg, s)
		if err != nil {
			return nil, err
		}
		defer t.close(cfg.Keep)
		targets[i] = t
	}
	rep := &Report{}
	reverse := false
	for _, w := range workloads {
		sum := make([]*Result, len(targets))
		for round := 0; round < cfg.Rounds; round++ {
			// The order reverses from one round (and workload) to the
			// next, so no set always runs first or last.
			order := make([]int, len(targets))
			for i := range order {
				order[i] = i
				if reverse {
					order[i] = len(targets) - 1 - i
				}
			}
			reverse = !reverse
			for _, i := range order {
				if err := ctx.Err(); err != nil {
					return rep, err
				}
				r, err := targets[i].run(ctx, cfg, w)
				if err != nil {
					return rep, err
				}
				sum[i] = merge(sum[i], r)
			}
		}
		rep.Results = append(rep.Results, sum...)
		for i := 0; i+1 < len(sum); i++ {
			rep.Ratios = append(rep.Ratios, ratio(sum[i], sum[len(sum)-1]))
		}
	}
	return rep, nil
}

func ratio(a, b *Result) Ratio {
	r := Ratio{Workload: a.Workload, A: a.Set, B: b.Set}
	if b.OpsPerS > 0 {
		r.Ops = a.OpsPerS / b.OpsPerS
	}
	if b.MBPerS > 0 && a.Bytes > 0 {
		r.MB = a.MBPerS / b.MBPerS
	}
	return r
}

// merge adds r to sum (nil: r itself), recomputing rates and percentiles.
func merge(sum, r *Result) *Result {
	if sum == nil {
		return r
	}
	sum.Seconds += r.Seconds
	sum.Ops += r.Ops
	sum.Bytes += r.Bytes
	sum.Requests += r.Requests
	sum.Items += r.Items
	sum.Conflicts += r.Conflicts
	for k, v := range r.Errors {
		sum.Errors[k] += v
	}
	sum.lat = append(sum.lat, r.lat...)
	if r.LostUpdates != nil {
		lost := *r.LostUpdates
		if sum.LostUpdates != nil {
			lost += *sum.LostUpdates
		}
		sum.LostUpdates = &lost
		sum.CounterFinal, sum.CounterExpected = r.CounterFinal, r.CounterExpected
	}
	// Extra figures are per operation or per second: weigh by time.
	for k, v := range r.Extra {
		if sum.Extra == nil {
			sum.Extra = map[string]float64{}
		}
		sum.Extra[k] = (sum.Extra[k]*(sum.Seconds-r.Seconds) + v*r.Seconds) / sum.Seconds
	}
	sum.finish()
	return sum
}

// finish computes the rates and percentiles.
func (r *Result) finish() {
	if r.Seconds > 0 {
		r.OpsPerS = float64(r.Ops) / r.Seconds
		r.MBPerS = float64(r.Bytes) / r.Seconds / 1e6
	}
	if n := r.Conflicts + r.Ops; r.Conflicts > 0 && n > 0 {
		r.ConflictRate = float64(r.Conflicts) / float64(n)
	}
	sort.Slice(r.lat, func(i, j int) bool { return r.lat[i] < r.lat[j] })
	pct := func(p float64) float64 {
		if len(r.lat) == 0 {
			return 0
		}
		i := int(p * float64(len(r.lat)-1))
		return float64(r.lat[i]) / float64(time.Millisecond)
	}
	r.P50ms, r.P90ms, r.P99ms = pct(0.50), pct(0.90), pct(0.99)
}

// target is one set with its clients and its bench container.
type target struct {
	set       Set
	clients   []*azblob.Client // one per endpoint
	container string
	urls      []string
	prepared  map[string]bool
	large     []byte
	small     []byte
}

func newTarget(ctx context.Context, cfg Config, s Set) (*target, error) {
	t := &target{set: s, prepared: map[string]bool{}}
	for _, ep := range s.Endpoints {
		c, err := client(ep, cfg.Clients)
		if err != nil {
			return nil, fmt.Errorf("bench: %s: %w", s.Name, err)
		}
		t.clients = append(t.clients, c)
		t.urls = append(t.urls, c.URL())
	}
	if len(t.clients) == 0 {
		return nil, fmt.Errorf("bench: set %s has no endpoint", s.Name)
	}
	t.container = "bench-" + randomHex(6)
	if _, err := t.clients[0].CreateContainer(ctx, t.container, nil); err != nil {
		return nil, fmt.Errorf("bench: %s: create container %s: %w", s.Name, t.container, err)
	}
	t.small = randomBytes(cfg.SmallSize)
	return t, nil
}

func (t *target) close(keep bool) {
	if keep {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t.clients[0].DeleteContainer(ctx, t.container, nil)
}

// client builds an SDK client with retries off and a connection pool as
// large as the client count (net/http keeps only 2 idle connections per
// host by default, and the SDK's transport 10: more clients than that
// would measure connection set-up).
func client(ep Endpoint, clients int) (*azblob.Client, error) {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        clients + 16,
		MaxIdleConnsPerHost: clients + 16,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	opts := &azblob.ClientOptions{ClientOptions: azcore.ClientOptions{
		Retry:     policy.RetryOptions{MaxRetries: -1},
		Transport: &http.Client{Transport: tr},
	}}
	if ep.ConnectionString != "" {
		return azblob.NewClientFromConnectionString(ep.ConnectionString, opts)
	}
	if ep.URL == "" {
		return nil, errors.New("an endpoint needs a URL or a connection string")
	}
	u := ep.URL
	if !strings.HasSuffix(u, "/") {
		u += "/"
	}
	cred, err := azblob.NewSharedKeyCredential(ep.Account, ep.Key)
	if err != nil {
		return nil, err
	}
	return azblob.NewClientWithSharedKeyCredential(u, cred, opts)
}

func randomBytes(n int64) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func randomHex(n int) string {
	return fmt.Sprintf("%x", randomBytes(int64(n)))
}

// worker is what one client does: op performs one operation and reports
// the bytes it moved and the requests it sent; items and conflicts are
// workload-specific counts.
type worker struct {
	op func(ctx context.Context) (bytes int64, err error)
}

// tally is the shared state of a timed phase.
type tally struct {
	ops, bytes, requests, items, conflicts atomic.Int64
	mu                                     sync.Mutex
	errors                                 map[string]int64
}

func (t *tally) fail(err error) {
	t.mu.Lock()
	t.errors[errorCode(err)]++
	t.mu.Unlock()
}

// errorCode names a failure by the service's error code, or its HTTP
// status when the body had none, or "transport".
func errorCode(err error) string {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		if re.ErrorCode != "" {
			return re.ErrorCode
		}
		return strconv.Itoa(re.StatusCode)
	}
	return "transport"
}

func (t *target) blockBlob(client int, name string) *blockblob.Client {
	return t.clients[client%len(t.clients)].ServiceClient().NewContainerClient(t.container).NewBlockBlobClient(name)
}

func (t *target) containerClient(client int) *container.Client {
	return t.clients[client%len(t.clients)].ServiceClient().NewContainerClient(t.container)
}

func body(b []byte) io.ReadSeekCloser { return streaming.NopCloser(bytes.NewReader(b)) }

// run prepares workload w on t, runs it for cfg.Duration and returns its
// result.
func (t *target) run(ctx context.Context, cfg Config, w string) (*Result, error) {
	tl := &tally{errors: map[string]int64{}}
	workers, after, err := t.prepare(ctx, cfg, w, tl)
	if err != nil {
		return nil, fmt.Errorf("bench: %s: prepare %s: %w", t.set.Name, w, err)
	}
	res := &Result{Workload: w, Set: t.set.Name, Endpoints: t.urls, Clients: cfg.Clients}
	var done func(*Result)
	if cfg.Hook != nil {
		done = cfg.Hook(t.set.Name, w)
	}
	lats := make([][]time.Duration, len(workers))
	start := time.Now()
	deadline := start.Add(cfg.Duration)
	stop := t.progress(cfg, w, tl, start)
	var wg sync.WaitGroup
	for i, wk := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Requests run on a context the deadline does not cancel
			// (see the package comment); only the caller's ctx stops them.
			for time.Now().Before(deadline) && ctx.Err() == nil {
				t0 := time.Now()
				n, err := wk.op(ctx)
				if err != nil {
					tl.fail(err)
					continue
				}
				lats[i] = append(lats[i], time.Since(t0))
				tl.ops.Add(1)
				tl.bytes.Add(n)
			}
		}()
	}
	wg.Wait()
	res.Seconds = time.Since(start).Seconds()
	stop()
	res.Ops, res.Bytes, res.Requests = tl.ops.Load(), tl.bytes.Load(), tl.requests.Load()
	res.Items, res.Conflicts = tl.items.Load(), tl.conflicts.Load()
	if done != nil {
		done(res)
	}
	res.Errors = tl.errors
	for _, l := range lats {
		res.lat = append(res.lat, l...)
	}
	if after != nil {
		if err := after(ctx, res); err != nil {
			return nil, fmt.Errorf("bench: %s: %s: %w", t.set.Name, w, err)
		}
	}
	res.finish()
	return res, nil
}

// progress prints the running totals every second (a rewritten line on a
// terminal, a plain line every 5 s otherwise) until stop is called.
func (t *target) progress(cfg Config, w string, tl *tally, start time.Time) (stop func()) {
	if cfg.Progress == nil {
		return func() {}
	}
	every := 5 * time.Second
	if cfg.Terminal {
		every = time.Second
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	line := func() string {
		el := time.Since(start).Seconds()
		tl.mu.Lock()
		var errs int64
		for _, v := range tl.errors {
			errs += v
		}
		tl.mu.Unlock()
		return fmt.Sprintf("%-18s %-10s %5.1fs %9d ops %10.1f ops/s %9.1f MB/s %6d errors",
			w, t.set.Name, el, tl.ops.Load(), float64(tl.ops.Load())/el, float64(tl.bytes.Load())/el/1e6, errs)
	}
	go func() {
		defer wg.Done()
		tk := time.NewTicker(every)
		defer tk.Stop()
		for {
			select {
			case <-quit:
				if cfg.Terminal {
					fmt.Fprintf(cfg.Progress, "\r\033[K%s\n", line())
				}
				return
			case <-tk.C:
				if cfg.Terminal {
					fmt.Fprintf(cfg.Progress, "\r\033[K%s", line())
				} else {
					fmt.Fprintln(cfg.Progress, line())
				}
			}
		}
	}()
	return func() { close(quit); wg.Wait() }
}

// prepare creates what workload w needs on t (untimed) and returns one
// worker per client, and what to check after the timed phase.
func (t *target) prepare(ctx context.Context, cfg Config, w string, tl *tally) ([]worker, func(context.Context, *Result) error, error) {
	workers := make([]worker, cfg.Clients)
	ifMatch := func(e *azcore.ETag) *blob.AccessConditions {
		return &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: e}}
	}
	switch w {
	case "put-small":
		for i := range workers {
			var n atomic.Int64
			workers[i].op = func(ctx context.Context) (int64, error) {
				tl.requests.Add(1)
				name := fmt.Sprintf("put-small/%d/%d", i, n.Add(1))
				_, err := t.blockBlob(i, name).Upload(ctx, body(t.small), nil)
				return cfg.SmallSize, err
			}
		}
	case "put-small-ifmatch":
		// Each client overwrites its own blob on the ETag its last write
		// returned: every attempt is a conditional overwrite that succeeds.
		for i := range workers {
			bb := t.blockBlob(i, fmt.Sprintf("put-small-ifmatch/%d", i))
			r, err := bb.Upload(ctx, body(t.small), nil)
			if err != nil {
				return nil, nil, err
			}
			etag := r.ETag
			workers[i].op = func(ctx context.Context) (int64, error) {
				tl.requests.Add(1)
				r, err := bb.Upload(ctx, body(t.small), &blockblob.UploadOptions{AccessConditions: ifMatch(etag)})
				if err != nil {
					// A failed write may or may not have landed: start
					// again from the current ETag, or every later attempt
					// would be a 412.
					if p, perr := bb.GetProperties(ctx, nil); perr == nil {
						etag = p.ETag
					}
					return 0, err
				}
				etag = r.ETag
				return cfg.SmallSize, nil
			}
		}
	case "get-small":
		const n = 64
		if err := t.fill(ctx, cfg, "get-small/", n, t.small); err != nil {
			return nil, nil, err
		}
		for i := range workers {
			k := i
			workers[i].op = func(ctx context.Context) (int64, error) {
				tl.requests.Add(1)
				k = (k + 7) % n
				return t.download(ctx, i, fmt.Sprintf("get-small/%06d", k))
			}
		}
	case "put-large":
		t.ensureLarge(cfg)
		for i := range workers {
			bb := t.blockBlob(i, fmt.Sprintf("put-large/%d", i))
			workers[i].op = func(ctx context.Context) (int64, error) {
				tl.requests.Add(1)
				_, err := bb.Upload(ctx, body(t.large), nil)
				return cfg.LargeSize, err
			}
		}
	case "get-large":
		t.ensureLarge(cfg)
		if !t.prepared["get-large"] {
			if _, err := t.blockBlob(0, "get-large").Upload(ctx, body(t.large), nil); err != nil {
				return nil, nil, err
			}
			t.prepared["get-large"] = true
		}
		for i := range workers {
			workers[i].op = func(ctx context.Context) (int64, error) {
				tl.requests.Add(1)
				return t.download(ctx, i, "get-large")
			}
		}
	case "staged":
		t.ensureLarge(cfg)
		var ids []string
		for off := int64(0); off < cfg.LargeSize; off += cfg.BlockSize {
			ids = append(ids, base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "block-%08d", len(ids))))
		}
		for i := range workers {
			bb := t.blockBlob(i, fmt.Sprintf("staged/%d", i))
			workers[i].op = func(ctx context.Context) (int64, error) {
				for j, id := range ids {
					off := int64(j) * cfg.BlockSize
					end := min(off+cfg.BlockSize, cfg.LargeSize)
					tl.requests.Add(1)
					if _, err := bb.StageBlock(ctx, id, body(t.large[off:end]), nil); err != nil {
						return 0, err
					}
				}
				tl.requests.Add(1)
				_, err := bb.CommitBlockList(ctx, ids, nil)
				return cfg.LargeSize, err
			}
		}
	case "rmw-hot":
		return t.prepareRMW(ctx, cfg, tl, workers)
	case "lease-cycle":
		for i := range workers {
			bb := t.blockBlob(i, fmt.Sprintf("lease-cycle/%d", i))
			if _, err := bb.Upload(ctx, body(t.small), nil); err != nil {
				return nil, nil, err
			}
			id := fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)
			lc, err := lease.NewBlobClient(bb, &lease.BlobClientOptions{LeaseID: to.Ptr(id)})
			if err != nil {
				return nil, nil, err
			}
			workers[i].op = func(ctx context.Context) (int64, error) {
				tl.requests.Add(1)
				if _, err := lc.AcquireLease(ctx, 15, nil); err != nil {
					return 0, err
				}
				tl.requests.Add(1)
				if _, err := lc.RenewLease(ctx, nil); err != nil {
					return 0, err
				}
				tl.requests.Add(1)
				_, err := lc.ReleaseLease(ctx, nil)
				return 0, err
			}
		}
	case "tags":
		// Set Blob Tags, then Get Blob Tags, on each client's own small
		// blob: one operation, two requests.
		for i := range workers {
			bb := t.blockBlob(i, fmt.Sprintf("tags/%d", i))
			if _, err := bb.Upload(ctx, body(t.small), nil); err != nil {
				return nil, nil, err
			}
			var n atomic.Int64
			workers[i].op = func(ctx context.Context) (int64, error) {
				tl.requests.Add(1)
				if _, err := bb.SetTags(ctx, map[string]string{"n": strconv.FormatInt(n.Add(1), 10)}, nil); err != nil {
					return 0, err
				}
				tl.requests.Add(1)
				_, err := bb.GetTags(ctx, nil)
				return 0, err
			}
		}
	case "list":
		if err := t.fill(ctx, cfg, "list/", cfg.ListBlobs, nil); err != nil {
			return nil, nil, err
		}
		for i := range workers {
			cc := t.containerClient(i)
			var pager *runtime.Pager[container.ListBlobsFlatResponse]
			restart := func() {
				pager = cc.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: to.Ptr("list/"), MaxResults: to.Ptr(int32(cfg.PageSize))})
			}
			restart()
			workers[i].op = func(ctx context.Context) (int64, error) {
				if !pager.More() {
					restart()
				}
				tl.requests.Add(1)
				page, err := pager.NextPage(ctx)
				if err != nil {
					restart()
					return 0, err
				}
				tl.items.Add(int64(len(page.Segment.BlobItems)))
				return 0, nil
			}
		}
	}
	return workers, nil, nil
}

// prepareRMW sets up rmw-hot: every client increments one counter blob by
// Get Blob and Put Blob with If-Match on the ETag it read, retrying on 412
// ConditionNotMet. Afterwards the counter must equal the increments that
// succeeded: a lower value is a lost update.
func (t *target) prepareRMW(ctx context.Context, cfg Config, tl *tally, workers []worker) ([]worker, func(context.Context, *Result) error, error) {
	name := "rmw-hot/" + randomHex(4)
	if _, err := t.blockBlob(0, name).Upload(ctx, body(counterBody(0, cfg.SmallSize)), nil); err != nil {
		return nil, nil, err
	}
	// Puts that failed without an answer may have committed: the counter
	// may exceed the successes by at most that many.
	var unknown atomic.Int64
	for i := range workers {
		bb := t.blockBlob(i, name)
		workers[i].op = func(ctx context.Context) (int64, error) {
			for {
				tl.requests.Add(1)
				n, etag, err := readCounter(ctx, bb)
				if err != nil {
					return 0, err
				}
				tl.requests.Add(1)
				_, err = bb.Upload(ctx, body(counterBody(n+1, cfg.SmallSize)), &blockblob.UploadOptions{
					AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: etag}}})
				if bloberror.HasCode(err, bloberror.ConditionNotMet) {
					tl.conflicts.Add(1)
					if err := ctx.Err(); err != nil {
						return 0, err
					}
					continue
				}
				if err != nil {
					var re *azcore.ResponseError
					if !errors.As(err, &re) || re.StatusCode >= 500 {
						unknown.Add(1)
					}
					return 0, err
				}
				return cfg.SmallSize, nil
			}
		}
	}
	after := func(ctx context.Context, r *Result) error {
		final, _, err := readCounter(ctx, t.blockBlob(0, name))
		if err != nil {
			return fmt.Errorf("read the counter back: %w", err)
		}
		expected := r.Ops
		lost := max(expected-final, 0)
		if final > expected+unknown.Load() {
			return fmt.Errorf("counter is %d after %d acknowledged increments (%d unknown): more than were made", final, expected, unknown.Load())
		}
		r.CounterFinal, r.CounterExpected, r.LostUpdates = &final, &expected, &lost
		return nil
	}
	return workers, after, nil
}

// counterBody is n in decimal on the first line, padded to size bytes.
func counterBody(n, size int64) []byte {
	b := strconv.AppendInt(nil, n, 10)
	b = append(b, '\n')
	for int64(len(b)) < size {
		b = append(b, '.')
	}
	return b
}

func readCounter(ctx context.Context, bb *blockblob.Client) (int64, *azcore.ETag, error) {
	r, err := bb.DownloadStream(ctx, nil)
	if err != nil {
		return 0, nil, err
	}
	defer r.Body.Close()
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return 0, nil, err
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	n, err := strconv.ParseInt(string(line), 10, 64)
	if err != nil {
		return 0, nil, fmt.Errorf("counter blob holds %q", line)
	}
	return n, r.ETag, nil
}

func (t *target) ensureLarge(cfg Config) {
	if t.large == nil {
		t.large = randomBytes(cfg.LargeSize)
	}
}

// download reads a blob whole and returns its length.
func (t *target) download(ctx context.Context, client int, name string) (int64, error) {
	r, err := t.blockBlob(client, name).DownloadStream(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer r.Body.Close()
	return io.Copy(io.Discard, r.Body)
}

// fill puts n blobs prefix%06d (once per target) with cfg.Clients writers.
func (t *target) fill(ctx context.Context, cfg Config, prefix string, n int, data []byte) error {
	if t.prepared[prefix] {
		return nil
	}
	var next atomic.Int64
	errc := make(chan error, cfg.Clients)
	for c := 0; c < cfg.Clients; c++ {
		go func() {
			for {
				k := next.Add(1) - 1
				if k >= int64(n) {
					errc <- nil
					return
				}
				if _, err := t.blockBlob(c, fmt.Sprintf("%s%06d", prefix, k)).Upload(ctx, body(data), nil); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	var first error
	for c := 0; c < cfg.Clients; c++ {
		if err := <-errc; err != nil && first == nil {
			first = err
		}
	}
	if first == nil {
		t.prepared[prefix] = true
	}
	return first
}
