package auth

import (
	"net/http"
	"testing"
)

// TestCanonicalizedHeaderValues pins what both x-ms-* canonicalizations
// write for a header's values: each trimmed, comma-separated, the
// spellings of one name merged in byte order of the spelling.
func TestCanonicalizedHeaderValues(t *testing.T) {
	tests := []struct {
		h    http.Header
		want string
	}{
		{http.Header{}, "\n"},
		{http.Header{"X-Ms-Meta-A": {" 1 ", "2"}, "x-ms-meta-a": {"3"}}, "x-ms-meta-a:1,2,3\n"},
		{http.Header{"X-Ms-Date": {" d"}, "X-Ms-Meta-B": {}}, "x-ms-date:d\nx-ms-meta-b:\n"},
		{http.Header{"X-Ms-Meta-Ä": {"w "}, "x-ms-meta-ä": {" z"}}, "x-ms-meta-ä:w,z\n"},
	}
	for _, tt := range tests {
		var fast, sorted stsBuilder
		writeCanonicalizedHeaders(&fast, tt.h, canon{})
		writeCanonicalizedHeadersSorted(&sorted, tt.h, canon{})
		if fast.String() != tt.want || sorted.String() != tt.want {
			t.Errorf("%v: %q and %q, want %q", tt.h, fast.String(), sorted.String(), tt.want)
		}
	}
}
