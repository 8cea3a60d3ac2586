package plancase

import (
	"reflect"
	"testing"
)

func TestWorst(t *testing.T) {
	tests := []struct {
		name  string
		notes []struct {
			mode, name  string
			limit, cost int
		}
		what string
		want []string
	}{
		{name: "none", what: "rows read", want: []string{}},
		{
			name: "largest per family, sorted",
			notes: []struct {
				mode, name  string
				limit, cost int
			}{
				{"custom plan", "snapshots/p=d/a", 10, 15},
				{"custom plan", "snapshots/p=/b", 10, 36},
				{"custom plan", "none/x", 10, 5},
				{"generic plan", "none/x", 1, 7},
				{"custom plan", "none/y", 10, 2},
			},
			what: "rows read",
			want: []string{
				"custom plan, include none, limit 10: at most 0.50×limit rows read",
				"custom plan, include snapshots, limit 10: at most 3.60×limit rows read",
				"generic plan, include none, limit 1: at most 7.00×limit rows read",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := Worst{}
			for _, n := range tc.notes {
				w.Note(n.mode, n.name, n.limit, n.cost)
			}
			if got := w.Lines(tc.what); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Lines = %q, want %q", got, tc.want)
			}
		})
	}
}
