package leasedb

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestDecodeExtentsInline: extents with inline bytes round-trip through
// EncodeExtents and DecodeExtents exactly as through encoding/json, keys
// that contain the inline member's text, quotes or backslashes included.
func TestDecodeExtentsInline(t *testing.T) {
	data := func(n int, c byte) []byte { return bytes.Repeat([]byte{c}, n) }
	tests := []struct {
		name string
		x    []Extent
	}{
		{"one inline", []Extent{{Size: 5, Data: []byte("hello")}}},
		{"binary", []Extent{{Size: 3, Data: []byte{0, 0xff, '"'}}}},
		{"large", []Extent{{Size: 64 << 10, Data: data(64<<10, 0x9c)}}},
		{"mixed", []Extent{{Key: "b/aa/bb/x", Size: 4}, {Size: 2, Data: []byte("ab")}, {Key: "k", Size: 1, BlockID: "QQ=="}, {Size: 1, Data: []byte("z")}}},
		{"tricky keys", []Extent{{Key: `x/a,"d":"AAAA`, Size: 1}, {Size: 1, Data: []byte("q")}, {Key: `x/\",\"d\":\"`, Size: 2}, {Key: "x/ü<&>", Size: 3}}},
		{"inline with block id", []Extent{{Size: 2, Data: []byte("ab"), BlockID: "QQ=="}}},
		{"inline at", []Extent{{Size: 2, Data: []byte("ab"), At: 512}}},
		{"key only", []Extent{{Key: `x/,"d":"`, Size: 9}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := EncodeExtents(tt.x)
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeExtents(s)
			if err != nil {
				t.Fatal(err)
			}
			var want []Extent
			if err := json.Unmarshal([]byte(s), &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(got, tt.x) {
				t.Fatalf("DecodeExtents(%.200s) = %+v, want %+v", s, got, want)
			}
			// The extents' bytes may share one buffer, but an append
			// to one must never write into the next.
			for i, e := range got {
				if cap(e.Data) != len(e.Data) {
					t.Errorf("extent %d: Data of length %d has capacity %d", i, len(e.Data), cap(e.Data))
				}
			}
		})
	}
	// Not the form after all: the plain decoder answers, errors included.
	for _, s := range []string{`[{"k":"","n":1,"d":"AA=="}]`, `[{"k":"","n":1,"d":"!!"}]`, `[{"k":"","n":1,"d":"AA==`} {
		got, err := DecodeExtents(s)
		var want []Extent
		werr := json.Unmarshal([]byte(s), &want)
		if (err == nil) != (werr == nil) || (err == nil && !reflect.DeepEqual(got, want)) {
			t.Fatalf("DecodeExtents(%s) = %+v, %v; encoding/json %+v, %v", s, got, err, want, werr)
		}
	}
}

// TestDecodeExtentsInlineHeapBytes: decoding a 4 KiB inline extent (each
// Get Blob and Get Blob Properties of an inline blob does) allocates the
// 4 KiB of bytes and little else. Before, a rest buffer as long as the
// whole base64 text and a copy of the rest made it about 12 KiB.
func TestDecodeExtentsInlineHeapBytes(t *testing.T) {
	s, err := EncodeExtents([]Extent{{Size: 4096, Data: bytes.Repeat([]byte{7}, 4096)}})
	if err != nil {
		t.Fatal(err)
	}
	if per := heapBytesPerOp(200, func() {
		if x, err := DecodeExtents(s); err != nil || len(x) != 1 || len(x[0].Data) != 4096 {
			t.Fatalf("DecodeExtents: %v, %d extents", err, len(x))
		}
	}); per > 6<<10 {
		t.Errorf("DecodeExtents of a 4 KiB inline extent: %d heap bytes, want at most %d", per, 6<<10)
	}
	if a := testing.AllocsPerRun(50, func() { DecodeExtents(s) }); a > 4 {
		t.Errorf("DecodeExtents of a 4 KiB inline extent: %.0f allocations, want at most 4", a)
	}
}

// TestDecodeInlineForms: near forms of an inline extent (the size's
// digits, an empty or filled Data member, another member after it, a key,
// two extents) decode as encoding/json decodes them, errors included.
func TestDecodeInlineForms(t *testing.T) {
	for _, rest := range []string{
		`[{"k":"","n":4096,"d":""}]`, `[{"k":"","n":1,"d":""}]`, `[{"k":"","n":0,"d":""}]`,
		`[{"k":"","n":01,"d":""}]`, `[{"k":"","n":-1,"d":""}]`, `[{"k":"","n":,"d":""}]`,
		`[{"k":"","n":1e3,"d":""}]`, `[{"k":"","n":1234567890123456789,"d":""}]`,
		`[{"k":"","n":2,"d":"","id":"QQ=="}]`, `[{"k":"x","n":2,"d":""}]`,
		`[{"k":"","n":2,"d":""},{"k":"","n":2,"d":""}]`,
	} {
		for _, d := range []string{`"d":""`, `"d":"YWI="`, `"d":"YWI"`, `"d":"YW\nI="`, `"d":null`} {
			s := strings.ReplaceAll(rest, `"d":""`, d)
			decodeLikeJSON(t, s)
		}
	}
}

// BenchmarkDecodeExtentsInline: a 4 KiB inline extent, as Get Blob
// decodes it, against encoding/json alone.
func BenchmarkDecodeExtentsInline(b *testing.B) {
	s, _ := EncodeExtents([]Extent{{Size: 4096, Data: bytes.Repeat([]byte{7}, 4096)}})
	b.Run("DecodeExtents", func(b *testing.B) {
		for b.Loop() {
			if _, err := DecodeExtents(s); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			var x []Extent
			if err := json.Unmarshal([]byte(s), &x); err != nil {
				b.Fatal(err)
			}
		}
	})
}
