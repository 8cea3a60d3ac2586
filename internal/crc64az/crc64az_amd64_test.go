package crc64az

import "testing"

// TestFoldConsts checks the multipliers the assembly reads, each x^(n-1)
// mod P for a power x^n of the fold (see foldConsts), against hash/crc64.
func TestFoldConsts(t *testing.T) {
	powers := [len(foldConsts)]int{
		64 + 1024, 1024,
		64 + 128, 128,
		64 + 2048, 2048,
		64 + 256, 256,
	}
	for i, n := range powers {
		if got, w := foldConsts[i], powModP(t, n-1); got != w {
			t.Errorf("foldConsts[%d] = %#x, want x^%d mod P = %#x", i, got, n-1, w)
		}
	}
}
