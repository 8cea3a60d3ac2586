package gateway

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blobgw/blobgw/backends"
	"github.com/blobgw/blobgw/leasedb"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics live in a registry per Server (never the process-wide default
// one), so that several Servers in one process (tests, replicas) count
// apart. Operation labels are the operation table's names (router.go),
// "" for a request refused before it named one.

// scrapeTimeout bounds the store queries a scrape runs (leases, queue).
const scrapeTimeout = 2 * time.Second

type metrics struct {
	reg *prometheus.Registry

	requests       *prometheus.CounterVec
	latency        *prometheus.HistogramVec
	bytesIn        *prometheus.CounterVec
	bytesOut       *prometheus.CounterVec
	preconditions  *prometheus.CounterVec
	leaseConflicts *prometheus.CounterVec
	unavailable    *prometheus.CounterVec
	connsRefused   prometheus.Counter

	txDuration *prometheus.HistogramVec
	txRetries  *prometheus.CounterVec
	txErrors   *prometheus.CounterVec

	backendLatency *prometheus.HistogramVec
	backendErrors  *prometheus.CounterVec

	collected     prometheus.Counter
	collectorPass *prometheus.CounterVec

	// The children of the vectors above that every request touches,
	// looked up once per label set instead of hashing the label values
	// on each request: per operation (opMetrics), per operation and status
	// (requests), per backend call (backendLatency) and per transaction
	// kind. Nothing ever deletes a child, so a cached one stays the one
	// the registry exports.
	byOp        sync.Map // operation name → *opMetrics
	byOpStatus  sync.Map // opStatus → prometheus.Counter (requests)
	byBackendOp sync.Map // backend op → prometheus.Observer (backendLatency)
	byTxKind    sync.Map // transaction kind → *txMetrics
}

// opMetrics are an operation's children of the per-operation vectors.
type opMetrics struct {
	latency           prometheus.Observer
	bytesIn, bytesOut prometheus.Counter
}

type opStatus struct {
	op     string
	status int
}

// txMetrics are a transaction kind's children.
// Retries and outages are rare: their children are looked up when they
// happen, so their series appear only then, as before.
type txMetrics struct {
	kind     string
	m        *metrics
	duration prometheus.Observer
}

func newMetrics() *metrics {
	reg := prometheus.NewRegistry()
	lat := []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	m := &metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "blobgw_requests_total",
			Help: "Requests served, by operation and HTTP status."}, []string{"operation", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "blobgw_request_duration_seconds",
			Help: "Time from request to the end of the response, by operation.", Buckets: lat}, []string{"operation"}),
		bytesIn: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "blobgw_request_bytes_total",
			Help: "Request body bytes read, by operation."}, []string{"operation"}),
		bytesOut: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "blobgw_response_bytes_total",
			Help: "Response body bytes written, by operation."}, []string{"operation"}),
		preconditions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "blobgw_precondition_failures_total",
			Help: "Answers 304, 409 and 412, by operation, status and error code."}, []string{"operation", "status", "code"}),
		leaseConflicts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "blobgw_lease_conflicts_total",
			Help: "Requests refused for a lease (error codes Lease*), by operation and error code."}, []string{"operation", "code"}),
		unavailable: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "blobgw_unavailable_total",
			Help: "Answers 503 (ServerBusy: store or backend unavailable, overload), by operation."}, []string{"operation"}),
		connsRefused: prometheus.NewCounter(prometheus.CounterOpts{Name: "blobgw_connections_refused_total",
			Help: "Connections over max_connections closed without an answer (TLS, too many busy answers at once, no request head in time)."}),
		txDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "blobgw_metadata_tx_duration_seconds",
			Help: "Metadata store transactions, retries included, by kind (update, view).", Buckets: lat}, []string{"kind"}),
		txRetries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "blobgw_metadata_tx_retries_total",
			Help: "Metadata transactions run again after a serialization failure or deadlock, by kind."}, []string{"kind"}),
		txErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "blobgw_metadata_unavailable_total",
			Help: "Metadata transactions failed because the store was unavailable, by kind."}, []string{"kind"}),
		backendLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "blobgw_backend_duration_seconds",
			Help: "Byte backend calls, by operation (Put streams the whole body; Open until the reader is returned).", Buckets: lat}, []string{"op"}),
		backendErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "blobgw_backend_errors_total",
			Help: "Byte backend calls that failed (not-found excluded), by operation."}, []string{"op"}),
		collected: prometheus.NewCounter(prometheus.CounterOpts{Name: "blobgw_collector_deleted_total",
			Help: "Backend objects the collector deleted."}),
		collectorPass: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "blobgw_collector_passes_total",
			Help: "Collector passes, by result (ok, error)."}, []string{"result"}),
	}
	reg.MustRegister(m.requests, m.latency, m.bytesIn, m.bytesOut, m.preconditions, m.leaseConflicts,
		m.unavailable, m.connsRefused, m.txDuration, m.txRetries, m.txErrors, m.backendLatency, m.backendErrors,
		m.collected, m.collectorPass,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// forOp returns op's children of the per-operation vectors.
func (m *metrics) forOp(op string) *opMetrics {
	if v, ok := m.byOp.Load(op); ok {
		return v.(*opMetrics)
	}
	v, _ := m.byOp.LoadOrStore(op, &opMetrics{latency: m.latency.WithLabelValues(op),
		bytesIn: m.bytesIn.WithLabelValues(op), bytesOut: m.bytesOut.WithLabelValues(op)})
	return v.(*opMetrics)
}

// forTx returns kind's transaction metrics. A child is created when it is
// first used, as WithLabelValues on each use would: a series appears in
// the scrape once it has something to count.
func (m *metrics) forTx(kind string) *txMetrics {
	if v, ok := m.byTxKind.Load(kind); ok {
		return v.(*txMetrics)
	}
	v, _ := m.byTxKind.LoadOrStore(kind, &txMetrics{kind: kind, m: m, duration: m.txDuration.WithLabelValues(kind)})
	return v.(*txMetrics)
}

func (t *txMetrics) retry(n int32) { t.m.txRetries.WithLabelValues(t.kind).Add(float64(n)) }
func (t *txMetrics) unavailable()  { t.m.txErrors.WithLabelValues(t.kind).Inc() }

func (m *metrics) observeRequest(op string, status int, code string, d time.Duration, in, out int64) {
	key := opStatus{op, status}
	req, ok := m.byOpStatus.Load(key)
	if !ok {
		req, _ = m.byOpStatus.LoadOrStore(key, m.requests.WithLabelValues(op, strconv.Itoa(status)))
	}
	req.(prometheus.Counter).Inc()
	om := m.forOp(op)
	om.latency.Observe(d.Seconds())
	om.bytesIn.Add(float64(in))
	om.bytesOut.Add(float64(out))
	switch status {
	case 304, 409, 412:
		m.preconditions.WithLabelValues(op, strconv.Itoa(status), code).Inc()
	case 503:
		m.unavailable.WithLabelValues(op).Inc()
	}
	if strings.HasPrefix(code, "Lease") {
		m.leaseConflicts.WithLabelValues(op, code).Inc()
	}
}

// observeBackend is the backends.Observer of the Server's backend.
func (m *metrics) observeBackend(op string, d time.Duration, err error) {
	lat, ok := m.byBackendOp.Load(op)
	if !ok {
		lat, _ = m.byBackendOp.LoadOrStore(op, m.backendLatency.WithLabelValues(op))
	}
	lat.(prometheus.Observer).Observe(d.Seconds())
	if err != nil && !errors.Is(err, backends.ErrNotFound) && !errors.Is(err, context.Canceled) {
		m.backendErrors.WithLabelValues(op).Inc()
	}
}

// observedStore times the metadata store's transactions and counts their
// retries: a Store runs fn again after a serialization failure or
// deadlock, so every run of fn after the first is one.
type observedStore struct {
	leasedb.Store
	m *metrics
}

// Unwrap exposes the store for its optional one-statement reads
// (leasedb.BlobReader, leasedb.ContainerReader), which run outside any
// transaction and so are not in the transaction metrics.
func (o observedStore) Unwrap() leasedb.Store { return o.Store }

func (o observedStore) Update(ctx context.Context, fn func(leasedb.Tx) error) error {
	return o.run(ctx, "update", fn, o.Store.Update)
}

func (o observedStore) View(ctx context.Context, fn func(leasedb.Tx) error) error {
	return o.run(ctx, "view", fn, o.Store.View)
}

func (o observedStore) run(ctx context.Context, kind string, fn func(leasedb.Tx) error,
	tx func(context.Context, func(leasedb.Tx) error) error) error {
	c := countedRuns.Get().(*countedRun)
	c.fn = fn
	start := time.Now()
	err := tx(ctx, c.call)
	n := c.runs.Swap(0)
	c.fn = nil
	countedRuns.Put(c)
	t := o.m.forTx(kind)
	t.duration.Observe(time.Since(start).Seconds())
	if n > 1 {
		t.retry(n - 1)
	}
	if errors.Is(err, leasedb.ErrUnavailable) {
		t.unavailable()
	}
	return err
}

// countedRun is the fn observedStore.run hands the store: it counts fn's
// runs. Pooled, with the function the store calls (call, c.run) bound
// once: a closure over fn and a counter cost every transaction two
// allocations. A store runs fn only while Update or View runs, so the
// run is over when it is put back.
type countedRun struct {
	fn   func(leasedb.Tx) error
	runs atomic.Int32
	call func(leasedb.Tx) error
}

func (c *countedRun) run(t leasedb.Tx) error {
	c.runs.Add(1)
	return c.fn(t)
}

var countedRuns = sync.Pool{New: func() any {
	c := &countedRun{}
	c.call = c.run
	return c
}}

// stateCollector computes, at each scrape, the gauges read from the
// store: active leases by state, the collection queue and upload intents.
type stateCollector struct {
	db    *leasedb.DB
	stats leasedb.QueueStatser // nil when the store cannot summarize its queue

	leases, pending, intents, oldest, up *prometheus.Desc
}

func newStateCollector(db *leasedb.DB, store leasedb.Store) *stateCollector {
	c := &stateCollector{db: db,
		leases: prometheus.NewDesc("blobgw_leases", "Containers and blobs with a lease that is not available, by kind and effective state.",
			[]string{"kind", "state"}, nil),
		pending: prometheus.NewDesc("blobgw_collector_queue_depth", "Replaced or deleted objects queued for collection.", nil, nil),
		intents: prometheus.NewDesc("blobgw_upload_intents", "Upload intents outstanding (uploads in flight, pooled keys, intents of uploads that died).", nil, nil),
		oldest: prometheus.NewDesc("blobgw_collector_oldest_due_seconds",
			"How long the oldest due, unclaimed collection entry has been due (0 when none is).", nil, nil),
		up: prometheus.NewDesc("blobgw_metadata_scrape_ok", "1 when this scrape read the store's figures, 0 when the store did not answer.", nil, nil),
	}
	c.stats, _ = store.(leasedb.QueueStatser)
	return c
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.leases, c.pending, c.intents, c.oldest, c.up} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	ok := 1.0
	// ListLeases reads the partial indexes of leased rows only.
	if rows, now, err := c.db.ListLeases(ctx, leasedb.LeaseFilter{}); err != nil {
		ok = 0
	} else {
		counts := map[[2]string]int{}
		for _, kind := range []string{"blob", "container"} {
			for _, st := range []leasedb.LeaseState{leasedb.LeaseLeased, leasedb.LeaseBreaking, leasedb.LeaseBroken, leasedb.LeaseExpired} {
				counts[[2]string{kind, string(st)}] = 0
			}
		}
		for _, r := range rows {
			kind := "blob"
			if r.Blob == "" {
				kind = "container"
			}
			if st := r.Lease.Effective(now); st != leasedb.LeaseAvailable {
				counts[[2]string{kind, string(st)}]++
			}
		}
		for k, n := range counts {
			ch <- prometheus.MustNewConstMetric(c.leases, prometheus.GaugeValue, float64(n), k[0], k[1])
		}
	}
	if c.stats != nil {
		if st, err := c.stats.QueueStats(ctx); err != nil {
			ok = 0
		} else {
			ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(st.Pending))
			ch <- prometheus.MustNewConstMetric(c.intents, prometheus.GaugeValue, float64(st.Intents))
			age := 0.0
			if !st.OldestDue.IsZero() {
				age = max(st.Now.Sub(st.OldestDue).Seconds(), 0)
			}
			ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, age)
		}
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, ok)
}
