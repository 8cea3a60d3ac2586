package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
)

// roundFigures keeps one figure (a CPU time per operation, say) of every
// timed phase of a benchmark that runs each workload for several rounds on
// each set (bench.Config.Rounds), by workload and set in round order. The
// report sums the rounds into one figure per set; this keeps the rounds
// apart, so their spread shows, and pairs each round of a set with the
// same round of another (run next to it in time) for a per-round ratio.
type roundFigures struct {
	metric    string
	workloads []string // in the order first seen
	sets      []string // in the order first seen
	// vals holds, by workload then set, one figure per round; NaN for a
	// round whose phase did no operation.
	vals map[string]map[string][]float64
}

func newRoundFigures(metric string) *roundFigures {
	return &roundFigures{metric: metric, vals: map[string]map[string][]float64{}}
}

// add records the next round's figure of workload on set (NaN: none).
func (f *roundFigures) add(workload, set string, v float64) {
	m := f.vals[workload]
	if m == nil {
		m = map[string][]float64{}
		f.vals[workload] = m
		f.workloads = append(f.workloads, workload)
	}
	if !slices.Contains(f.sets, set) {
		f.sets = append(f.sets, set)
	}
	m[set] = append(m[set], v)
}

// roundPair names two sets to compare round by round: after over before.
// Label prefixes the ratio's row and metric ("sqlite": "sqlite
// after/before").
type roundPair struct{ label, before, after string }

// ratios is after's figure of each round over before's of the same round,
// for workload; NaN for a round either lacks. Nil when either set has no
// figure of workload.
func (f *roundFigures) ratios(workload string, p roundPair) []float64 {
	b, a := f.vals[workload][p.before], f.vals[workload][p.after]
	if b == nil || a == nil {
		return nil
	}
	return roundRatios(b, a)
}

// roundRatios is after[i] / before[i] for every round either has; NaN where
// one lacks the round or before's figure is not above zero.
func roundRatios(before, after []float64) []float64 {
	out := make([]float64, max(len(before), len(after)))
	for i := range out {
		out[i] = math.NaN()
		if i < len(before) && i < len(after) && before[i] > 0 && !math.IsNaN(after[i]) {
			out[i] = after[i] / before[i]
		}
	}
	return out
}

