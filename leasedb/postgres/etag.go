package postgres

import "strconv"

// formatETag is an ETag of the sequence's value n: fmt.Sprintf(`"0x%X"`,
// etagBase+n) in one allocation (the string) instead of two (the boxed
// argument too), on the path of every write.
func formatETag(n int64) string {
	var buf [24]byte
	b := strconv.AppendInt(append(buf[:0], `"0x`...), etagBase+n, 16)
	for i := 3; i < len(b); i++ {
		if c := b[i]; 'a' <= c && c <= 'f' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(append(b, '"'))
}
