package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// waitSampler samples pg_stat_activity every few milliseconds during a
// timed phase: what each client backend of the databases named by a LIKE
// pattern is doing at that instant. A backend is "running" (active, no
// wait event: on a CPU or in the run queue), waiting on a lock
// (Lock/transactionid, Lock/tuple, Lock/advisory, LWLock/...; the
// statement is named), on the WAL flush of its commit (IO/WALSync,
// LWLock/WALWrite), or idle: "idle in transaction" is a transaction
// waiting for its client (the gateway) to send the next statement, and
// "idle" a connection the client is not using at all. The shares of the
// samples say where a write's wall-clock time goes on the server side;
// the idle ones are time spent in the gateway or its pool.
type waitSampler struct {
	mu      sync.Mutex
	counts  map[string]int64
	samples int64 // snapshots of pg_stat_activity taken
	rows    int64 // backends seen over all snapshots
	stop    chan struct{}
	done    chan struct{}
}

// startWaitSampler samples the client backends of the databases whose
// name is LIKE pattern on the server at dsn every interval until stop.
func startWaitSampler(ctx context.Context, dsn, pattern string, every time.Duration) (*waitSampler, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	w := &waitSampler{counts: map[string]int64{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		defer conn.Close(context.Background())
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
			}
			rows, err := conn.Query(ctx, `SELECT coalesce(state, ''), coalesce(wait_event_type, ''), coalesce(wait_event, ''), left(regexp_replace(query, '\s+', ' ', 'g'), 60)
				FROM pg_stat_activity
				WHERE backend_type = 'client backend' AND datname LIKE $1 AND pid <> pg_backend_pid() AND application_name <> $2`, pattern, benchAppName)
			if err != nil {
				return
			}
			snap := map[string]int64{}
			var n int64
			var state, typ, ev, q string
			_, err = pgx.ForEachRow(rows, []any{&state, &typ, &ev, &q}, func() error {
				snap[waitKey(state, typ, ev, q)]++
				n++
				return nil
			})
			if err != nil {
				return
			}
			w.mu.Lock()
			w.samples++
			w.rows += n
			for k, v := range snap {
				w.counts[k] += v
			}
			w.mu.Unlock()
		}
	}()
	return w, nil
}

// waitKey names what one backend is doing.
func waitKey(state, typ, ev, query string) string {
	switch {
	case state == "idle":
		return "idle (no transaction: the client is not using the connection)"
	case strings.HasPrefix(state, "idle in transaction"):
		return "idle in transaction (waiting for the client's next statement)"
	case typ == "":
		return "running (CPU or run queue)"
	case typ == "Lock" || typ == "LWLock":
		return typ + "/" + ev + ": " + query
	}
	return typ + "/" + ev
}

// Stop ends the sampling and returns what it saw.
func (w *waitSampler) Stop() waitProfile {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	p := waitProfile{samples: w.samples, rows: w.rows, counts: map[string]int64{}}
	for k, v := range w.counts {
		p.counts[k] = v
	}
	return p
}

// waitProfile is what a waitSampler saw.
type waitProfile struct {
	samples, rows int64
	counts        map[string]int64
}

func (p *waitProfile) add(q waitProfile) {
	if p.counts == nil {
		p.counts = map[string]int64{}
	}
	p.samples += q.samples
	p.rows += q.rows
	for k, v := range q.counts {
		p.counts[k] += v
	}
}

// write prints the shares of the backend samples, largest first (the top
// n), and the mean number of backends of the databases.
func (p waitProfile) write(out io.Writer, title string, n int) {
	if p.rows == 0 {
		fmt.Fprintf(out, "wait profile %s: no samples\n", title)
		return
	}
	fmt.Fprintf(out, "wait profile %s: %d snapshots, %.1f backends each\n", title, p.samples, float64(p.rows)/float64(max(p.samples, 1)))
	keys := make([]string, 0, len(p.counts))
	for k := range p.counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return p.counts[keys[i]] > p.counts[keys[j]] })
	for i, k := range keys {
		if i == n {
			break
		}
		fmt.Fprintf(out, "  %5.1f%%  %s\n", 100*float64(p.counts[k])/float64(p.rows), k)
	}
}

// waitEvery is how often a waitSampler looks: often enough for a few
// thousand samples in a 5 s phase, seldom enough that its own query costs
// the server little.
const waitEvery = 5 * time.Millisecond

// benchAppName is the application_name of the benchmark's own connections
// to a gateway's database, which the wait sampler leaves out.
const benchAppName = "blobgw-bench"

// childrenCPU is the CPU time of this process's children that ended and
// were waited for (RUSAGE_CHILDREN): pgbench's, once its run returned.
func childrenCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
