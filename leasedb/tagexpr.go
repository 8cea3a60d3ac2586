package leasedb

import (
	"fmt"
	"strings"
)

// TagExpr is a parsed blob index tag predicate: the x-ms-if-tags condition
// header or the where= expression of Find Blobs by Tags.
//
// Grammar (keywords case-insensitive, whitespace between tokens optional):
//
//	expr    := and { "OR" and }
//	and     := primary { "AND" primary }
//	primary := "(" expr ")" | key op value
//	key     := '"' chars '"'  (a doubled "" is a literal ")  | bare identifier
//	op      := "=" | "<>" | ">" | ">=" | "<" | "<="
//	value   := "'" chars "'"  (a doubled '' is a literal ')
//
// AND binds tighter than OR. Comparisons are ordinal string comparisons; a
// comparison on a tag the blob does not carry is false, whatever the
// operator (so `"k" <> 'v'` needs the tag to exist).
//
// Find Blobs by Tags accepts a subset (ParseTagFilter): no "<>", no OR, the
// pseudo key @container, compared with "=" only, and each key compared
// once, or twice when the two comparisons bound it on either side (a
// range: "Date" > '2023' AND "Date" <= '2024').
type TagExpr struct {
	src  string
	root tagNode
	keys []string
}

// Containers are the only thing @container names; tag keys cannot contain
// '@', so the name cannot collide with a tag.
const containerKey = "@container"

// maxTagExprDepth bounds parenthesis nesting: the parser recurses once per
// level, and a header can be large.
const maxTagExprDepth = 64

type tagNode interface {
	eval(container string, tags map[string]string) bool
}

type tagCmp struct {
	key, op, value string
}

func (c tagCmp) eval(container string, tags map[string]string) bool {
	var v string
	if c.key == containerKey {
		v = container
	} else {
		var ok bool
		if v, ok = tags[c.key]; !ok {
			return false
		}
	}
	switch c.op {
	case "=":
		return v == c.value
	case "<>":
		return v != c.value
	case ">":
		return v > c.value
	case ">=":
		return v >= c.value
	case "<":
		return v < c.value
	case "<=":
		return v <= c.value
	}
	return false
}

type tagAnd struct{ l, r tagNode }

func (n tagAnd) eval(c string, t map[string]string) bool { return n.l.eval(c, t) && n.r.eval(c, t) }

type tagOr struct{ l, r tagNode }

func (n tagOr) eval(c string, t map[string]string) bool { return n.l.eval(c, t) || n.r.eval(c, t) }

// ParseTagCondition parses an x-ms-if-tags header value. The error text
// says where the syntax is wrong; callers report 400 InvalidHeaderValue.
func ParseTagCondition(s string) (*TagExpr, error) { return parseTagExpr(s, false) }

// ParseTagFilter parses the where= expression of Find Blobs by Tags.
func ParseTagFilter(s string) (*TagExpr, error) { return parseTagExpr(s, true) }

// String returns the expression as given.
func (e *TagExpr) String() string { return e.src }

// Keys returns the distinct tag keys the expression compares, in order of
// first appearance (@container excluded).
func (e *TagExpr) Keys() []string { return e.keys }

// Match evaluates the expression against a blob's tags (nil: no tags).
func (e *TagExpr) Match(tags map[string]string) bool { return e.root.eval("", tags) }

// MatchIn evaluates the expression for a blob of the named container
// (Find Blobs by Tags, where @container may appear).
func (e *TagExpr) MatchIn(container string, tags map[string]string) bool {
	return e.root.eval(container, tags)
}

// Lookup returns the values of one tag key that every match has, for an
// index to find the candidates by: the first key compared with "=", else
// the first key compared with a range, bounded by its comparisons. ok is false when the expression has an OR or compares no tag key
// (only @container); container is the value of an "@container =" term, if
// any (every match is in it).
func (e *TagExpr) Lookup() (r TagRange, container string, ok bool) {
	var terms []tagCmp
	var walk func(n tagNode) bool
	walk = func(n tagNode) bool {
		switch n := n.(type) {
		case tagCmp:
			terms = append(terms, n)
			return true
		case tagAnd:
			return walk(n.l) && walk(n.r)
		}
		return false
	}
	if !walk(e.root) {
		return TagRange{}, "", false
	}
	for _, c := range terms {
		if c.key == containerKey && c.op == "=" {
			container = c.value
			break
		}
	}
	key := ""
	for _, c := range terms {
		if c.key == containerKey {
			continue
		}
		if c.op == "=" {
			return TagRange{Key: c.key, Lo: c.value, LoOp: ">=", Hi: c.value, HiOp: "<="}, container, true
		}
		if key == "" && c.op != "<>" {
			key = c.key
		}
	}
	if key == "" {
		return TagRange{}, container, false
	}
	r.Key = key
	for _, c := range terms {
		if c.key != key {
			continue
		}
		// A filter bounds a key at most once on each side (the parser
		// refuses more).
		switch c.op {
		case ">", ">=":
			r.Lo, r.LoOp = c.value, c.op
		case "<", "<=":
			r.Hi, r.HiOp = c.value, c.op
		}
	}
	return r, container, true
}

