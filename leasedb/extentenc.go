package leasedb

import (
	"encoding/base64"
	"strconv"
	"strings"
	"unsafe"
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
	n, ok := extentsLen(x)
	if !ok {
		return "", false
	}
	b := appendExtentsFast(make([]byte, 0, n), x)
	return unsafe.String(unsafe.SliceData(b), len(b)), true
}

// extentsLen is the length of encodeExtentsFast's text of x; ok is false
// where encodeExtentsFast refuses x.
func extentsLen(x []Extent) (n int, ok bool) {
	n = 1 // [ and ], less the first comma
	for i := range x {
		e := &x[i]
		if !plainJSON(e.Key) || !plainJSON(e.BlockID) {
			return 0, false
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
	return n, true
}

// appendExtentsFast appends encodeExtentsFast's text of x to b, whose
// keys and block ids extentsLen accepted.
func appendExtentsFast(b []byte, x []Extent) []byte {
	b = append(b, '[')
	for i := range x {
		e := &x[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"k":"`...)
		b = append(b, e.Key...)
		b = append(b, `","n":`...)
		b = strconv.AppendInt(b, e.Size, 10)
		if len(e.Data) > 0 {
			b = append(b, `,"d":"`...)
			b = base64.StdEncoding.AppendEncode(b, e.Data)
			b = append(b, '"')
		}
		if e.BlockID != "" {
			b = append(b, `,"id":"`...)
			b = append(b, e.BlockID...)
			b = append(b, '"')
		}
		if e.At != 0 {
			b = append(b, `,"a":`...)
			b = strconv.AppendInt(b, e.At, 10)
		}
		if e.Off != 0 {
			b = append(b, `,"o":`...)
			b = strconv.AppendInt(b, e.Off, 10)
		}
		b = append(b, '}')
	}
	return append(b, ']')
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

// decodeExtentsFast reads extents in the form encodeExtentsFast (and
// json.Marshal) writes them:
// [{"k":"KEY","n":SIZE[,"d":"BASE64"][,"id":"ID"][,"a":AT][,"o":OFF]},...]
// with no whitespace, members in that order, strings of printable ASCII
// without escapes, integers without leading zeros. Every read of a blob
// row decodes its extents (Get Blob, the row a Put Blob replaces, each row
// of a List Blobs page): through encoding/json a single staged extent took
// about 3 µs and 9 allocations, and an inline extent's bytes went through
// its validity scan and string unquoting as well; here it is one
// allocation for the extents and one for each inline extent's bytes
// (capped, so an append to one never writes into another). ok is false
// for any other text, which the caller hands to json.Unmarshal, so what
// decodes here decodes there to the same extents.
func decodeExtentsFast(s string) (x []Extent, ok bool) {
	return decodeExtentsForm(s, true)
}

// decodeExtentsForm is decodeExtentsFast, with data false
// DecodeExtentsNoData's: an inline extent's base64 is skipped (neither
// decoded nor checked; Data stays nil), and every key and block id is a
// copy, sharing no memory with s.
func decodeExtentsForm(s string, data bool) (x []Extent, ok bool) {
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		return nil, false
	}
	n := strings.Count(s, `{"k":`)
	if n == 0 {
		return nil, false
	}
	x = make([]Extent, 0, n)
	p := 1
	for {
		var e Extent
		if p, ok = member(s, p, `{"k":`); !ok {
			return nil, false
		}
		if e.Key, p, ok = plainString(s, p); !ok {
			return nil, false
		}
		if p, ok = member(s, p, `,"n":`); !ok {
			return nil, false
		}
		if e.Size, p, ok = plainInt(s, p); !ok {
			return nil, false
		}
		if q, ok := member(s, p, `,"d":`); ok {
			if !data {
				if p, ok = skipBase64(s, q); !ok {
					return nil, false
				}
			} else if e.Data, p, ok = plainBase64(s, q); !ok {
				return nil, false
			}
		}
		if q, ok := member(s, p, `,"id":`); ok {
			if e.BlockID, p, ok = plainString(s, q); !ok {
				return nil, false
			}
		}
		if q, ok := member(s, p, `,"a":`); ok {
			if e.At, p, ok = plainInt(s, q); !ok {
				return nil, false
			}
		}
		if q, ok := member(s, p, `,"o":`); ok {
			if e.Off, p, ok = plainInt(s, q); !ok {
				return nil, false
			}
		}
		if p >= len(s) || s[p] != '}' {
			return nil, false
		}
		if !data {
			e.Key, e.BlockID = strings.Clone(e.Key), strings.Clone(e.BlockID)
		}
		x = append(x, e)
		p++
		if p == len(s)-1 {
			return x, true
		}
		if s[p] != ',' {
			return nil, false
		}
		p++
	}
}

// member reports whether s continues at p with lit, and where after it.
func member(s string, p int, lit string) (int, bool) {
	if !strings.HasPrefix(s[p:], lit) {
		return p, false
	}
	return p + len(lit), true
}

// plainString reads a JSON string at p that plainJSON would accept (so
// json.Unmarshal reads the same bytes), returning it and where after it.
func plainString(s string, p int) (string, int, bool) {
	if p >= len(s) || s[p] != '"' {
		return "", p, false
	}
	end := strings.IndexByte(s[p+1:], '"')
	if end < 0 {
		return "", p, false
	}
	v := s[p+1 : p+1+end]
	if !plainJSON(v) {
		return "", p, false
	}
	return v, p + 2 + end, true
}

// plainBase64 reads at p a JSON string of standard base64 that decodes
// without error (so it holds nothing but the alphabet and padding, an
// escape included, but for CR and LF, which the decoder skips and JSON
// refuses), returning the bytes and where after it. An empty string is left to encoding/json, which
// decodes it to an empty, non-nil slice.
func plainBase64(s string, p int) ([]byte, int, bool) {
	if p >= len(s) || s[p] != '"' {
		return nil, p, false
	}
	end := strings.IndexByte(s[p+1:], '"')
	if end <= 0 {
		return nil, p, false
	}
	v := s[p+1 : p+1+end]
	if strings.IndexByte(v, '\r') >= 0 || strings.IndexByte(v, '\n') >= 0 {
		return nil, p, false // the decoder skips them; in JSON they are an error
	}
	buf := make([]byte, base64.StdEncoding.DecodedLen(len(v)))
	n, err := base64.StdEncoding.Decode(buf, []byte(v))
	if err != nil {
		return nil, p, false
	}
	return buf[:n:n], p + 2 + end, true
}

// skipBase64 is plainBase64 without decoding: where after the string at
// p, which must be a non-empty JSON string without escapes.
func skipBase64(s string, p int) (int, bool) {
	if p >= len(s) || s[p] != '"' {
		return p, false
	}
	end := strings.IndexByte(s[p+1:], '"')
	if end <= 0 || strings.IndexByte(s[p+1:p+1+end], '\\') >= 0 {
		return p, false
	}
	return p + 2 + end, true
}

// plainInt reads a JSON integer at p: 0, or an optional '-' and at most 18
// digits without a leading zero (so it cannot overflow), with no fraction
// or exponent after it.
func plainInt(s string, p int) (int64, int, bool) {
	neg := p < len(s) && s[p] == '-'
	if neg {
		p++
	}
	start := p
	var v int64
	for p < len(s) && s[p] >= '0' && s[p] <= '9' {
		v = v*10 + int64(s[p]-'0')
		p++
	}
	digits := p - start
	switch {
	case digits == 0 || digits > 18 || digits > 1 && s[start] == '0' || neg && v == 0:
		return 0, p, false
	case p < len(s) && (s[p] == '.' || s[p] == 'e' || s[p] == 'E'):
		return 0, p, false
	}
	if neg {
		v = -v
	}
	return v, p, true
}
