package gateway_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"net/http"
	"strconv"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/appendblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/blobgw/blobgw/leasedb"
)

// inlinePattern is the row's extents as a string: 'i' for an inline
// extent, 's' for a staged object.
func inlinePattern(x []leasedb.Extent) string {
	out := make([]byte, len(x))
	for i, e := range x {
		out[i] = 's'
		if e.Inline() {
			out[i] = 'i'
		}
	}
	return string(out)
}

// wantBytes reads cont/name whole and in ranges that cross every extent
// boundary, and fails t unless each read matches data.
func (b *bundle) wantBytes(t *testing.T, cont, name string, data []byte) {
	t.Helper()
	ctx := context.Background()
	got := download(t, b.client, cont, name)
	if sha256.Sum256(got) != sha256.Sum256(data) {
		t.Fatalf("%s/%s: Get Blob read %d bytes, not the %d appended (SHA-256 differs)", cont, name, len(got), len(data))
	}
	bc := b.client.ServiceClient().NewContainerClient(cont).NewBlobClient(name)
	var off int64
	for _, e := range b.rowExtents(t, cont, name) {
		off += e.Size
		// A range from inside one extent into the next (or to the end).
		start := max(0, off-700)
		count := min(int64(1500), int64(len(data))-start)
		dl, err := bc.DownloadStream(ctx, &blob.DownloadStreamOptions{Range: blob.HTTPRange{Offset: start, Count: count}})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if _, err := buf.ReadFrom(dl.Body); err != nil {
			t.Fatal(err)
		}
		dl.Body.Close()
		if !bytes.Equal(buf.Bytes(), data[start:start+count]) {
			t.Fatalf("%s/%s: range [%d,%d) differs", cont, name, start, start+count)
		}
	}
}

// TestInlineAppend: an Append Block body at most inline_max_bytes is kept
// in the row while the blob's inline bytes after the append stay within
// the threshold (no backend object); one that would take them past it,
// or a larger body, is staged, and later small appends go inline again
// while the total allows. The answer (offset, committed block count,
// Content-MD5 or x-ms-content-crc64) and the append conditions are those of
// a staged append; a refused inline append stores nothing.
func TestInlineAppend(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setupInline(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "apl")
		ab := appendClient(b.client, "apl", "log")
		if _, err := ab.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		n0 := b.countObjects(t)
		var data []byte
		// Sizes chosen against the 16 KiB threshold: 3000+5000+4000 inline
		// (12000), 5000 would make 17000: staged; 1000 inline (13000);
		// 20000 is over the threshold itself; 4384 would make 17384:
		// staged; 3384 makes exactly 16384: inline; then 1 byte: staged.
		steps := []struct {
			size    int
			inline  bool
			withMD5 bool
		}{
			{3000, true, true}, {5000, true, false}, {4000, true, false}, {5000, false, true},
			{1000, true, false}, {20000, false, false}, {4384, false, true}, {3384, true, true}, {1, false, false},
		}
		objects, pattern := 0, ""
		for i, st := range steps {
			block := randBytes(st.size, int64(100+i))
			o := &appendblob.AppendBlockOptions{AppendPositionAccessConditions: &appendblob.AppendPositionAccessConditions{
				AppendPosition: to.Ptr(int64(len(data)))}}
			sum := md5.Sum(block)
			if st.withMD5 {
				o.TransactionalValidation = blob.TransferValidationTypeMD5(sum[:])
			}
			r, err := ab.AppendBlock(ctx, nopSeeker(string(block)), o)
			if err != nil {
				t.Fatalf("append %d (%d bytes): %v", i, st.size, err)
			}
			if off, _ := strconv.Atoi(*r.BlobAppendOffset); off != len(data) {
				t.Fatalf("append %d: offset %d, want %d", i, off, len(data))
			}
			if *r.BlobCommittedBlockCount != int32(i+1) {
				t.Fatalf("append %d: committed block count %d", i, *r.BlobCommittedBlockCount)
			}
			if st.withMD5 && !bytes.Equal(r.ContentMD5, sum[:]) {
				t.Fatalf("append %d: Content-MD5 %x, want %x", i, r.ContentMD5, sum)
			}
			if !st.withMD5 && (r.ContentCRC64 == nil || r.ContentMD5 != nil) {
				t.Fatalf("append %d: no x-ms-content-crc64 (or an unasked Content-MD5)", i)
			}
			data = append(data, block...)
			if st.inline {
				pattern += "i"
			} else {
				objects++
				pattern += "s"
			}
			if n := b.countObjects(t) - n0; n != objects {
				t.Fatalf("append %d (%d bytes): %d backend objects, want %d", i, st.size, n, objects)
			}
		}
		x := b.rowExtents(t, "apl", "log")
		if got, want := inlinePattern(x), pattern; got != want {
			t.Fatalf("extents %s, want %s (i inline, s staged)", got, want)
		}
		if n := leasedb.InlineBytes(x); n != inlineMax {
			t.Fatalf("inline bytes %d, want %d", n, inlineMax)
		}
		b.wantBytes(t, "apl", "log", data)

		// Refused inline appends store nothing: appendpos, maxsize, a wrong
		// Content-MD5 or x-ms-content-crc64, a body shorter than
		// Content-Length.
		before := len(x)
		_, err := ab.AppendBlock(ctx, nopSeeker("late"), &appendblob.AppendBlockOptions{
			AppendPositionAccessConditions: &appendblob.AppendPositionAccessConditions{AppendPosition: to.Ptr(int64(3))}})
		wantErr(t, err, http.StatusPreconditionFailed, "AppendPositionConditionNotMet")
		_, err = ab.AppendBlock(ctx, nopSeeker("big"), &appendblob.AppendBlockOptions{
			AppendPositionAccessConditions: &appendblob.AppendPositionAccessConditions{MaxSize: to.Ptr(int64(len(data)))}})
		wantErr(t, err, http.StatusPreconditionFailed, "MaxBlobSizeConditionNotMet")
		bad := md5.Sum([]byte("other"))
		_, err = ab.AppendBlock(ctx, nopSeeker("abc"), &appendblob.AppendBlockOptions{TransactionalValidation: blob.TransferValidationTypeMD5(bad[:])})
		wantErr(t, err, http.StatusBadRequest, "Md5Mismatch")
		_, err = ab.AppendBlock(ctx, nopSeeker("abc"), &appendblob.AppendBlockOptions{TransactionalValidation: blob.TransferValidationTypeCRC64(12345)})
		wantErr(t, err, http.StatusBadRequest, "Crc64Mismatch")
		req, err := http.NewRequest(http.MethodPut, b.serviceURL(0)+"apl/log?comp=appendblock", bytes.NewReader(make([]byte, 100)))
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = 200
		b.sign(t, req)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			wantStatus(t, resp, http.StatusBadRequest, "InvalidInput", "a short inline Append Block body")
		}
		if x := b.rowExtents(t, "apl", "log"); len(x) != before {
			t.Fatalf("a refused append changed the row: %d extents, want %d", len(x), before)
		}
		b.wantBytes(t, "apl", "log", data)
		b.checkNoLeak(t)
	})
}

