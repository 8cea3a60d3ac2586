package config

import (
	"math"
	"strings"
	"testing"
)

func TestParseGCPercent(t *testing.T) {
	tests := []struct {
		in   string
		want int
		err  bool
	}{
		{"100", 100, false},
		{"400", 400, false},
		{" 200 ", 200, false},
		{"off", -1, false},
		{"OFF", -1, false},
		{"10", 10, false},
		{"100000", 100000, false},
		{"9", 0, true},
		{"0", 0, true},
		{"-1", 0, true},
		{"100001", 0, true},
		{"", 0, true},
		{"4e2", 0, true},
		{"400%", 0, true},
		{"on", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseGCPercent(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseGCPercent(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.err)
		}
		if err != nil && !strings.Contains(err.Error(), "go_gc_percent") {
			t.Errorf("ParseGCPercent(%q): error %q does not name the setting", tt.in, err)
		}
	}
}

func TestParseMemoryLimit(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  bool
	}{
		{"off", math.MaxInt64, false},
		{"Off", math.MaxInt64, false},
		{"512MiB", 512 << 20, false},
		{"1GiB", 1 << 30, false},
		{"2TiB", 2 << 40, false},
		{"65536KiB", 64 << 20, false},
		{"67108864", 64 << 20, false},
		{"67108864B", 64 << 20, false},
		{"63MiB", 0, true},      // under the floor
		{"1MiB", 0, true},       // under the floor
		{"0", 0, true},          // under the floor
		{"1GB", 0, true},        // GOMEMLIMIT's units are binary
		{"1gib", 0, true},       // and case-sensitive, as the runtime's
		{"1.5GiB", 0, true},     // whole numbers only
		{"-1GiB", 0, true},      // negative
		{"GiB", 0, true},        // no number
		{"", 0, true},           // empty
		{"9000000TiB", 0, true}, // overflows int64
	}
	for _, tt := range tests {
		got, err := ParseMemoryLimit(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseMemoryLimit(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.err)
		}
		if err != nil && !strings.Contains(err.Error(), "go_memory_limit") {
			t.Errorf("ParseMemoryLimit(%q): error %q does not name the setting", tt.in, err)
		}
	}
}

// Validate takes the defaults, refuses bad values with the setting's name
// and refuses a collector off with no memory limit.
func TestValidateGC(t *testing.T) {
	tests := []struct {
		percent, limit string
		want           string // "" valid, else a part of the error
	}{
		{DefaultGCPercent, DefaultMemoryLimit, ""},
		{"400", "1GiB", ""},
		{"off", "1GiB", ""},
		{"off", "off", "needs a go_memory_limit"},
		{"abc", "off", "go_gc_percent"},
		{"400", "lots", "go_memory_limit"},
	}
	for _, tt := range tests {
		c := Default()
		c.GoGCPercent, c.GoMemoryLimit = tt.percent, tt.limit
		err := c.Validate()
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("go_gc_percent %q, go_memory_limit %q: Validate() = %v; want %q", tt.percent, tt.limit, err, tt.want)
		}
	}
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	p, l := c.GCSettings()
	if want, _ := ParseGCPercent(DefaultGCPercent); p != want {
		t.Errorf("default GCSettings percent %d, want %d", p, want)
	}
	if want, _ := ParseMemoryLimit(DefaultMemoryLimit); l != want {
		t.Errorf("default GCSettings limit %d, want %d", l, want)
	}
}
