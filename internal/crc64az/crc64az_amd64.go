//go:build amd64

package crc64az

import (
	"encoding/binary"

	"golang.org/x/sys/cpu"
)

// The ways update can take, fastest last; impl is the one this CPU
// allows, and the tests set it lower to run the others on it too.
const (
	implGeneric = iota // hash/crc64 with the table
	implCLMUL          // PCLMULQDQ on 16-byte blocks (SSE)
	implVPCLMUL        // VPCLMULQDQ on 32-byte blocks (AVX2 encoding)
)

var impl = bestImpl()

func bestImpl() int {
	switch {
	// x/sys/cpu reports VPCLMULQDQ only where the OS keeps AVX-512
	// state; the 256-bit form used needs AVX2 beside it.
	case cpu.X86.HasPCLMULQDQ && cpu.X86.HasAVX512VPCLMULQDQ && cpu.X86.HasAVX2:
		return implVPCLMUL
	case cpu.X86.HasPCLMULQDQ:
		return implCLMUL
	}
	return implGeneric
}

// foldMin and wideMin are the shortest buffers folded: each loop loads
// eight blocks at once (16 bytes, 32 bytes); below foldMin the table is as
// fast.
const (
	foldMin = 128
	wideMin = 256
)

// foldConsts are the multipliers of the fold, each x^n mod P in the
// reflected form. A 16-byte block is H·x^64 + L (H its first 8 bytes, the
// higher powers); moving it d bits on is H·x^(64+d) + L·x^d, so each half
// is multiplied by its power mod P and the two products are added to the
// block d bits on. PCLMULQDQ of two reflected values yields their product
// times x (the reflected product's bit 127 is the unused one), so the
// multiplier for x^n is x^(n-1) mod P.
//
//	[0], [1]: d = 1024, foldCLMUL's eight blocks onto the next eight
//	[2], [3]: d = 128, one 16-byte block onto the next
//	[4], [5]: d = 2048, foldVPCLMUL's eight 32-byte blocks onto the next eight
//	[6], [7]: d = 256, one 32-byte block onto the next
var foldConsts = [8]uint64{
	xnModP(64 + 1024 - 1), xnModP(1024 - 1),
	xnModP(64 + 128 - 1), xnModP(128 - 1),
	xnModP(64 + 2048 - 1), xnModP(2048 - 1),
	xnModP(64 + 256 - 1), xnModP(256 - 1),
}

// foldCLMUL folds p (len a multiple of 16, at least foldMin), whose first 8
// bytes are taken xor crc, to 16 bytes congruent to it mod P: lo its first
// 8 bytes, hi the next, little-endian.
//
//go:noescape
func foldCLMUL(crc uint64, p []byte, k *[8]uint64) (lo, hi uint64)

// foldVPCLMUL is foldCLMUL 32 bytes a lane, for len(p) of at least
// wideMin.
//
//go:noescape
func foldVPCLMUL(crc uint64, p []byte, k *[8]uint64) (lo, hi uint64)

func update(crc uint64, p []byte) uint64 {
	if impl == implGeneric || len(p) < foldMin {
		return generic(crc, p)
	}
	n := len(p) &^ 15
	// The CRC register starts as ^crc (hash/crc64's convention), which
	// is the same as xoring it into the first 8 bytes and starting from 0.
	var lo, hi uint64
	if impl == implVPCLMUL && n >= wideMin {
		lo, hi = foldVPCLMUL(^crc, p[:n], &foldConsts)
	} else {
		lo, hi = foldCLMUL(^crc, p[:n], &foldConsts)
	}
	// The folded 16 bytes are congruent to p[:n] mod P, aligned as its
	// last 16 bytes, so their CRC from a zero register is that of p[:n].
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], lo)
	binary.LittleEndian.PutUint64(b[8:], hi)
	return generic(generic(^uint64(0), b[:]), p[n:])
}
