package leasedb

import (
	"testing"

	"github.com/blobgw/blobgw/svcerr"
)

// TestCheckIncrementalTarget: Incremental Copy Blob's destination rule.
func TestCheckIncrementalTarget(t *testing.T) {
	const s1, s2 = "2026-01-01T00:00:00.0000000Z", "2026-01-02T00:00:00.0000000Z"
	inc := func(src, snap string) *Blob {
		return &Blob{Type: "PageBlob", Copy: &CopyInfo{Incremental: true, SourceName: src, SourceSnapshot: snap}}
	}
	req := &CopyInfo{Incremental: true, SourceName: "a/c/disk", SourceSnapshot: s2}
	tests := []struct {
		name string
		old  *Blob
		want svcerr.Code // "" for allowed
	}{
		{"no destination", nil, ""},
		{"an older snapshot of the same source", inc("a/c/disk", s1), ""},
		{"the same snapshot again", inc("a/c/disk", s2), svcerr.IncrementalCopyOfEarlierSnapshotNotAllowed},
		{"a newer snapshot copied already", inc("a/c/disk", "2026-01-03T00:00:00.0000000Z"), svcerr.IncrementalCopyOfEarlierSnapshotNotAllowed},
		{"another source", inc("a/c/other", s1), svcerr.IncrementalCopyBlobMismatch},
		{"a plain page blob", &Blob{Type: "PageBlob"}, svcerr.IncrementalCopyBlobMismatch},
		{"a plain copy of a page blob", &Blob{Type: "PageBlob", Copy: &CopyInfo{Status: "success"}}, svcerr.IncrementalCopyBlobMismatch},
		{"a block blob", &Blob{Type: "BlockBlob"}, svcerr.InvalidBlobType},
	}
	for _, tc := range tests {
		err := checkIncrementalTarget(tc.old, req)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.want != "" && !svcerr.HasCode(err, tc.want):
			t.Errorf("%s: got %v, want %s", tc.name, err, tc.want)
		}
	}
}
