package gateway

import (
	"net/url"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/blobgw/blobgw/svcerr"
)

// parseQuery reads the request's query the way every later step must see
// it: names lowercased (Azure treats query parameter names without regard
// to case), one value per name. It refuses, with 400, what would otherwise
// be decided by chance or dropped in silence:
//   - a query that does not parse (a bad %-escape, a ';' separator):
//     net/url would drop the pair and the request would run without it;
//   - one name given twice, in any case, with different values
//     ("comp=list&Comp=acl" would pick List Blobs or Get Container ACL by
//     map order); identical repeats are one parameter;
//   - a name or value that is not UTF-8 after decoding, or holds a NUL:
//     no store keeps such a prefix, marker or filter (names cannot hold
//     NUL), and nothing Azure names is spelled so.
//
// The names are checked in sorted order so the error names the same
// parameter every time.
func parseQuery(rawQuery string) (map[string]string, error) {
	out := map[string]string{}
	if rawQuery == "" {
		return out, nil
	}
	vals, err := url.ParseQuery(rawQuery)
	if err != nil {
		// Azure's message for the code; what failed goes in Reason.
		e := svcerr.New(svcerr.InvalidQueryParameterValue)
		e.Details = [][2]string{{"Reason", "The query string is not a valid sequence of name=value pairs (" + err.Error() + ")."}}
		return nil, e
	}
	names := make([]string, 0, len(vals))
	for k := range vals {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !utf8.ValidString(k) || strings.IndexByte(k, 0) >= 0 {
			return nil, svcerr.Query(svcerr.InvalidQueryParameterValue, strings.ToValidUTF8(k, "\uFFFD"), "",
				"the parameter name is not valid UTF-8 or holds a NUL")
		}
		lk := strings.ToLower(k)
		for _, v := range vals[k] {
			if !utf8.ValidString(v) {
				return nil, svcerr.Query(svcerr.InvalidQueryParameterValue, k, strings.ToValidUTF8(v, "\uFFFD"),
					"the value is not valid UTF-8")
			}
			if strings.IndexByte(v, 0) >= 0 {
				return nil, svcerr.Query(svcerr.InvalidQueryParameterValue, k, strings.ReplaceAll(v, "\x00", "\\0"),
					"the value holds a NUL character")
			}
			if prev, dup := out[lk]; dup && prev != v {
				return nil, svcerr.Query(svcerr.InvalidQueryParameterValue, k, v,
					"the parameter is given more than once with different values")
			}
			out[lk] = v
		}
	}
	return out, nil
}
