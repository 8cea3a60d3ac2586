package leasedb

import (
	"encoding/json"
	"fmt"
	"slices"
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

// AppendExtents appends EncodeExtents's text of x to dst, for a driver
// that writes it straight into its own buffer (no string of it).
func AppendExtents(dst []byte, x []Extent) ([]byte, error) {
	if len(x) == 0 {
		return append(dst, "[]"...), nil
	}
	if n, ok := extentsLen(x); ok {
		return appendExtentsFast(slices.Grow(dst, n), x), nil
	}
	b, err := json.Marshal(x)
	if err != nil {
		return dst, fmt.Errorf("leasedb: encode extents: %w", err)
	}
	return append(dst, b...), nil
}

// DecodeExtents reads EncodeExtents's form: the form it writes itself
// through decodeExtentsFast, any other text through encoding/json.
func DecodeExtents(s string) ([]Extent, error) {
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
	// As decodeExtentsFast gives them: encoding/json leaves the room of
	// the base64's decoded length behind a Data slice.
	for i := range x {
		x[i].Data = x[i].Data[:len(x[i].Data):len(x[i].Data)]
	}
	return x, nil
}

// DecodeExtentsNoData is DecodeExtents without the inline bytes: every
// extent as DecodeExtents gives it, but for Data, nil (an inline extent
// reads as a hole: Key "", its Size). The bytes' base64 is not decoded
// (nor checked), and the strings returned share no memory with s, which
// may be a view of a buffer the caller reuses. It is for a row whose
// keys and sizes matter and whose bytes are never read (the row a plain
// Put Blob replaces: LockForReplace with ReadKeysIfPlain).
func DecodeExtentsNoData(s string) ([]Extent, error) {
	if s == "[]" {
		return nil, nil
	}
	if x, ok := decodeExtentsForm(s, false); ok {
		return x, nil
	}
	// Text the fast form refuses here it refuses with the bytes too:
	// encoding/json reads it (into strings of its own).
	x, err := DecodeExtents(s)
	for i := range x {
		x[i].Data = nil
	}
	return x, err
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
