package gateway

import (
	"net/http"
	"testing"

	"github.com/blobgw/blobgw/svcerr"
)

// TestParseRange: the Range / x-ms-range forms of a Get Blob, on a blob of
// 100 bytes unless size says otherwise. A malformed header reads the whole
// blob (HTTP says to ignore it); only a start past the end (or an empty
// suffix) is 416 InvalidRange.
func TestParseRange(t *testing.T) {
	const whole = int64(100)
	cases := []struct {
		name       string
		rng, xms   string
		size       int64
		start, end int64
		ranged     bool
		invalid    bool
	}{
		{name: "none", size: whole, start: 0, end: 100},
		{name: "closed", rng: "bytes=10-19", size: whole, start: 10, end: 20, ranged: true},
		{name: "one byte", rng: "bytes=0-0", size: whole, start: 0, end: 1, ranged: true},
		{name: "open ended", rng: "bytes=90-", size: whole, start: 90, end: 100, ranged: true},
		{name: "end clamped", rng: "bytes=50-1000", size: whole, start: 50, end: 100, ranged: true},
		{name: "last byte", rng: "bytes=99-99", size: whole, start: 99, end: 100, ranged: true},
		{name: "spaces trimmed", rng: "  bytes=1-2 ", size: whole, start: 1, end: 3, ranged: true},
		{name: "suffix", rng: "bytes=-10", size: whole, start: 90, end: 100, ranged: true},
		{name: "suffix longer than blob", rng: "bytes=-500", size: whole, start: 0, end: 100, ranged: true},
		{name: "x-ms-range wins", rng: "bytes=0-9", xms: "bytes=20-29", size: whole, start: 20, end: 30, ranged: true},
		{name: "x-ms-range alone", xms: "bytes=5-", size: whole, start: 5, end: 100, ranged: true},
		{name: "malformed x-ms-range ignored, not Range", rng: "bytes=0-9", xms: "bytes=x", size: whole, start: 0, end: 100},

		{name: "other unit ignored", rng: "items=0-9", size: whole, start: 0, end: 100},
		{name: "multiple ranges ignored", rng: "bytes=0-9,20-29", size: whole, start: 0, end: 100},
		{name: "no dash ignored", rng: "bytes=10", size: whole, start: 0, end: 100},
		{name: "non-numeric start ignored", rng: "bytes=a-9", size: whole, start: 0, end: 100},
		{name: "negative start ignored", rng: "bytes=-5-9", size: whole, start: 0, end: 100},
		{name: "non-numeric end ignored", rng: "bytes=0-z", size: whole, start: 0, end: 100},
		{name: "end before start ignored", rng: "bytes=9-0", size: whole, start: 0, end: 100},
		{name: "non-numeric suffix ignored", rng: "bytes=-x", size: whole, start: 0, end: 100},
		{name: "empty spec ignored", rng: "bytes=-", size: whole, start: 0, end: 100},

		{name: "start at size", rng: "bytes=100-", size: whole, invalid: true},
		{name: "start past size", rng: "bytes=150-200", size: whole, invalid: true},
		{name: "zero suffix", rng: "bytes=-0", size: whole, invalid: true},
		{name: "suffix of empty blob", rng: "bytes=-5", size: 0, invalid: true},
		{name: "range of empty blob", rng: "bytes=0-", size: 0, invalid: true},
		{name: "no range on empty blob", size: 0, start: 0, end: 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			if c.rng != "" {
				h.Set("Range", c.rng)
			}
			if c.xms != "" {
				h.Set("x-ms-range", c.xms)
			}
			start, end, ranged, err := parseRange(h, c.size)
			if c.invalid {
				if !svcerr.HasCode(err, svcerr.InvalidRange) {
					t.Fatalf("err = %v, want InvalidRange", err)
				}
				if e, _ := svcerr.As(err); e.Status() != http.StatusRequestedRangeNotSatisfiable {
					t.Fatalf("status = %d, want 416", e.Status())
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if start != c.start || end != c.end || ranged != c.ranged {
				t.Fatalf("got [%d, %d) ranged=%v, want [%d, %d) ranged=%v", start, end, ranged, c.start, c.end, c.ranged)
			}
		})
	}
}
