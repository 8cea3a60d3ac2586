package leasedb

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestEncodeExtentsSameAsJSON: EncodeExtents writes byte for byte what
// json.Marshal writes, for every field, both signs and the extremes of the
// numbers, and keys and block ids json escapes (which take json.Marshal's
// own path).
func TestEncodeExtentsSameAsJSON(t *testing.T) {
	tests := [][]Extent{
		{{Size: 4096, Data: bytes.Repeat([]byte{'x'}, 4096)}},
		{{Size: 1, Data: []byte{0}}},
		{{Size: 2, Data: []byte{0xfb, 0xff}}},
		{{Size: 769, Data: bytes.Repeat([]byte{0xfe}, 769)}}, // one past a chunk of writeBase64
		{{Size: 768, Data: bytes.Repeat([]byte{0x01}, 768)}},
		{{Size: 1536, Data: bytes.Repeat([]byte{0x80}, 1536)}},
		{{Key: "b/aa/bb/0123456789abcdef", Size: 4 << 20}},
		{{Key: "k", Size: 1, BlockID: "QUFBQQ=="}, {Key: "k2", Size: 7, BlockID: "+/+/"}},
		{{Key: "p", Size: 512, At: 1024, Off: 4096}, {Size: 512, At: -1, Off: math.MinInt64}},
		{{Size: math.MaxInt64}, {Size: math.MinInt64}, {Size: 0}},
		{{Size: 2, Data: []byte("ab"), BlockID: "QQ==", At: 9}},
		{{Key: "", Size: 0, Data: []byte{}}}, // empty Data is omitted, as omitempty does
		{{Key: `x/a,"d":"AAAA`, Size: 1}, {Size: 1, Data: []byte("q")}},
		{{Key: `x\y`, Size: 1}},
		{{Key: "x/ü", Size: 3}},
		{{Key: "a<b>&c", Size: 3}},
		{{Key: "tab\there", Size: 3}},
		{{Key: "del\x7f", Size: 3}},
		{{Key: "ok", Size: 3, BlockID: "\xff"}},
		{{Key: "ok", Size: 3, BlockID: "a\u2028b"}},
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		x := make([]Extent, 1+rnd.IntN(4))
		for i := range x {
			e := &x[i]
			if rnd.IntN(2) == 0 {
				e.Data = make([]byte, rnd.IntN(3000))
				for j := range e.Data {
					e.Data[j] = byte(rnd.Uint32())
				}
				e.Size = int64(len(e.Data))
			} else {
				e.Key = "b/" + string(rune('a'+rnd.IntN(26))) + "/key"
				e.Size = rnd.Int64() - math.MaxInt64/2
			}
			if rnd.IntN(3) == 0 {
				e.BlockID = "QkxPQ0s" + string(rune('A'+rnd.IntN(26))) + "=="
			}
			if rnd.IntN(3) == 0 {
				e.At = rnd.Int64N(1 << 40)
			}
			if rnd.IntN(3) == 0 {
				e.Off = rnd.Int64N(1 << 40)
			}
		}
		tests = append(tests, x)
	}
	for _, x := range tests {
		want, err := json.Marshal(x)
		if err != nil {
			t.Fatal(err)
		}
		got, err := EncodeExtents(x)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Fatalf("EncodeExtents(%+.200v)\n= %.300s\nwant %.300s", x, got, want)
		}
	}
}

// TestEncodeExtentsHeapBytes: a Put Blob's 4 KiB inline extent is encoded
// into one string of the base64's size and nothing else (through
// encoding/json it took 12 KiB in 3 allocations: Marshal's copy of its
// buffer, the string, the extents' interface box).
func TestEncodeExtentsHeapBytes(t *testing.T) {
	x := []Extent{{Size: 4096, Data: bytes.Repeat([]byte{7}, 4096)}}
	if a := testing.AllocsPerRun(50, func() { EncodeExtents(x) }); a != 1 {
		t.Errorf("EncodeExtents of a 4 KiB inline extent: %.0f allocations, want 1", a)
	}
	const n = 200
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	for range n {
		if s, err := EncodeExtents(x); err != nil || len(s) < 5461 {
			t.Fatalf("EncodeExtents: %v, %d bytes", err, len(s))
		}
	}
	runtime.ReadMemStats(&m1)
	if per := (m1.TotalAlloc - m0.TotalAlloc) / n; per > 6<<10 {
		t.Errorf("EncodeExtents of a 4 KiB inline extent: %d heap bytes, want at most %d", per, 6<<10)
	}
	staged := []Extent{{Key: "b/aa/bb/0123456789abcdef0123456789abcdef", Size: 4 << 20, BlockID: "QkxPQ0sx"}}
	if a := testing.AllocsPerRun(50, func() { EncodeExtents(staged) }); a != 1 {
		t.Errorf("EncodeExtents of a staged extent: %.0f allocations, want 1", a)
	}
}

// BenchmarkEncodeExtents: a Put Blob's one 4 KiB inline extent and a
// staged one, against json.Marshal.
func BenchmarkEncodeExtents(b *testing.B) {
	for _, c := range []struct {
		name string
		x    []Extent
	}{
		{"inline4k", []Extent{{Size: 4096, Data: bytes.Repeat([]byte{7}, 4096)}}},
		{"staged", []Extent{{Key: "b/aa/bb/0123456789abcdef0123456789abcdef", Size: 4 << 20}}},
	} {
		b.Run(c.name+"/EncodeExtents", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				EncodeExtents(c.x)
			}
		})
		b.Run(c.name+"/json.Marshal", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if bs, err := json.Marshal(c.x); err != nil || len(bs) == 0 {
					b.Fatal(err)
				}
			}
		})
	}
}
