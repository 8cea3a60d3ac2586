package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/blobgw/blobgw/internal/bench"
	"github.com/urfave/cli/v2"
)

// runBenchApp runs `blobgw bench` with args and returns the run with its
// standard output (the report) and standard error (progress) apart. Any
// error is a non-zero exit: the ExitCoder's code, else 1.
func runBenchApp(t *testing.T, args ...string) cliRun {
	t.Helper()
	var out, errOut bytes.Buffer
	app := newApp()
	app.Writer, app.ErrWriter = &out, &errOut
	args = append([]string{"bench"}, args...)
	code := 0
	if err := app.RunContext(context.Background(), append([]string{"blobgw"}, args...)); err != nil {
		code = 1
		var ec cli.ExitCoder
		if errors.As(err, &ec) && ec.ExitCode() != 0 {
			code = ec.ExitCode()
		}
		errOut.WriteString(err.Error())
	}
	return cliRun{args: args, code: code, out: out.String(), stderr: errOut.String()}
}

// briefBench is a short run of every workload with small sizes.
var briefBench = []string{"--workload", "all", "--clients", "3", "--duration", "300ms",
	"--large-size", "256KiB", "--block-size", "64KiB", "--list-blobs", "40", "--page-size", "15", "--json"}

func decodeReport(t *testing.T, r cliRun) *bench.Report {
	t.Helper()
	var rep bench.Report
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatalf("bench output is not JSON: %v\n%s\nstderr:\n%s", err, r.out, r.stderr)
	}
	return &rep
}

// TestBenchCommand runs every workload of `blobgw bench` briefly against
// two real gateways, the first set round robin over two endpoints of one
// of them, the second set through --compare, and checks the JSON report:
// every workload did operations on both sets without an error, rmw-hot's
// counter holds every acknowledged increment, and a ratio per workload.
func TestBenchCommand(t *testing.T) {
	a, b := newMigGateway(t, nil), newMigGateway(t, nil)
	args := append([]string{"--endpoint", a.url, "--endpoint", a.url, "--compare", b.url,
		"--name", "gw-a", "--compare-name", "gw-b"}, briefBench...)
	run := runBenchApp(t, args...)
	stdout := run.ok(t)
	rep := decodeReport(t, run)
	if want := 2 * len(bench.Workloads); len(rep.Results) != want {
		t.Fatalf("%d results, want %d:\n%s", len(rep.Results), want, stdout)
	}
	seen := map[string]int{}
	for _, r := range rep.Results {
		seen[r.Workload+"/"+r.Set]++
		if r.Ops <= 0 || r.OpsPerS <= 0 || r.Requests < r.Ops {
			t.Errorf("%s on %s: %d ops (%.1f/s) in %d requests", r.Workload, r.Set, r.Ops, r.OpsPerS, r.Requests)
		}
		if len(r.Errors) != 0 {
			t.Errorf("%s on %s: errors %v", r.Workload, r.Set, r.Errors)
		}
		if r.P50ms <= 0 || r.P50ms > r.P90ms || r.P90ms > r.P99ms {
			t.Errorf("%s on %s: latency p50 %v p90 %v p99 %v", r.Workload, r.Set, r.P50ms, r.P90ms, r.P99ms)
		}
		switch r.Workload {
		case "rmw-hot":
			if r.LostUpdates == nil || *r.LostUpdates != 0 || *r.CounterFinal != r.Ops || *r.CounterExpected != r.Ops {
				t.Errorf("rmw-hot on %s: counter %v, expected %v, lost %v, %d increments", r.Set, r.CounterFinal, r.CounterExpected, r.LostUpdates, r.Ops)
			}
		case "list":
			if r.Items < r.Ops {
				t.Errorf("list on %s: %d entries in %d pages", r.Set, r.Items, r.Ops)
			}
		case "put-small", "put-large", "get-small", "get-large", "staged":
			if r.Bytes <= 0 || r.MBPerS <= 0 {
				t.Errorf("%s on %s: %d bytes", r.Workload, r.Set, r.Bytes)
			}
		}
	}
	for _, w := range bench.Workloads {
		if seen[w+"/gw-a"] != 1 || seen[w+"/gw-b"] != 1 {
			t.Errorf("workload %s: results %d on gw-a, %d on gw-b", w, seen[w+"/gw-a"], seen[w+"/gw-b"])
		}
	}
	if len(rep.Ratios) != len(bench.Workloads) {
		t.Fatalf("%d ratios, want %d", len(rep.Ratios), len(bench.Workloads))
	}
	for _, ra := range rep.Ratios {
		if ra.A != "gw-a" || ra.B != "gw-b" || ra.Ops <= 0 {
			t.Errorf("ratio %+v", ra)
		}
	}
	// The first set's clients were spread over its two endpoints.
	if eps := rep.Results[0].Endpoints; len(eps) != 2 {
		t.Errorf("first set endpoints %v", eps)
	}

	// Without --json: the table and the ratios.
	runBenchApp(t, "--endpoint", a.url, "--compare", b.url, "--workload", "put-small,rmw-hot", "--duration", "200ms", "--clients", "2").
		ok(t, "ops/s", "ratios (to B)", "lost updates 0")
}

