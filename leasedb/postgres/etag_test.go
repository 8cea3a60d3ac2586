package postgres

import (
	"fmt"
	"math"
	"testing"
)

func TestFormatETag(t *testing.T) {
	for _, n := range []int64{0, 1, 9, 10, 0xABCDEF, 1 << 40, math.MaxInt64 - etagBase, -etagBase - 1, math.MinInt64 + etagBase} {
		if got, want := formatETag(n), fmt.Sprintf(`"0x%X"`, etagBase+n); got != want {
			t.Errorf("formatETag(%d) = %s, want %s", n, got, want)
		}
	}
	if a := testing.AllocsPerRun(100, func() { formatETag(12345) }); a != 1 {
		t.Errorf("formatETag: %v allocations, want 1", a)
	}
}