type tagParser struct {
	s     string
	pos   int
	find  bool
	depth int
	keys  []string
	// sides holds, per key of a tag filter (@container included), the
	// sides its comparisons so far bound: sideEq, sideLo, sideHi.
	sides map[string]uint8
}

// The sides a comparison of a tag filter bounds its key on.
const (
	sideEq uint8 = 1 << iota // =
	sideLo                   // > and >=
	sideHi                   // < and <=
)

// opSide is the side op bounds its key on.
func opSide(op string) uint8 {
	switch op {
	case ">", ">=":
		return sideLo
	case "<", "<=":
		return sideHi
	}
	return sideEq
}

func parseTagExpr(s string, find bool) (*TagExpr, error) {
	p := &tagParser{s: s, find: find}
	p.skipSpace()
	if p.pos == len(p.s) {
		return nil, fmt.Errorf("empty expression")
	}
	root, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos < len(p.s) {
		return nil, p.errorf("unexpected %q", p.rest())
	}
	return &TagExpr{src: s, root: root, keys: p.keys}, nil
}

func (p *tagParser) errorf(format string, args ...any) error {
	return &TagExprError{Pos: p.pos + 1, Msg: fmt.Sprintf(format, args...)}
}

// TagExprError is why a tag expression does not parse: Pos is the
// 1-based character position the parser stopped at, 0 when the fault is
// the expression as a whole (too many tags).
type TagExprError struct {
	Pos int
	Msg string
}

func (e *TagExprError) Error() string {
	if e.Pos == 0 {
		return e.Msg
	}
	return fmt.Sprintf("at position %d: %s", e.Pos, e.Msg)
}

// MaxTagExprTags is how many distinct tag keys one expression may compare
// (Find Blobs by Tags where, x-ms-if-tags): 10, as many as a blob may
// carry.
const MaxTagExprTags = MaxTags

// rest is a short excerpt of the unparsed input for error messages.
func (p *tagParser) rest() string {
	r := p.s[p.pos:]
	if len(r) > 20 {
		r = r[:20] + "..."
	}
	return r
}

func (p *tagParser) skipSpace() {
	for p.pos < len(p.s) && (p.s[p.pos] == ' ' || p.s[p.pos] == '\t' || p.s[p.pos] == '\r' || p.s[p.pos] == '\n') {
		p.pos++
	}
}

// keyword consumes kw (case-insensitive) when it stands alone: followed by
// whitespace, a parenthesis or a quoted key.
func (p *tagParser) keyword(kw string) bool {
	end := p.pos + len(kw)
	if end > len(p.s) || !strings.EqualFold(p.s[p.pos:end], kw) {
		return false
	}
	if end < len(p.s) {
		switch p.s[end] {
		case ' ', '\t', '\r', '\n', '(', '"':
		default:
			return false
		}
	}
	p.pos = end
	return true
}

func (p *tagParser) parseOr() (tagNode, error) {
	left, err := p.parseAnd()
	if err != nil {
		return nil, err
	}
	for {
		p.skipSpace()
		at := p.pos
		if !p.keyword("or") {
			return left, nil
		}
		if p.find {
			p.pos = at
			return nil, p.errorf("OR is not supported in a tag filter")
		}
		right, err := p.parseAnd()
		if err != nil {
			return nil, err
		}
		left = tagOr{left, right}
	}
}

func (p *tagParser) parseAnd() (tagNode, error) {
	left, err := p.parsePrimary()
	if err != nil {
		return nil, err
	}
	for {
		p.skipSpace()
		if !p.keyword("and") {
			return left, nil
		}
		right, err := p.parsePrimary()
		if err != nil {
			return nil, err
		}
		left = tagAnd{left, right}
	}
}

