package leasedb

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Both drivers store metadata, extents and tags as the same JSON text, so a
// database moved between them, or read by an operator, means one thing.

// EncodeMetadata stores a nil map like an empty one ("{}"); it reads back
// as an empty, non-nil map.
func EncodeMetadata(m map[string]string) (string, error) {
	if len(m) == 0 {
		return "{}", nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("leasedb: encode metadata: %w", err)
	}
	return string(b), nil
}

// DecodeMetadata reads EncodeMetadata's form.
func DecodeMetadata(s string) (map[string]string, error) {
	if s == "{}" {
		// Most rows: encoding/json would take 5 allocations to say so.
		return map[string]string{}, nil
	}
	m := map[string]string{}
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("leasedb: decode metadata: %w", err)
	}
	return m, nil
}

// EncodeExtents stores no extents as "[]"; they read back as nil.
func EncodeExtents(x []Extent) (string, error) {
	if len(x) == 0 {
		return "[]", nil
	}
	if s, ok := encodeExtentsFast(x); ok {
		return s, nil
	}
	b, err := json.Marshal(x)
	if err != nil {
		return "", fmt.Errorf("leasedb: encode extents: %w", err)
	}
	return string(b), nil
}

// DecodeExtents reads EncodeExtents's form.
func DecodeExtents(s string) ([]Extent, error) {
	if strings.Contains(s, inlineMember) {
		if x, ok := decodeInlineExtents(s); ok {
			return x, nil
		}
	}
	if s == "[]" {
		return nil, nil
	}
	if x, ok := decodeExtentsFast(s); ok {
		return x, nil
	}
	var x []Extent
	if err := json.Unmarshal([]byte(s), &x); err != nil {
		return nil, fmt.Errorf("leasedb: decode extents: %w", err)
	}
	if len(x) == 0 {
		return nil, nil
	}
	return x, nil
}

// inlineMember starts an inline extent's bytes in EncodeExtents's form:
// json.Marshal writes Extent.Data after Size, as standard base64 in a
// string with no escapes.
const inlineMember = `,"d":"`

// decodeInlineExtents decodes extents holding inline bytes without handing
// those bytes to encoding/json, whose validity scan and string unquoting
// of a few KiB of base64 cost more gateway CPU per Get Blob than the
// backend read they replace. Each Data member is cut out and decoded as
// base64 directly; what is left (the small rest of each extent, with an
// empty Data) goes to json.Unmarshal. The sequence ,"d":" can only be a
// Data member: a '"' right after ',' is never inside a string (a quote
// there is escaped) and never closes one (a 'd' cannot follow a closed
// string). ok is false when the text is not that form after all; the
// caller then decodes it the plain way.
//
// A first pass finds the members, so that the rest and all the decoded
// bytes take one allocation each of the size they need: every Get Blob
// and Get Blob Properties of an inline blob decodes its row, and the
// garbage of a few KiB per request (a rest buffer as long as the whole
// text, then a copy of it, then one buffer per member) was what made an
// inline read cost more gateway CPU than a read from a disk object.
func decodeInlineExtents(s string) (x []Extent, ok bool) {
	type member struct{ from, to, n int } // s[from:to] is base64 of n bytes
	var small [2]member
	members := small[:0]
	b64Len, dataLen := 0, 0
	for p := 0; ; {
		i := strings.Index(s[p:], inlineMember)
		if i < 0 {
			break
		}
		from := p + i + len(inlineMember)
		j := strings.IndexByte(s[from:], '"')
		if j < 0 {
			return nil, false
		}
		members = append(members, member{from: from, to: from + j})
		b64Len += j
		dataLen += base64.StdEncoding.DecodedLen(j)
		p = from + j
	}
	if len(members) == 0 {
		return nil, false
	}
	data := make([]byte, dataLen)
	rest := make([]byte, 0, len(s)-b64Len)
	prev, at := 0, 0
	for k := range members {
		m := &members[k]
		rest = append(rest, s[prev:m.from]...)
		n, err := base64.StdEncoding.Decode(data[at:], []byte(s[m.from:m.to]))
		if err != nil || n == 0 {
			return nil, false
		}
		m.n = n
		at += n
		prev = m.to // the closing quote stays: the member reads as "d":""
	}
	rest = append(rest, s[prev:]...)
	if len(members) == 1 {
		// A Put Blob's one inline extent needs no JSON decoder at all.
		if size, ok := oneInlineSize(rest); ok {
			n := members[0].n
			return []Extent{{Size: size, Data: data[:n:n]}}, true
		}
	}
	if err := json.Unmarshal(rest, &x); err != nil {
		return nil, false
	}
	// An empty Data member decodes to an empty, non-nil slice: those are
	// the extents whose bytes were cut out, in order. Each gets its own
	// part of data, capped so that an append to one never writes into the
	// next.
	k, at := 0, 0
	for i := range x {
		if x[i].Data != nil {
			if k == len(members) {
				return nil, false
			}
			n := members[k].n
			x[i].Data = data[at : at+n : at+n]
			at += n
			k++
		}
	}
	return x, k == len(members) && len(x) > 0
}

// oneInlineSize reads the rest of a single inline extent as json.Marshal
// writes it, [{"k":"","n":SIZE,"d":""}], with its Data member emptied; ok
// is false for any other text (json.Unmarshal then decodes it).
func oneInlineSize(rest []byte) (size int64, ok bool) {
	const head, tail = `[{"k":"","n":`, `,"d":""}]`
	if len(rest) <= len(head)+len(tail) || string(rest[:len(head)]) != head || string(rest[len(rest)-len(tail):]) != tail {
		return 0, false
	}
	digits := rest[len(head) : len(rest)-len(tail)]
	if len(digits) > 18 || digits[0] == '0' {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		size = size*10 + int64(c-'0')
	}
	return size, true
}

// DecodeTags reads a tags column ("" or NULL: no tags → nil).
func DecodeTags(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("leasedb: decode tags: %w", err)
	}
	if len(m) == 0 {
		return nil, nil
	}
	return m, nil
}

// EncodeCopy stores no copy information as "". The completion time is
// kept in UTC to the microsecond, like the stores' other times.
func EncodeCopy(c *CopyInfo) (string, error) {
	if c == nil {
		return "", nil
	}
	v := *c
	v.Completed = v.Completed.UTC().Truncate(time.Microsecond)
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("leasedb: encode copy info: %w", err)
	}
	return string(b), nil
}

// DecodeCopy reads EncodeCopy's form ("" or NULL: nil).
func DecodeCopy(s string) (*CopyInfo, error) {
	if s == "" {
		return nil, nil
	}
	c := &CopyInfo{}
	if err := json.Unmarshal([]byte(s), c); err != nil {
		return nil, fmt.Errorf("leasedb: decode copy info: %w", err)
	}
	c.Completed = c.Completed.UTC()
	return c, nil
}

// NameKeys collects backend keys once per blob name (Tx.DeleteContainer's
// answer: a key two names share appears twice, see Tx.ReleaseKeys).
type NameKeys struct {
	Keys []string
	seen map[[2]string]bool
}

// Add records that blob name references key.
func (n *NameKeys) Add(name, key string) {
	if n.seen == nil {
		n.seen = map[[2]string]bool{}
	}
	if p := [2]string{name, key}; !n.seen[p] {
		n.seen[p] = true
		n.Keys = append(n.Keys, key)
	}
}
