package leasedb

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"unsafe"
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
		{{Size: 769, Data: bytes.Repeat([]byte{0xfe}, 769)}}, // one past 256 groups of three bytes
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
		if b, err := AppendExtents([]byte("pre"), x); err != nil || string(b) != "pre"+string(want) {
			t.Fatalf("AppendExtents(pre, %+.200v) = %.300s, %v\nwant pre%.300s", x, b, err, want)
		}
	}
	if b, err := AppendExtents([]byte("pre"), nil); err != nil || string(b) != "pre[]" {
		t.Fatalf("AppendExtents(pre, nil) = %s, %v", b, err)
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
	if per := heapBytesPerOp(200, func() {
		if s, err := EncodeExtents(x); err != nil || len(s) < 5461 {
			t.Fatalf("EncodeExtents: %v, %d bytes", err, len(s))
		}
	}); per > 6<<10 {
		t.Errorf("EncodeExtents of a 4 KiB inline extent: %d heap bytes, want at most %d", per, 6<<10)
	}
	staged := []Extent{{Key: "b/aa/bb/0123456789abcdef0123456789abcdef", Size: 4 << 20, BlockID: "QkxPQ0sx"}}
	if a := testing.AllocsPerRun(50, func() { EncodeExtents(staged) }); a != 1 {
		t.Errorf("EncodeExtents of a staged extent: %.0f allocations, want 1", a)
	}
	// Into a buffer with room: nothing.
	buf := make([]byte, 0, 8<<10)
	if a := testing.AllocsPerRun(50, func() { buf, _ = AppendExtents(buf[:0], x) }); a != 0 {
		t.Errorf("AppendExtents of a 4 KiB inline extent into a buffer with room: %.0f allocations, want 0", a)
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

// TestDecodeExtentsSameAsJSON: DecodeExtents answers what json.Unmarshal
// answers (the extents, or an error), for what EncodeExtents writes and for
// texts the shortcut must hand on: escapes, non-ASCII, numbers JSON or
// int64 refuses, whitespace, other member orders and spellings, garbage.
func TestDecodeExtentsSameAsJSON(t *testing.T) {
	for _, s := range extentTexts(t) {
		decodeLikeJSON(t, s)
	}
}

// extentTexts are TestDecodeExtentsSameAsJSON's texts.
func extentTexts(t *testing.T) []string {
	texts := []string{
		`[]`, `[{"k":"b/aa/bb/x","n":4096}]`, `[{"k":"","n":0}]`, `[{"k":"k","n":-5,"id":"QQ==","a":7,"o":9}]`,
		`[{"k":"a","n":1},{"k":"b","n":2,"id":"x"},{"k":"c","n":3,"o":4}]`,
		`[{"k":"a","n":999999999999999999}]`, `[{"k":"a","n":9223372036854775807}]`, `[{"k":"a","n":9223372036854775808}]`,
		`[{"k":"a","n":-9223372036854775808}]`, `[{"k":"a","n":01}]`, `[{"k":"a","n":-0}]`, `[{"k":"a","n":1.0}]`,
		`[{"k":"a","n":1e3}]`, `[{"k":"a","n":1E3}]`, `[{"k":"a","n":-}]`, `[{"k":"a","n":}]`, `[{"k":"a","n":"1"}]`,
		`[{"k":"a\"b","n":1}]`, `[{"k":"a\\b","n":1}]`, `[{"k":"a\u0041","n":1}]`, `[{"k":"ü","n":1}]`, "[{\"k\":\"\xff\",\"n\":1}]",
		"[{\"k\":\"a\tb\",\"n\":1}]", `[{"k":"<&>","n":1}]`, `[ {"k":"a","n":1}]`, `[{"k": "a","n":1}]`, `[{"k":"a","n":1} ]`,
		`[{"n":1,"k":"a"}]`, `[{"K":"a","n":1}]`, `[{"k":"a","n":1,"x":2}]`, `[{"k":"a","n":1,"o":2,"a":3}]`,
		`[{"k":"a","n":1,"id":null}]`, `[{"k":"a","n":1}`, `{"k":"a","n":1}]`, `[{"k":"a","n":1}]x`, `[{"k":"a","n":1},]`,
		`[{"k":"a","n":1}{"k":"b","n":2}]`, `[{"k":"a"}]`, `[{"k":"a","n":1,"k":"b"}]`, `null`, ``, `[`, `[{}]`, `[{"k":"a","n":1},{}]`,
		`[{"k":"","n":2,"d":"YWI="}]`, `[{"k":"a","n":1,"a":0}]`, `[{"k":"a","n":1,"id":""}]`, `[{"k":"a","n":1,"id":"a","a":-1,"o":-2}]`,
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		x := make([]Extent, 1+rnd.IntN(5))
		for i := range x {
			x[i] = Extent{Key: "b/" + string(rune('a'+rnd.IntN(26))), Size: rnd.Int64() >> rnd.IntN(63), At: rnd.Int64N(3) << 40, Off: rnd.Int64N(2) * rnd.Int64()}
			if rnd.IntN(2) == 0 {
				x[i].Size = -x[i].Size
			}
			if rnd.IntN(3) == 0 {
				x[i].BlockID = "QkxP" + string(rune('A'+rnd.IntN(26)))
			}
		}
		s, err := EncodeExtents(x)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, s)
	}
	return texts
}

// TestDecodeExtentsNoData: DecodeExtentsNoData gives what DecodeExtents
// gives less every Data, for TestDecodeExtentsSameAsJSON's texts and
// inline ones (whose base64 it skips, so it may accept bad base64 that
// DecodeExtents refuses, never anything else); its strings survive the
// reuse of the buffer the text was a view of; a 4 KiB inline extent
// costs the extents' one allocation, none of its bytes.
func TestDecodeExtentsNoData(t *testing.T) {
	texts := append(extentTexts(t), `[{"k":"","n":4,"d":"YWJjZA=="}]`, `[{"k":"a","n":1},{"k":"","n":2,"d":"YWI=","id":"QQ=="}]`,
		`[{"k":"","n":2,"d":"Y\u0057I="}]`, `[{"k":"","n":2,"d":"!!!!"}]`, `[{"k":"","n":2,"d":""}]`, `[{"k":"","n":2,"d":"YWI=}]`)
	for _, s := range texts {
		want, werr := DecodeExtents(s)
		got, err := DecodeExtentsNoData(s)
		for i := range want {
			want[i].Data = nil
		}
		switch {
		case werr == nil && (err != nil || !reflect.DeepEqual(got, want)):
			t.Errorf("DecodeExtentsNoData(%s) = %+v, %v; want %+v", s, got, err, want)
		case werr != nil && err == nil && !strings.Contains(s, `"d":`):
			t.Errorf("DecodeExtentsNoData(%s) = %+v; DecodeExtents refuses it: %v", s, got, werr)
		}
	}
	buf := []byte(`[{"k":"b/aa/key","n":3,"id":"QkxP"},{"k":"","n":2,"d":"YWI="}]`)
	x, err := DecodeExtentsNoData(unsafe.String(&buf[0], len(buf)))
	for i := range buf {
		buf[i] = 'z'
	}
	if err != nil || len(x) != 2 || x[0].Key != "b/aa/key" || x[0].BlockID != "QkxP" || x[1].Size != 2 || x[1].Data != nil {
		t.Fatalf("DecodeExtentsNoData of a reused buffer: %+v, %v", x, err)
	}
	s, _ := EncodeExtents([]Extent{{Size: 4096, Data: bytes.Repeat([]byte("x"), 4096)}})
	if per := heapBytesPerOp(100, func() { DecodeExtentsNoData(s) }); per > 256 {
		t.Errorf("DecodeExtentsNoData of a 4 KiB inline extent: %d heap bytes, want at most 256", per)
	}
	if a := testing.AllocsPerRun(50, func() { DecodeExtentsNoData(s) }); a > 1 {
		t.Errorf("DecodeExtentsNoData of a 4 KiB inline extent: %.0f allocations, want 1", a)
	}
}

// TestDecodeRowAllocs: a staged extent and empty metadata, as every read
// of a blob row decodes them, take one allocation each (9 and 5 through
// encoding/json).
func TestDecodeRowAllocs(t *testing.T) {
	s, _ := EncodeExtents([]Extent{{Key: "b/aa/bb/0123456789abcdef0123456789abcdef", Size: 4096}})
	if a := testing.AllocsPerRun(50, func() {
		if x, err := DecodeExtents(s); err != nil || len(x) != 1 || x[0].Size != 4096 {
			t.Fatalf("DecodeExtents(%s): %+v %v", s, x, err)
		}
	}); a > 1 {
		t.Errorf("DecodeExtents of a staged extent: %.0f allocations, want 1", a)
	}
	if a := testing.AllocsPerRun(50, func() {
		if m, err := DecodeMetadata("{}"); err != nil || m == nil || len(m) != 0 {
			t.Fatalf("DecodeMetadata({}): %v %v", m, err)
		}
	}); a > 1 {
		t.Errorf("DecodeMetadata of no metadata: %.0f allocations, want 1", a)
	}
}

// TestExtentFieldsKnown: encodeExtentsFast and decodeExtentsFast spell out
// Extent's fields and JSON tags; a field added to Extent without them
// would be dropped from every row written through the fast path. This
// fails first, naming what to teach extentenc.go.
func TestExtentFieldsKnown(t *testing.T) {
	known := []string{"Key k", "Size n", "Data d,omitempty", "BlockID id,omitempty", "At a,omitempty", "Off o,omitempty"}
	typ := reflect.TypeOf(Extent{})
	var got []string
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		got = append(got, f.Name+" "+f.Tag.Get("json"))
	}
	if !reflect.DeepEqual(got, known) {
		t.Fatalf("Extent's fields are %q; extentenc.go encodes and decodes %q: update both codecs (and this list)", got, known)
	}
}

// heapBytesPerOp is the heap bytes one op allocates, over n ops: the
// least of five measures. runtime.MemStats counts every goroutine's
// allocations, and another's (the runtime's, a goroutine an earlier test
// left) only ever adds to a measure, while an op that allocates more than
// its ceiling does so in every one.
func heapBytesPerOp(n int, op func()) uint64 {
	least := uint64(math.MaxUint64)
	for range 5 {
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		for range n {
			op()
		}
		runtime.ReadMemStats(&m1)
		least = min(least, (m1.TotalAlloc-m0.TotalAlloc)/uint64(n))
	}
	return least
}

// decodeLikeJSON fails t unless DecodeExtents answers s as encoding/json
// does: both refuse it, or both give the same extents (none as nil).
func decodeLikeJSON(t *testing.T, s string) {
	t.Helper()
	got, err := DecodeExtents(s)
	var want []Extent
	werr := json.Unmarshal([]byte(s), &want)
	if len(want) == 0 {
		want = nil
	}
	if (err == nil) != (werr == nil) || err == nil && !reflect.DeepEqual(got, want) {
		t.Errorf("DecodeExtents(%.200s) = %+v, %v; encoding/json %+v, %v", s, got, err, want, werr)
	}
}
