package leasedb

import "testing"

// TestInlineBytes: only inline extents count (Key "", Data), not staged
// objects nor a page blob's holes (no key, no data).
func TestInlineBytes(t *testing.T) {
	for _, c := range []struct {
		name string
		x    []Extent
		want int64
	}{
		{"none", nil, 0},
		{"staged only", []Extent{{Key: "k1", Size: 100}, {Key: "k2", Size: 5}}, 0},
		{"inline only", []Extent{{Size: 3, Data: []byte("abc")}, {Size: 2, Data: []byte("de")}}, 5},
		{"mixed", []Extent{{Size: 3, Data: []byte("abc")}, {Key: "k", Size: 9000}, {Size: 1, Data: []byte("z")}}, 4},
		{"hole", []Extent{{Size: 512}, {Size: 2, Data: []byte("ab")}}, 2},
	} {
		if got := InlineBytes(c.x); got != c.want {
			t.Errorf("%s: InlineBytes %d, want %d", c.name, got, c.want)
		}
	}
}