// TestInlineAppendOff: with inline_max_bytes 0 (the tests' default
// gateway) a small Append Block stages an object, as before.
func TestInlineAppendOff(t *testing.T) {
	b := setup(t, "sqlite+disk")
	ctx := context.Background()
	createContainers(t, b.client, "apl")
	ab := appendClient(b.client, "apl", "log")
	if _, err := ab.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ab.AppendBlock(ctx, nopSeeker("small"), nil); err != nil {
		t.Fatal(err)
	}
	if p := inlinePattern(b.rowExtents(t, "apl", "log")); p != "s" {
		t.Fatalf("extents %s with inline off, want s", p)
	}
	b.checkNoLeak(t)
}

// TestInlineAppendRace: concurrent Append Blocks with appendpos: exactly
// one wins each position, whether its block goes inline or is staged
// (the rounds cross the threshold); concurrent appends without appendpos
// all land, and the row's inline bytes never pass the threshold (the
// total is decided under the row lock).
func TestInlineAppendRace(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setupInline(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "race")
		ab := appendClient(b.client, "race", "log")
		if _, err := ab.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		const writers, rounds, size = 5, 8, 3000
		var data []byte
		for round := 0; round < rounds; round++ {
			var mu sync.Mutex
			var wins []int
			var wg sync.WaitGroup
			pos := int64(len(data))
			for i := 0; i < writers; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					block := randBytes(size, int64(round*writers+i))
					_, err := ab.AppendBlock(ctx, nopSeeker(string(block)), &appendblob.AppendBlockOptions{
						AppendPositionAccessConditions: &appendblob.AppendPositionAccessConditions{AppendPosition: to.Ptr(pos)}})
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						wins = append(wins, i)
					case statusOf(err) != http.StatusPreconditionFailed || codeOf(err) != "AppendPositionConditionNotMet":
						t.Errorf("round %d writer %d: %v", round, i, err)
					}
				}(i)
			}
			wg.Wait()
			if len(wins) != 1 {
				t.Fatalf("round %d: %d appends won position %d, want exactly 1", round, len(wins), pos)
			}
			data = append(data, randBytes(size, int64(round*writers+wins[0]))...)
		}
		x := b.rowExtents(t, "race", "log")
		// 5 blocks of 3000 fit in 16 KiB, the 6th would not.
		if got := inlinePattern(x); got != "iiiiisss" {
			t.Fatalf("extents %s, want iiiiisss", got)
		}
		b.wantBytes(t, "race", "log", data)

		// Without appendpos: every append lands, in some order, and the
		// inline total stays within the threshold.
		ab2 := appendClient(b.client, "race", "free")
		if _, err := ab2.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		const free = 12
		var wg sync.WaitGroup
		var mu sync.Mutex
		byOffset := map[int][]byte{}
		for i := 0; i < free; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				block := randBytes(2500+i, int64(1000+i))
				r, err := ab2.AppendBlock(ctx, nopSeeker(string(block)), nil)
				if err != nil {
					t.Errorf("append %d: %v", i, err)
					return
				}
				off, _ := strconv.Atoi(*r.BlobAppendOffset)
				mu.Lock()
				byOffset[off] = block
				mu.Unlock()
			}(i)
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		var all []byte
		for len(byOffset) > 0 {
			block, ok := byOffset[len(all)]
			if !ok {
				t.Fatalf("no append at offset %d", len(all))
			}
			delete(byOffset, len(all))
			all = append(all, block...)
		}
		x = b.rowExtents(t, "race", "free")
		if n := leasedb.InlineBytes(x); n > inlineMax || n == 0 {
			t.Fatalf("inline bytes %d after concurrent appends (%s), want 1..%d", n, inlinePattern(x), inlineMax)
		}
		b.wantBytes(t, "race", "free", all)
		b.checkNoLeak(t)
	})
}

