package leasedb

import (
	"bytes"
	"encoding/json"
	"reflect"
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
