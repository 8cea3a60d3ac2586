package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// WriteJSON writes the report as one indented JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the results as a table, then what is particular to a
// workload (rmw-hot's conflicts and counter check, list's entries, figures
// a Hook added), then the ratios.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tset\tclients\tsecs\tops\tops/s\tMB/s\tp50 ms\tp90 ms\tp99 ms\terrors\t")
	for _, res := range r.Results {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%d\t%.1f\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t\n",
			res.Workload, res.Set, res.Clients, res.Seconds, res.Ops, res.OpsPerS, res.MBPerS,
			res.P50ms, res.P90ms, res.P99ms, errorsText(res.Errors))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, res := range r.Results {
		var notes []string
		if res.Workload == "rmw-hot" && res.CounterFinal != nil {
			notes = append(notes, fmt.Sprintf("goodput %.1f increments/s, %d conflicts (%.1f%% of attempts), counter %d after %d acknowledged increments, lost updates %d",
				res.OpsPerS, res.Conflicts, 100*res.ConflictRate, *res.CounterFinal, *res.CounterExpected, *res.LostUpdates))
		}
		if res.Workload == "list" && res.Seconds > 0 {
			notes = append(notes, fmt.Sprintf("%d entries, %.0f entries/s", res.Items, float64(res.Items)/res.Seconds))
		}
		if len(res.Extra) > 0 {
			keys := make([]string, 0, len(res.Extra))
			for k := range res.Extra {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var parts []string
			for _, k := range keys {
				parts = append(parts, fmt.Sprintf("%s=%.4g", k, res.Extra[k]))
			}
			notes = append(notes, strings.Join(parts, " "))
		}
		for _, n := range notes {
			fmt.Fprintf(w, "%s [%s]: %s\n", res.Workload, res.Set, n)
		}
	}
	if len(r.Ratios) > 0 {
		fmt.Fprintf(w, "\nratios (to %s):\n", r.Ratios[0].B)
		for _, ra := range r.Ratios {
			line := fmt.Sprintf("  %-18s %s / %s: ops/s %.2fx", ra.Workload, ra.A, ra.B, ra.Ops)
			if ra.MB > 0 {
				line += fmt.Sprintf("  MB/s %.2fx", ra.MB)
			}
			fmt.Fprintln(w, line)
		}
	}
	return nil
}

func errorsText(m map[string]int64) string {
	if len(m) == 0 {
		return "0"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s:%d", k, m[k]))
	}
	return strings.Join(parts, ",")
}
