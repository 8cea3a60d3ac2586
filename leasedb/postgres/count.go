package postgres

import (
	"context"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
)

// Statement counting: how many SQL statements, round trips and
// transactions one gateway operation costs, so that a test can hold a
// ceiling on them (every statement is a round trip to the database on the
// write path, and on this store round trips and database CPU are what a
// small operation costs).
//
// A Store opened with OpenCounting carries a pgx tracer on every
// connection; it counts what runs on a context tagged with CountInto and
// ignores everything else (the upload intent pool's refills, the
// collector, other requests). Open installs no tracer at all, so a store
// that does not count pays nothing for it.

// Counts is what ran on a tagged context.
type Counts struct {
	// Statements counts every statement sent, BEGIN, COMMIT and ROLLBACK
	// included, each query of a batch included.
	Statements int
	// RoundTrips counts statements sent alone plus whole batches (a batch
	// or pipeline is one round trip however many statements it holds).
	RoundTrips int
	// Transactions counts BEGINs.
	Transactions int
	// SQL is the text of each statement, in order, whitespace collapsed.
	SQL []string
}

// Counter accumulates Counts; it is safe for concurrent use.
type Counter struct {
	mu sync.Mutex
	c  Counts
}

// Counts returns what the counter has seen so far.
func (c *Counter) Counts() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.c
	out.SQL = append([]string(nil), c.c.SQL...)
	return out
}

// Reset forgets everything counted so far.
func (c *Counter) Reset() {
	c.mu.Lock()
	c.c = Counts{}
	c.mu.Unlock()
}

func (c *Counter) add(sql string, roundTrip bool) {
	text := strings.Join(strings.Fields(sql), " ")
	c.mu.Lock()
	defer c.mu.Unlock()
	c.c.Statements++
	if roundTrip {
		c.c.RoundTrips++
	}
	if f := strings.Fields(strings.ToLower(text)); len(f) > 0 && (f[0] == "begin" || f[0] == "start") {
		c.c.Transactions++
	}
	c.c.SQL = append(c.c.SQL, text)
}

type counterKey struct{}

// CountInto returns ctx tagged so that a Store opened with OpenCounting
// counts the statements run on it (or on contexts derived from it, such
// as a commit detached from the request) into c.
func CountInto(ctx context.Context, c *Counter) context.Context {
	return context.WithValue(ctx, counterKey{}, c)
}

func counterOf(ctx context.Context) *Counter {
	c, _ := ctx.Value(counterKey{}).(*Counter)
	return c
}

// OpenCounting is Open with statement counting on (see CountInto).
func OpenCounting(ctx context.Context, dsn string) (*Store, error) {
	return open(ctx, dsn, countTracer{})
}

// countTracer is the pgx tracer OpenCounting installs.
type countTracer struct{}

var (
	_ pgx.QueryTracer    = countTracer{}
	_ pgx.BatchTracer    = countTracer{}
	_ pgx.CopyFromTracer = countTracer{}
)

func (countTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if c := counterOf(ctx); c != nil {
		c.add(d.SQL, true)
	}
	return ctx
}

func (countTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (countTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	if c := counterOf(ctx); c != nil {
		c.mu.Lock()
		c.c.RoundTrips++
		c.mu.Unlock()
	}
	return ctx
}

func (countTracer) TraceBatchQuery(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	if c := counterOf(ctx); c != nil {
		c.add(d.SQL, false)
	}
}

func (countTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (countTracer) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceCopyFromStartData) context.Context {
	if c := counterOf(ctx); c != nil {
		c.add("COPY "+d.TableName.Sanitize(), true)
	}
	return ctx
}

func (countTracer) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}
