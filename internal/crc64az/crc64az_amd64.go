//go:build amd64

package crc64az

import (
	"encoding/binary"

	"golang.org/x/sys/cpu"
)

// useCLMUL says whether update folds with PCLMULQDQ; the tests turn it off
// to run the generic path on this CPU too.
var useCLMUL = cpu.X86.HasPCLMULQDQ

// foldMin is the shortest buffer folded: the loop loads eight 16-byte
// blocks at once; below it the table is as fast.
const foldMin = 128

// foldConsts are the multipliers of the fold, each x^n mod P in the
// reflected form. A 16-byte block is H·x^64 + L (H its first 8 bytes, the
// higher powers); moving it d bits on is H·x^(64+d) + L·x^d, so each half
// is multiplied by its power mod P and the two products are added to the
// block d bits on. PCLMULQDQ of two reflected values yields their product
// times x (the reflected product's bit 127 is the unused one), so the
// multiplier for x^n is x^(n-1) mod P.
//
//	[0], [1]: d = 1024, the eight blocks of the main loop onto the next eight
//	[2], [3]: d = 128, one block onto the next
var foldConsts = [4]uint64{
	xnModP(64 + 1024 - 1), xnModP(1024 - 1),
	xnModP(64 + 128 - 1), xnModP(128 - 1),
}

// foldCLMUL folds p (len a multiple of 16, at least foldMin), whose first 8
// bytes are taken xor crc, to 16 bytes congruent to it mod P: lo its first
// 8 bytes, hi the next, little-endian.
//
//go:noescape
func foldCLMUL(crc uint64, p []byte, k *[4]uint64) (lo, hi uint64)

func update(crc uint64, p []byte) uint64 {
	if !useCLMUL || len(p) < foldMin {
		return generic(crc, p)
	}
	n := len(p) &^ 15
	// The CRC register starts as ^crc (hash/crc64's convention), which
	// is the same as xoring it into the first 8 bytes and starting from 0.
	lo, hi := foldCLMUL(^crc, p[:n], &foldConsts)
	// The folded 16 bytes are congruent to p[:n] mod P, aligned as its
	// last 16 bytes, so their CRC from a zero register is that of p[:n].
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], lo)
	binary.LittleEndian.PutUint64(b[8:], hi)
	return generic(generic(^uint64(0), b[:]), p[n:])
}
