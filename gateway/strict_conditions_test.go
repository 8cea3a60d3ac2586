package gateway_test

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// TestStrictConditionsEveryWrite: with strict_conditions every blob write
// that takes the conditional headers refuses a combination the
// conditional-header rules forbid on writes (If-Match with
// If-Modified-Since here) with 400 MultipleConditionHeadersNotSupported,
// not only the writes of content: Lease Blob, Snapshot Blob, Set Blob
// Tags (its x-ms-blob-if-* spelling), Set Blob Tags of a version, Delete
// Blob of a snapshot or of a version went ahead, both conditions passing.
// Without the setting the same requests succeed.
func TestStrictConditionsEveryWrite(t *testing.T) {
	forKinds(t, []string{"sqlite", "postgres"}, func(t *testing.T, kind string) {
		for _, strict := range []bool{true, false} {
			testStrictConditions(t, kind, strict)
		}
	})
}

func testStrictConditions(t *testing.T, kind string, strict bool) {
	b, _ := setupVersioned(t, kind, "strict", setupOpts{strict: strict})
	ctx := context.Background()
	first := b.uploadVersion(t, "strict", "b", []byte("v1"))
	b.uploadVersion(t, "strict", "b", []byte("v2"))
	snap, err := blockClient(b.client, "strict", "b").CreateSnapshot(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat)
	etagOf := func(path string) string {
		resp, _ := b.do(t, "HEAD", path, "", nil)
		wantStatus(t, resp, http.StatusOK, "", "HEAD "+path)
		return resp.Header.Get("ETag")
	}
	// Two conditions that both pass, a combination the write rules
	// forbid: If-Match with If-Modified-Since.
	std := func(etag string, extra map[string]string) map[string]string {
		h := map[string]string{"If-Match": etag, "If-Modified-Since": old}
		for k, v := range extra {
			h[k] = v
		}
		return h
	}
	blobTag := func(etag string) map[string]string {
		return map[string]string{"x-ms-blob-if-match": etag, "x-ms-blob-if-modified-since": old}
	}
	cur, ofFirst := etagOf("strict/b"), etagOf("strict/b?versionid="+first)
	tags := `<Tags><TagSet><Tag><Key>k</Key><Value>v</Value></Tag></TagSet></Tags>`
	cases := []struct {
		what, method, path, body string
		hdr                      map[string]string
		ok                       int
	}{
		{"Snapshot Blob", "PUT", "strict/b?comp=snapshot", "", std(cur, nil), http.StatusCreated},
		{"Set Blob Tags", "PUT", "strict/b?comp=tags", tags, blobTag(cur), http.StatusNoContent},
		{"Set Blob Tags of a version", "PUT", "strict/b?comp=tags&versionid=" + first, tags, blobTag(ofFirst), http.StatusNoContent},
		{"Delete Blob of a snapshot", "DELETE", "strict/b?snapshot=" + *snap.Snapshot, "", std(cur, nil), http.StatusAccepted},
		{"Delete Blob of a version", "DELETE", "strict/b?versionid=" + first, "", std(ofFirst, nil), http.StatusAccepted},
		// Last: the blob is leased once it succeeds.
		{"Lease Blob", "PUT", "strict/b?comp=lease", "", std(cur, map[string]string{"x-ms-lease-action": "acquire", "x-ms-lease-duration": "15"}), http.StatusCreated},
	}
	for _, tc := range cases {
		resp, _ := b.do(t, tc.method, tc.path, tc.body, tc.hdr)
		if strict {
			wantStatus(t, resp, http.StatusBadRequest, "MultipleConditionHeadersNotSupported", tc.what+" with strict_conditions")
		} else {
			wantStatus(t, resp, tc.ok, "", tc.what+" without strict_conditions")
		}
	}
}
