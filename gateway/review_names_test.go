package gateway_test

import (
	"context"
	"slices"
	"testing"
)

// TestBlobNameControlCharacters: a blob name with a control character
// (U+0000-U+001F, U+007F, U+0080-U+009F) is 400 InvalidResourceName, as
// Azure's naming rules have it, and so is one with U+FFFE or U+FFFF, and
// nothing is stored: XML 1.0 cannot carry most of them, so List Blobs
// listed "a\x01b" and "a\uFFFEb" as "a\uFFFDb", a name that reads
// another blob. The characters next to them (U+00A0, U+00A1, U+FFFD,
// U+10000) stay names.
func TestBlobNameControlCharacters(t *testing.T) {
	b := setup(t, "sqlite+disk")
	ctx := context.Background()
	createContainers(t, b.client, "ctrl")
	for _, n := range []string{"a\x01b", "a\tb", "a\nb", "a\rb", "a\x1fb", "a\x7fb", "a\u0080b", "a\u0081b", "a\u009fb", "\x1b", "a\ufffeb", "a\uffff"} {
		_, err := b.client.UploadBuffer(ctx, "ctrl", n, []byte("x"), nil)
		wantErr(t, err, 400, "InvalidResourceName")
		bb := b.client.ServiceClient().NewContainerClient("ctrl").NewBlockBlobClient(n)
		_, err = bb.StageBlock(ctx, blockID(0), nopSeeker("x"), nil)
		wantErr(t, err, 400, "InvalidResourceName")
	}
	ok := []string{"a\u00a0b", "a\u00a1b", "a~b", "a\ufffdb", "a\U00010000b", "a\uefbfb"}
	for _, n := range ok {
		if _, err := b.client.UploadBuffer(ctx, "ctrl", n, []byte("x"), nil); err != nil {
			t.Fatalf("upload %q: %v", n, err)
		}
	}
	listed := flatNames(t, b.client, "ctrl")
	if want := slices.Sorted(slices.Values(ok)); !slices.Equal(listed, want) {
		t.Fatalf("listed %q, want %q", listed, want)
	}
}