// TestInlineAppendCopies: a snapshot and a Copy Blob (sharing the
// extents) of an append blob holding inline and staged extents read the
// same bytes and keep the inline ones in their rows, through later
// appends to the source and its deletion; after collection only the
// staged objects the copy still references are left.
func TestInlineAppendCopies(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setupInline(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "cps")
		ab := appendClient(b.client, "cps", "src")
		if _, err := ab.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		var data []byte
		for i, n := range []int{4000, 20000, 6000, 9000, 100} {
			block := randBytes(n, int64(200+i))
			if _, err := ab.AppendBlock(ctx, nopSeeker(string(block)), nil); err != nil {
				t.Fatal(err)
			}
			data = append(data, block...)
		}
		if p := inlinePattern(b.rowExtents(t, "cps", "src")); p != "isisi" {
			t.Fatalf("source extents %s, want isisi", p)
		}
		bc := b.client.ServiceClient().NewContainerClient("cps").NewBlobClient("src")
		sr, err := bc.CreateSnapshot(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		dc := b.client.ServiceClient().NewContainerClient("cps").NewBlobClient("copy")
		r, err := dc.StartCopyFromURL(ctx, bc.URL(), nil)
		if err != nil || r.CopyStatus == nil || *r.CopyStatus != blob.CopyStatusTypeSuccess {
			t.Fatalf("Copy Blob: %v %+v", err, r)
		}
		if p := inlinePattern(b.rowExtents(t, "cps", "copy")); p != "isisi" {
			t.Fatalf("copy extents %s, want isisi", p)
		}
		// The source grows; the snapshot and the copy do not.
		if _, err := ab.AppendBlock(ctx, nopSeeker("more"), nil); err != nil {
			t.Fatal(err)
		}
		if got := download(t, b.client, "cps", "src"); !bytes.Equal(got, append(append([]byte{}, data...), "more"...)) {
			t.Fatal("source after another append: bytes differ")
		}
		snap, err := bc.WithSnapshot(*sr.Snapshot)
		if err != nil {
			t.Fatal(err)
		}
		if got := downloadClient(t, snap); sha256.Sum256(got) != sha256.Sum256(data) {
			t.Fatal("the snapshot of a mixed append blob: bytes differ")
		}
		b.wantBytes(t, "cps", "copy", data)
		if _, err := bc.Delete(ctx, &blob.DeleteOptions{DeleteSnapshots: to.Ptr(blob.DeleteSnapshotsOptionTypeInclude)}); err != nil {
			t.Fatal(err)
		}
		b.wantBytes(t, "cps", "copy", data)
		b.checkNoLeak(t)
		b.collectAll(t)
		b.wantObjects(t, 2, "after collection (the copy's staged extents)")
		// And the copy is still an append blob that takes inline appends.
		if _, err := appendClient(b.client, "cps", "copy").AppendBlock(ctx, nopSeeker("tail"), nil); err != nil {
			t.Fatal(err)
		}
		if p := inlinePattern(b.rowExtents(t, "cps", "copy")); p != "isisii" {
			t.Fatalf("copy extents after an append %s, want isisii", p)
		}
		b.checkNoLeak(t)
	})
}
