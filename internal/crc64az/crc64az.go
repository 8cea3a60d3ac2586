// Package crc64az computes Azure Storage's CRC64, the digest of
// x-ms-content-crc64 (Put Blob, Put Block, Append Block, Put Page) and of
// x-ms-range-get-content-crc64: the reflected polynomial 0x9A6C9329AC4BC9B5,
// with hash/crc64's conventions (the value passed and returned is the
// finished CRC, so Update calls chain).
//
// On amd64 with PCLMULQDQ the bulk of a buffer is folded with carry-less
// multiplication, 32 bytes a lane with VPCLMULQDQ where the CPU has it
// (crc64az_amd64.go); everywhere else, and for short buffers, it is
// hash/crc64 with the table. It never allocates and has no
// state of its own beyond the tables built at start.
package crc64az

import (
	"hash"
	"hash/crc64"
)

// Poly is Azure's CRC64 polynomial in the reflected form hash/crc64 takes
// (bit i is the coefficient of x^(63-i); x^64 is implied).
const Poly = 0x9A6C9329AC4BC9B5

// Size is the size of the CRC64 in bytes.
const Size = 8

var table = crc64.MakeTable(Poly)

// Update returns the result of adding the bytes in p to crc: the same as
// crc64.Update(crc, crc64.MakeTable(Poly), p).
func Update(crc uint64, p []byte) uint64 {
	return update(crc, p)
}

// Checksum returns the CRC64 of p.
func Checksum(p []byte) uint64 { return update(0, p) }

// New returns a hash.Hash64 computing the CRC64, a drop-in for
// crc64.New(crc64.MakeTable(Poly)).
func New() hash.Hash64 { return new(digest) }

type digest struct{ crc uint64 }

func (d *digest) Size() int      { return Size }
func (d *digest) BlockSize() int { return 1 }
func (d *digest) Reset()         { d.crc = 0 }
func (d *digest) Sum64() uint64  { return d.crc }

// Write implements io.Writer; it never fails.
func (d *digest) Write(p []byte) (int, error) {
	d.crc = update(d.crc, p)
	return len(p), nil
}

// Sum appends the CRC big-endian, as hash/crc64's Sum does.
func (d *digest) Sum(in []byte) []byte {
	s := d.crc
	return append(in, byte(s>>56), byte(s>>48), byte(s>>40), byte(s>>32), byte(s>>24), byte(s>>16), byte(s>>8), byte(s))
}

// generic is the portable path.
func generic(crc uint64, p []byte) uint64 { return crc64.Update(crc, table, p) }

// xnModP returns x^n mod P in the reflected form: x^0 is bit 63, and
// multiplying by x shifts right, reducing x^64 to Poly.
func xnModP(n int) uint64 {
	v := uint64(1) << 63
	for range n {
		if v&1 != 0 {
			v = v>>1 ^ Poly
		} else {
			v >>= 1
		}
	}
	return v
}
