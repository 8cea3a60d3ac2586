package crc64az

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc64"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// reference is hash/crc64 with a table of its own, independent of the
// package's.
var reference = crc64.MakeTable(0x9A6C9329AC4BC9B5)

func want(crc uint64, p []byte) uint64 { return crc64.Update(crc, reference, p) }

// allPaths runs f on each way update can take on this CPU (the folding
// ones where it has them, and the generic one).
func allPaths(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	ps := paths()
	for _, name := range slices.Sorted(maps.Keys(ps)) {
		t.Run(name, func(t *testing.T) {
			defer restore()
			ps[name]()
			f(t)
		})
	}
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestKnownValue pins the CRC64 of a fixed text to the value hash/crc64
// gives with Azure's polynomial, through Update, Checksum and New.
func TestKnownValue(t *testing.T) {
	msg := bytes.Repeat([]byte("The quick brown fox jumps over the lazy dog. "), 100)
	w := want(0, msg)
	allPaths(t, func(t *testing.T) {
		if got := Update(0, msg); got != w {
			t.Fatalf("Update = %#x, want %#x", got, w)
		}
		if got := Checksum(msg); got != w {
			t.Fatalf("Checksum = %#x, want %#x", got, w)
		}
		h := New()
		h.Write(msg[:7])
		h.Write(msg[7:])
		if got := h.Sum64(); got != w {
			t.Fatalf("New().Sum64 = %#x, want %#x", got, w)
		}
		ref := crc64.New(reference)
		ref.Write(msg)
		if got, wantSum := h.Sum([]byte{1}), ref.Sum([]byte{1}); !bytes.Equal(got, wantSum) {
			t.Fatalf("Sum = %x, want %x", got, wantSum)
		}
		if h.Size() != ref.Size() || h.BlockSize() != ref.BlockSize() {
			t.Fatalf("Size, BlockSize = %d, %d; want %d, %d", h.Size(), h.BlockSize(), ref.Size(), ref.BlockSize())
		}
		h.Reset()
		if got := h.Sum64(); got != 0 {
			t.Fatalf("after Reset Sum64 = %#x, want 0", got)
		}
	})
}

// TestEveryLength covers every length 0..2048 from a random starting crc,
// and random lengths up to 1 MiB.
func TestEveryLength(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	buf := randBytes(r, 1<<20+64)
	allPaths(t, func(t *testing.T) {
		for n := 0; n <= 2048; n++ {
			crc := r.Uint64()
			if got, w := Update(crc, buf[:n]), want(crc, buf[:n]); got != w {
				t.Fatalf("len %d crc %#x: got %#x, want %#x", n, crc, got, w)
			}
		}
		for range 200 {
			n, off, crc := r.IntN(1<<20), r.IntN(64), r.Uint64()
			if got, w := Update(crc, buf[off:off+n]), want(crc, buf[off:off+n]); got != w {
				t.Fatalf("len %d offset %d crc %#x: got %#x, want %#x", n, off, crc, got, w)
			}
		}
	})
}

// TestEveryAlignment starts the slice at every offset 0..63 of an
// allocation, for lengths around the folding thresholds.
func TestEveryAlignment(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	buf := randBytes(r, 64+4096)
	lengths := []int{0, 1, 15, 16, 17, 127, 128, 129, 143, 144, 255, 256, 257, 271, 511, 512, 513, 1023, 1024, 1039, 4096}
	allPaths(t, func(t *testing.T) {
		for off := range 64 {
			for _, n := range lengths {
				p := buf[off : off+n]
				crc := r.Uint64()
				if got, w := Update(crc, p), want(crc, p); got != w {
					t.Fatalf("offset %d len %d: got %#x, want %#x", off, n, got, w)
				}
			}
		}
	})
}

// TestChaining splits buffers at random points: Update over the pieces
// equals one Update over the whole.
func TestChaining(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	allPaths(t, func(t *testing.T) {
		for range 300 {
			p := randBytes(r, r.IntN(20000))
			crc := r.Uint64()
			w := want(crc, p)
			got := crc
			for rest := p; len(rest) > 0; {
				k := min(len(rest), r.IntN(3000))
				got = Update(got, rest[:k])
				rest = rest[k:]
			}
			if got != w {
				t.Fatalf("len %d in pieces: got %#x, want %#x", len(p), got, w)
			}
		}
	})
}

// TestAllZerosAndOnes covers the inputs where a missed xor of the starting
// crc or a dropped half-block would hide least well.
func TestAllZerosAndOnes(t *testing.T) {
	allPaths(t, func(t *testing.T) {
		for _, fill := range []byte{0, 0xff} {
			for _, n := range []int{128, 144, 1024, 4096, 65536} {
				p := bytes.Repeat([]byte{fill}, n)
				for _, crc := range []uint64{0, ^uint64(0), 1 << 63, 1} {
					if got, w := Update(crc, p), want(crc, p); got != w {
						t.Fatalf("fill %#x len %d crc %#x: got %#x, want %#x", fill, n, crc, got, w)
					}
				}
			}
		}
	})
}

// powModP is x^n mod P computed by hash/crc64 alone: a message of k bytes
// whose only set bit is its first is x^(8k-1), so its CRC from a zero
// register (no final xor) is x^(8k-1+64) mod P. It takes n = 8k+63.
func powModP(t *testing.T, n int) uint64 {
	t.Helper()
	if n < 71 || (n-63)%8 != 0 {
		t.Fatalf("x^%d is not the CRC of a whole number of bytes", n)
	}
	msg := make([]byte, (n-63)/8)
	msg[0] = 1
	return ^crc64.Update(^uint64(0), reference, msg)
}

// TestXnModP checks xnModP, the source of the fold's multipliers, against
// hash/crc64 itself (powModP).
func TestXnModP(t *testing.T) {
	for n := 71; n <= 4096+63; n += 8 {
		if got, w := xnModP(n), powModP(t, n); got != w {
			t.Fatalf("xnModP(%d) = %#x, want %#x", n, got, w)
		}
	}
	if got := xnModP(0); got != 1<<63 {
		t.Errorf("xnModP(0) = %#x, want 1<<63 (x^0)", got)
	}
	if got := xnModP(64); got != Poly {
		t.Errorf("xnModP(64) = %#x, want Poly", got)
	}
}

// FuzzUpdate compares Update with hash/crc64 on any bytes, starting crc
// and split point, on every path.
func FuzzUpdate(f *testing.F) {
	f.Add(uint64(0), []byte("hello"), uint(0))
	f.Add(^uint64(0), bytes.Repeat([]byte{0xa5}, 300), uint(129))
	f.Add(uint64(12345), make([]byte, 2000), uint(1000))
	f.Fuzz(func(t *testing.T, crc uint64, p []byte, split uint) {
		k := int(split % uint(len(p)+1))
		w := want(crc, p)
		ps := paths()
		for _, name := range slices.Sorted(maps.Keys(ps)) {
			ps[name]()
			got := Update(Update(crc, p[:k]), p[k:])
			one := Update(crc, p)
			restore()
			if got != w || one != w {
				t.Fatalf("%s: len %d split %d: got %#x / %#x, want %#x", name, len(p), k, one, got, w)
			}
		}
	})
}

func TestUpdateNoAllocs(t *testing.T) {
	p := make([]byte, 64<<10)
	allPaths(t, func(t *testing.T) {
		if n := testing.AllocsPerRun(20, func() { Update(0, p[:1000]) }); n != 0 {
			t.Fatalf("Update allocates %v times", n)
		}
	})
}

var sink uint64

// BenchmarkCRC64 compares hash/crc64 with its table (what the gateway used)
// and this package on each of its paths, at the sizes a gateway write sees.
func BenchmarkCRC64(b *testing.B) {
	ps := paths()
	for _, size := range []int{4 << 10, 64 << 10, 4 << 20} {
		p := make([]byte, size)
		binary.LittleEndian.PutUint64(p, 42)
		b.Run(fmt.Sprintf("%dKiB/hash-crc64", size>>10), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				sink = crc64.Update(sink, reference, p)
			}
		})
		for _, name := range slices.Sorted(maps.Keys(ps)) {
			if name == "generic" {
				continue // hash/crc64 above
			}
			b.Run(fmt.Sprintf("%dKiB/%s", size>>10, name), func(b *testing.B) {
				defer restore()
				ps[name]()
				b.SetBytes(int64(size))
				for b.Loop() {
					sink = Update(sink, p)
				}
			})
		}
	}
}