// present is v without its NaNs, sorted.
func present(v []float64) []float64 {
	var out []float64
	for _, x := range v {
		if !math.IsNaN(x) {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	return out
}

// median is the median of v's figures, NaNs left out (the mean of the two
// middle ones for an even count); NaN when there is none.
func median(v []float64) float64 {
	s := present(v)
	switch n := len(s); {
	case n == 0:
		return math.NaN()
	case n%2 == 1:
		return s[n/2]
	default:
		return (s[n/2-1] + s[n/2]) / 2
	}
}

// valueRange is the least and the greatest of v's figures, NaNs left out;
// NaN, NaN when there is none.
func valueRange(v []float64) (lo, hi float64) {
	s := present(v)
	if len(s) == 0 {
		return math.NaN(), math.NaN()
	}
	return s[0], s[len(s)-1]
}

// write prints, per workload, every set's figure of each round with their
// median and spread (the range over the median), each pair's two sets
// followed by the ratio of each round with its median and range, then the
// sets in no pair. A pair whose sets did not both run the workload prints
// no ratio.
func (f *roundFigures) write(w io.Writer, pairs []roundPair) {
	rounds := 0
	for _, m := range f.vals {
		for _, v := range m {
			rounds = max(rounds, len(v))
		}
	}
	fmt.Fprintf(w, "\n%s by round (after/before: each round's ratio, its median and range):\n", f.metric)
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', tabwriter.AlignRight)
	head := []string{"workload", "set"}
	for i := range rounds {
		head = append(head, fmt.Sprintf("round %d", i+1))
	}
	fmt.Fprintln(tw, strings.Join(append(head, "median", "spread/range"), "\t")+"\t")
	row := func(workload, set string, v []float64, format, last string) {
		cells := []string{workload, set}
		for i := range rounds {
			c := "-"
			if i < len(v) && !math.IsNaN(v[i]) {
				c = fmt.Sprintf(format, v[i])
			}
			cells = append(cells, c)
		}
		m := "-"
		if x := median(v); !math.IsNaN(x) {
			m = fmt.Sprintf(format, x)
		}
		fmt.Fprintln(tw, strings.Join(append(cells, m, last), "\t")+"\t")
	}
	// Each pair's sets, then its ratio, then the sets in no pair.
	var order []string
	for _, p := range pairs {
		order = append(order, p.before, p.after)
	}
	for _, set := range f.sets {
		if !slices.Contains(order, set) {
			order = append(order, set)
		}
	}
	for _, wl := range f.workloads {
		for i, set := range order {
			if v, ok := f.vals[wl][set]; ok {
				spread := "-"
				if lo, hi := valueRange(v); !math.IsNaN(lo) && median(v) > 0 {
					spread = fmt.Sprintf("%.1f%%", 100*(hi-lo)/median(v))
				}
				row(wl, set, v, "%.1f", spread)
			}
			if i%2 == 0 || i/2 >= len(pairs) {
				continue
			}
			p := pairs[i/2]
			if r := f.ratios(wl, p); r != nil {
				span := "-"
				if lo, hi := valueRange(r); !math.IsNaN(lo) {
					span = fmt.Sprintf("%.3f..%.3f", lo, hi)
				}
				row(wl, strings.TrimSpace(p.label+" after/before"), r, "%.3f", span)
			}
		}
	}
	tw.Flush()
}

// TestRoundFigures: median and range of odd and even counts with rounds
// missing, per-round ratios, and what write prints with a pair's set
// missing.
func TestRoundFigures(t *testing.T) {
	nan := math.NaN()
	same := func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }
	stats := []struct {
		name           string
		v              []float64
		median, lo, hi float64
	}{
		{"odd", []float64{3, 1, 2}, 2, 1, 3},
		{"even", []float64{4, 1, 3, 2}, 2.5, 1, 4},
		{"one", []float64{7}, 7, 7, 7},
		{"a round missing", []float64{nan, 5, 1}, 3, 1, 5},
		{"none", nil, nan, nan, nan},
		{"all missing", []float64{nan, nan}, nan, nan, nan},
	}
	for _, tt := range stats {
		if got := median(tt.v); !same(got, tt.median) {
			t.Errorf("%s: median(%v) = %v, want %v", tt.name, tt.v, got, tt.median)
		}
		if lo, hi := valueRange(tt.v); !same(lo, tt.lo) || !same(hi, tt.hi) {
			t.Errorf("%s: valueRange(%v) = %v, %v, want %v, %v", tt.name, tt.v, lo, hi, tt.lo, tt.hi)
		}
	}
	ratios := []struct {
		name          string
		before, after []float64
		want          []float64
		median        float64
	}{
		{"odd", []float64{10, 20, 40}, []float64{5, 30, 20}, []float64{0.5, 1.5, 0.5}, 0.5},
		{"even", []float64{10, 20}, []float64{5, 30}, []float64{0.5, 1.5}, 1},
		{"after lacks the last round", []float64{10, 20, 40}, []float64{5, 30}, []float64{0.5, 1.5, nan}, 1},
		{"before lacks the last round", []float64{10}, []float64{5, 30}, []float64{0.5, nan}, 0.5},
		{"no operation in a round", []float64{10, nan, 0}, []float64{nan, 30, 20}, []float64{nan, nan, nan}, nan},
	}
	for _, tt := range ratios {
		got := roundRatios(tt.before, tt.after)
		ok := len(got) == len(tt.want)
		for i := 0; ok && i < len(got); i++ {
			ok = same(got[i], tt.want[i])
		}
		if !ok {
			t.Errorf("%s: roundRatios(%v, %v) = %v, want %v", tt.name, tt.before, tt.after, got, tt.want)
		}
		if m := median(got); !same(m, tt.median) {
			t.Errorf("%s: median ratio %v, want %v", tt.name, m, tt.median)
		}
	}

	f := newRoundFigures("server-cpu-us/op")
	for _, r := range [][]float64{{100, 80, 200}, {110, 77, 190}, {90, 99, nan}} {
		f.add("put-small", "other", 1)
		f.add("put-small", "postgres-after", r[2])
		f.add("put-small", "sqlite-before", r[0])
		f.add("put-small", "sqlite-after", r[1])
	}
	pairs := []roundPair{{"sqlite", "sqlite-before", "sqlite-after"}, {"postgres", "postgres-before", "postgres-after"}}
	if r := f.ratios("put-small", pairs[1]); r != nil {
		t.Errorf("ratios with postgres-before missing: %v, want none", r)
	}
	var out strings.Builder
	f.write(&out, pairs)
	lines := map[string]string{}
	var rows []string
	for _, l := range strings.Split(out.String(), "\n") {
		if fs := strings.Fields(l); len(fs) > 2 && fs[0] == "put-small" {
			set := strings.Join(fs[1:len(fs)-5], " ")
			lines[set] = strings.Join(fs[len(fs)-5:], " ")
			rows = append(rows, set)
		}
	}
	// A pair's sets, its ratio, the next pair, then the sets in none.
	if got, want := strings.Join(rows, ", "), "sqlite-before, sqlite-after, sqlite after/before, postgres-after, other"; got != want {
		t.Errorf("rows %s, want %s", got, want)
	}
	want := map[string]string{
		// rounds, median, spread: (110-90)/100
		"sqlite-before": "100.0 110.0 90.0 100.0 20.0%",
		// 80/100, 77/110, 99/90: median 0.8, range 0.7..1.1
		"sqlite after/before": "0.800 0.700 1.100 0.800 0.700..1.100",
		// the third round did no operation
		"postgres-after": "200.0 190.0 - 195.0 5.1%",
	}
	for set, w := range want {
		if lines[set] != w {
			t.Errorf("row %q: %q, want %q; output:\n%s", set, lines[set], w, out.String())
		}
	}
	if strings.Contains(out.String(), "postgres after/before") || !strings.Contains(out.String(), "round 3") {
		t.Errorf("want three rounds and no postgres ratio (its before set is missing):\n%s", out.String())
	}
}
