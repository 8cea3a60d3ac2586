package leasedb

import (
	"encoding/base64"
	"strconv"
	"strings"
)

// encodeExtentsFast writes extents in exactly the form json.Marshal gives
// them (Extent's field order and tags, omitempty, standard base64 for
// Data), into one string of the size it needs. Every Put Blob, Put Block
// List and Append Block writes its row's extents: through encoding/json a
// 4 KiB inline extent cost a reflection walk, the base64 in encoding/json's
// buffer, a copy of it as Marshal's result and another as the string
// (12 KiB in 3 allocations per put); here it is the string alone. ok is false when a
// key or block id holds a byte encoding/json would escape (a quote, a
// backslash, a control byte, <, >, &, or non-ASCII, which it checks as
// UTF-8): the caller then encodes with json.Marshal, so the two forms
// never differ.
func encodeExtentsFast(x []Extent) (s string, ok bool) {
	n := 1 // [ and ], less the first comma
	for i := range x {
		e := &x[i]
		if !plainJSON(e.Key) || !plainJSON(e.BlockID) {
			return "", false
		}
		n += len(`,{"k":"","n":}`) + len(e.Key) + intLen(e.Size)
		if len(e.Data) > 0 {
			n += len(`,"d":""`) + base64.StdEncoding.EncodedLen(len(e.Data))
		}
		if e.BlockID != "" {
			n += len(`,"id":""`) + len(e.BlockID)
		}
		if e.At != 0 {
			n += len(`,"a":`) + intLen(e.At)
		}
		if e.Off != 0 {
			n += len(`,"o":`) + intLen(e.Off)
		}
	}
	var b strings.Builder
	b.Grow(n)
	var num [20]byte
	b.WriteByte('[')
	for i := range x {
		e := &x[i]
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"k":"`)
		b.WriteString(e.Key)
		b.WriteString(`","n":`)
		b.Write(strconv.AppendInt(num[:0], e.Size, 10))
		if len(e.Data) > 0 {
			b.WriteString(`,"d":"`)
			writeBase64(&b, e.Data)
			b.WriteByte('"')
		}
		if e.BlockID != "" {
			b.WriteString(`,"id":"`)
			b.WriteString(e.BlockID)
			b.WriteByte('"')
		}
		if e.At != 0 {
			b.WriteString(`,"a":`)
			b.Write(strconv.AppendInt(num[:0], e.At, 10))
		}
		if e.Off != 0 {
			b.WriteString(`,"o":`)
			b.Write(strconv.AppendInt(num[:0], e.Off, 10))
		}
		b.WriteByte('}')
	}
	b.WriteByte(']')
	return b.String(), true
}

// writeBase64 appends the standard base64 of p to b through a buffer on
// the stack, in whole groups of three bytes so the pieces join without
// padding between them.
func writeBase64(b *strings.Builder, p []byte) {
	var buf [1024]byte
	const chunk = len(buf) / 4 * 3 // 768 bytes in, 1,024 out
	for len(p) > 0 {
		m := min(len(p), chunk)
		base64.StdEncoding.Encode(buf[:], p[:m])
		b.Write(buf[:base64.StdEncoding.EncodedLen(m)])
		p = p[m:]
	}
}

// plainJSON reports whether encoding/json writes s inside its quotes
// unchanged: printable ASCII other than the quote, the backslash and the
// three bytes it escapes for HTML (<, >, &).
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// intLen is the length of v in decimal.
func intLen(v int64) int {
	var num [20]byte
	return len(strconv.AppendInt(num[:0], v, 10))
}
