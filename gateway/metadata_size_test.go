package gateway_test

import (
	"strings"
	"testing"
)

// TestMetadataTooLarge: metadata over 8 KiB (names and values) is 400
// MetadataTooLarge, Azure's code for it, on containers and blobs alike
// (it was InvalidMetadata, the code for a name that is not permitted);
// 8 KiB exactly is taken.
func TestMetadataTooLarge(t *testing.T) {
	b := setup(t, "sqlite")
	createContainers(t, b.client, "metasize")
	if resp, body := b.do(t, "PUT", "metasize/blob", "x", map[string]string{"x-ms-blob-type": "BlockBlob"}); resp.StatusCode != 201 {
		t.Fatalf("Put Blob: %d %s", resp.StatusCode, body)
	}
	big := map[string]string{"x-ms-meta-a": strings.Repeat("v", 4<<10), "x-ms-meta-b": strings.Repeat("v", 4<<10)}
	fits := map[string]string{"x-ms-meta-a": strings.Repeat("v", 4<<10-1), "x-ms-meta-b": strings.Repeat("v", 4<<10-1)}
	for _, tc := range []struct{ what, path string }{
		{"Create Container", "metasize2?restype=container"},
		{"Set Container Metadata", "metasize?restype=container&comp=metadata"},
		{"Set Blob Metadata", "metasize/blob?comp=metadata"},
	} {
		resp, _ := b.do(t, "PUT", tc.path, "", big)
		wantStatus(t, resp, 400, "MetadataTooLarge", tc.what+" with 8 KiB + 2 bytes of metadata")
		resp, body := b.do(t, "PUT", tc.path, "", fits)
		if resp.StatusCode/100 != 2 {
			t.Fatalf("%s with 8 KiB of metadata: %d %s", tc.what, resp.StatusCode, body)
		}
	}
}