func (p *tagParser) parsePrimary() (tagNode, error) {
	p.skipSpace()
	if p.pos == len(p.s) {
		return nil, p.errorf("expression ends early")
	}
	if p.s[p.pos] != '(' {
		return p.parseComparison()
	}
	p.depth++
	if p.depth > maxTagExprDepth {
		return nil, p.errorf("parentheses nested too deeply")
	}
	p.pos++
	n, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos == len(p.s) || p.s[p.pos] != ')' {
		return nil, p.errorf("expected ')'")
	}
	p.pos++
	p.depth--
	return n, nil
}

func (p *tagParser) parseComparison() (tagNode, error) {
	start := p.pos
	var key string
	if p.s[p.pos] == '"' {
		k, err := p.quoted('"')
		if err != nil {
			return nil, err
		}
		key = k
	} else {
		for p.pos < len(p.s) && !strings.ContainsRune(" \t\r\n=<>()'\"", rune(p.s[p.pos])) {
			p.pos++
		}
		key = p.s[start:p.pos]
		if key == "" {
			return nil, p.errorf("expected a tag key")
		}
	}
	if key == "" {
		p.pos = start
		return nil, p.errorf("empty tag key")
	}
	if strings.HasPrefix(key, "@") {
		if !p.find || key != containerKey {
			p.pos = start
			return nil, p.errorf("unsupported key %q", key)
		}
	} else if err := p.checkTagText(start, key, MaxTagKeyLength, "tag must be between 1 and %d characters in length"); err != nil {
		// A key or value no blob can carry (Set Blob Tags' rules) is
		// refused rather than compared.
		return nil, err
	}
	p.skipSpace()
	var op string
	for _, o := range []string{"<>", ">=", "<=", "=", ">", "<"} {
		if strings.HasPrefix(p.s[p.pos:], o) {
			op = o
			break
		}
	}
	if op == "" {
		return nil, p.errorf("expected a comparison operator")
	}
	if p.find && op == "<>" {
		return nil, p.errorf("<> is not supported in a tag filter")
	}
	if key == containerKey && op != "=" {
		return nil, p.errorf("@container can only be compared with =")
	}
	if p.find {
		// Find Blobs by Tags compares a key once, or twice to bound it
		// on both sides (a range): a second equality, or two bounds on
		// one side ("Rank" > '10' AND "Rank" >= '15'), is refused.
		side, seen := opSide(op), p.sides[key]
		if seen != 0 && (side == sideEq || seen&(side|sideEq) != 0) {
			p.pos = start
			return nil, p.errorf("can't have multiple conditions for a single tag unless they define a range")
		}
		if p.sides == nil {
			p.sides = map[string]uint8{}
		}
		p.sides[key] = seen | side
	}
	p.pos += len(op)
	p.skipSpace()
	if p.pos == len(p.s) || p.s[p.pos] != '\'' {
		return nil, p.errorf("expected a value in single quotes")
	}
	valueAt := p.pos
	value, err := p.quoted('\'')
	if err != nil {
		return nil, err
	}
	if key != containerKey {
		if err := p.checkTagText(valueAt, value, MaxTagValueLength, "tag value must be between 0 and %d characters in length"); err != nil {
			return nil, err
		}
	}
	if key != containerKey {
		seen := false
		for _, k := range p.keys {
			seen = seen || k == key
		}
		if !seen {
			p.keys = append(p.keys, key)
			if len(p.keys) > MaxTagExprTags {
				return nil, &TagExprError{Msg: fmt.Sprintf("there can be at most %d unique tags in a query", MaxTagExprTags)}
			}
		}
	}
	return tagCmp{key: key, op: op, value: value}, nil
}

// checkTagText refuses a key or value longer than max or with a character
// a tag cannot hold; at is where it starts.
func (p *tagParser) checkTagText(at int, s string, max int, tooLong string) error {
	if len(s) > max {
		p.pos = at
		return p.errorf(tooLong, max)
	}
	for i := 0; i < len(s); i++ {
		if !validTagText(s[i : i+1]) {
			p.pos = at
			return p.errorf("'%c' not permitted in tag name or value", s[i])
		}
	}
	return nil
}

// quoted reads a string opened by q at p.pos; a doubled q is a literal q.
func (p *tagParser) quoted(q byte) (string, error) {
	start := p.pos
	p.pos++
	var b strings.Builder
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		if c == q {
			if p.pos+1 < len(p.s) && p.s[p.pos+1] == q {
				b.WriteByte(q)
				p.pos += 2
				continue
			}
			p.pos++
			return b.String(), nil
		}
		b.WriteByte(c)
		p.pos++
	}
	p.pos = start
	return "", p.errorf("unterminated string")
}