// TestBenchFlags: a request the command cannot honour is refused with
// status 2 before anything runs.
func TestBenchFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--workload", "put-small"},
		{"--endpoint", "http://127.0.0.1:1/devstoreaccount1", "--workload", "put-tiny"},
		{"--endpoint", "http://127.0.0.1:1/devstoreaccount1", "--size", "4XB"},
		{"--endpoint", "http://127.0.0.1:1/devstoreaccount1", "--clients", "0"},
		{"--endpoint", "http://127.0.0.1:1/devstoreaccount1", "--page-size", "5001"},
		{"--endpoint", "http://127.0.0.1:1/devstoreaccount1", "--compare", "http://127.0.0.1:2/devstoreaccount1", "--compare-name", "A"},
	} {
		runBenchApp(t, args...).fails(t, 2)
	}
}

// TestBenchLostUpdate runs rmw-hot against a gateway behind a faulty proxy
// that acknowledges every second conditional Put Blob without forwarding
// it: the counter then misses acknowledged increments, and the report
// must say so.
func TestBenchLostUpdate(t *testing.T) {
	g := newMigGateway(t, nil)
	var puts atomic.Int64
	lossy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && r.Header.Get("If-Match") != "" && strings.Contains(r.URL.Path, "/rmw-hot/") && puts.Add(1)%2 == 0 {
			w.Header().Set("ETag", `"0x8D000000000DEAD"`)
			w.WriteHeader(http.StatusCreated)
			return
		}
		proxyTo(w, r, g.url)
	}))
	t.Cleanup(lossy.Close)
	url := lossy.URL + g.url[strings.Index(g.url[len("http://"):], "/")+len("http://"):]
	run := runBenchApp(t, "--endpoint", url, "--workload", "rmw-hot", "--clients", "1", "--duration", "300ms", "--json")
	run.ok(t)
	rep := decodeReport(t, run)
	r := rep.Results[0]
	if r.Ops < 2 || r.LostUpdates == nil || *r.LostUpdates != r.Ops/2 {
		t.Fatalf("%d acknowledged increments through a proxy that drops every second one: lost updates %v (counter %v)", r.Ops, r.LostUpdates, r.CounterFinal)
	}
}

// proxyTo forwards r to the service at base (same path and query) and
// copies the answer back.
func proxyTo(w http.ResponseWriter, r *http.Request, base string) {
	host := base[len("http://"):]
	host = host[:strings.Index(host, "/")]
	out, err := http.NewRequestWithContext(r.Context(), r.Method, "http://"+host+r.URL.RequestURI(), r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = r.Header.Clone()
	out.ContentLength = r.ContentLength
	resp, err := http.DefaultTransport.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}
