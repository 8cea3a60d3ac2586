package gateway

import (
	"bytes"
	"crypto/md5"
	"hash"
	"math/rand"
	"testing"
	"time"
)

// asyncDigester gives the digests a digester gives for the same bytes,
// however they are cut into writes: empty, one byte, chunk-sized, across
// chunk boundaries, larger than all the chunks in flight.
func TestAsyncDigesterSums(t *testing.T) {
	data := make([]byte, 3*asyncChunk*asyncChunks+12345)
	rand.New(rand.NewSource(1)).Read(data)
	tests := []struct {
		name  string
		size  int
		write []int // successive write lengths, repeated until size is written
	}{
		{"empty", 0, []int{0}},
		{"one byte", 1, []int{1}},
		{"one chunk", asyncChunk, []int{asyncChunk}},
		{"chunk plus one", asyncChunk + 1, []int{asyncChunk, 1}},
		{"odd writes", len(data), []int{1, 4095, 70000, 0, asyncChunk - 1}},
		{"one write of everything", len(data), []int{len(data)}},
		{"socket-sized reads", len(data), []int{228 << 10}},
	}
	for _, tc := range tests {
		for _, crc := range []bool{false, true} {
			want := newDigester(true, crc)
			want.Write(data[:tc.size])
			a := newAsyncDigester(newDigester(true, crc))
			rest := data[:tc.size]
			for i := 0; len(rest) > 0 || i == 0; i++ {
				n := min(tc.write[i%len(tc.write)], len(rest))
				if k, err := a.Write(rest[:n]); k != n || err != nil {
					t.Fatalf("%s: Write(%d) = %d, %v", tc.name, n, k, err)
				}
				rest = rest[n:]
			}
			got, exp := a.sums(), want.sums()
			if !bytes.Equal(got.md5, exp.md5) || !bytes.Equal(got.crc64, exp.crc64) {
				t.Errorf("%s (crc %v): md5 %x crc64 %x, want %x %x", tc.name, crc, got.md5, got.crc64, exp.md5, exp.crc64)
			}
			a.stop() // after sums: nothing left to stop
		}
	}
}

// heldHash is an MD5 whose every Write waits until release is closed and
// says on entered that it has begun.
type heldHash struct {
	hash.Hash
	entered chan struct{}
	release chan struct{}
}

func (h *heldHash) Write(p []byte) (int, error) {
	select {
	case h.entered <- struct{}{}:
	default:
	}
	<-h.release
	return h.Hash.Write(p)
}

// The point of asyncDigester: the writer (the request's goroutine, which
// reads the socket and writes the backend) does not wait for the hash.
// With the hash held, as many chunks as may be in flight are written and
// the writes return; the digest is right once the hash goes on. A
// digester written directly would hold the writer at the first chunk.
func TestAsyncDigesterOverlaps(t *testing.T) {
	h := &heldHash{Hash: md5.New(), entered: make(chan struct{}, 1), release: make(chan struct{})}
	a := newAsyncDigester(&digester{md5: h})
	data := bytes.Repeat([]byte("overlap!"), asyncChunk*asyncChunks/8)
	wrote := make(chan struct{})
	go func() {
		a.Write(data)
		close(wrote)
	}()
	<-h.entered // the hasher holds the first chunk
	select {
	case <-wrote:
	case <-time.After(30 * time.Second):
		t.Fatal("Write of the chunks that may be in flight waited for the hash")
	}
	close(h.release)
	want := md5.Sum(data)
	if got := a.sums(); !bytes.Equal(got.md5, want[:]) {
		t.Fatalf("md5 %x, want %x", got.md5, want)
	}
}

// stop, for a body that failed (client gone, short, stalled), ends the
// hasher with chunks still queued and a partial one unsent, and gives
// every chunk back; it is safe to call twice.
func TestAsyncDigesterStop(t *testing.T) {
	a := newAsyncDigester(newDigester(true, true))
	a.Write(make([]byte, 2*asyncChunk+100))
	a.stop()
	a.stop()
	select {
	case <-a.done:
	default:
		t.Fatal("the hasher goroutine still runs after stop")
	}
	if a.taken != 0 || a.cur != nil {
		t.Fatalf("after stop: %d chunks taken, current %v", a.taken, a.cur != nil)
	}
}

// overlapDigest: only a large (or unknown-length) body, and only while a
// processor is spare.
func TestOverlapDigest(t *testing.T) {
	tests := []struct {
		size           int64
		uploads, procs int
		want           bool
	}{
		{16 << 20, 1, 2, true},
		{16 << 20, 2, 2, false},
		{16 << 20, 8, 2, false},
		{16 << 20, 3, 4, true},
		{-1, 1, 2, true},
		{asyncDigestMin, 1, 2, true},
		{asyncDigestMin - 1, 1, 2, false},
		{4 << 10, 1, 8, false},
		{16 << 20, 1, 1, false},
	}
	for _, tc := range tests {
		if got := overlapDigest(tc.size, tc.uploads, tc.procs); got != tc.want {
			t.Errorf("overlapDigest(%d, %d, %d) = %v, want %v", tc.size, tc.uploads, tc.procs, got, tc.want)
		}
	}
}
