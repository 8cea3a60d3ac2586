//go:build failpoints

package failpoint

import "testing"

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want map[string]float64
		bad  bool
	}{
		{"", map[string]float64{}, false},
		{"after-stage=kill:0.05", map[string]float64{"after-stage": 0.05}, false},
		{"a=kill:1, b=kill:0.5", map[string]float64{"a": 1, "b": 0.5}, false},
		{"a=kill:0", nil, true},
		{"a=kill:2", nil, true},
		{"a=panic:0.5", nil, true},
		{"a", nil, true},
		{"=kill:1", nil, true},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if (err != nil) != tt.bad {
			t.Fatalf("Parse(%q): %v", tt.in, err)
		}
		if tt.bad {
			continue
		}
		if len(got) != len(tt.want) {
			t.Fatalf("Parse(%q) = %v, want %v", tt.in, got, tt.want)
		}
		for k, v := range tt.want {
			if got[k] != v {
				t.Fatalf("Parse(%q) = %v, want %v", tt.in, got, tt.want)
			}
		}
	}
}
