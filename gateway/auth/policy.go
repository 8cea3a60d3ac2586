package auth

import "time"

// ParseTime parses a time in one of the formats a SAS token's st/se accept
// (YYYY-MM-DD, YYYY-MM-DDThh:mmZ, YYYY-MM-DDThh:mm:ss[.fffffff]Z, UTC).
// Set Container ACL takes stored access policy times in the same formats.
func ParseTime(v string) (time.Time, bool) {
	t, err := parseSASTime("time", v)
	return t, err == nil
}
