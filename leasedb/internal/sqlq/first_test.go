package sqlq

import "testing"

func TestFirst(t *testing.T) {
	a, b := &struct{ n int }{1}, &struct{ n int }{2}
	for _, tt := range []struct {
		name string
		rows []*struct{ n int }
		want *struct{ n int }
	}{
		{"no row", nil, nil},
		{"empty", []*struct{ n int }{}, nil},
		{"one row", []*struct{ n int }{a}, a},
		{"the first of two", []*struct{ n int }{a, b}, a},
	} {
		if got := First(tt.rows); got != tt.want {
			t.Errorf("%s: First = %v, want %v", tt.name, got, tt.want)
		}
	}
}
