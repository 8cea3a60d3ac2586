package gateway

import (
	"bytes"
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"hash/crc64"
	"math/rand"
	"sync"
	"testing"
)

// TestBulkDigester: from bulkMD5Min a staged body's MD5 runs on a lane of
// md5Lanes; whatever the size, the write pattern and how many bodies hash
// at once, the digests are crypto/md5's and hash/crc64's.
func TestBulkDigester(t *testing.T) {
	cases := []struct {
		size  int
		chunk int // bytes per Write
	}{
		{0, 1}, {1, 1}, {bulkMD5Min - 1, 32 << 10}, {bulkMD5Min, 32 << 10},
		{bulkMD5Min + 63, 4093}, {3*bulkMD5Min + 17, 256 << 10}, {2 * bulkMD5Min, 1},
	}
	for _, c := range cases {
		for _, crc := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d/%d/crc=%v", c.size, c.chunk, crc), func(t *testing.T) {
				// Eight bodies at once, as eight clients' uploads share the lanes.
				var wg sync.WaitGroup
				for g := 0; g < 8; g++ {
					wg.Add(1)
					go func(seed int64) {
						defer wg.Done()
						body := make([]byte, c.size)
						rand.New(rand.NewSource(seed)).Read(body)
						d := newBulkDigester(int64(c.size), true, crc)
						defer d.close()
						if (d.lane != nil) != (c.size >= bulkMD5Min) {
							t.Errorf("size %d: on a lane %v", c.size, d.lane != nil)
						}
						for p := body; len(p) > 0; {
							n := min(c.chunk, len(p))
							d.Write(p[:n])
							p = p[n:]
						}
						got := d.sums()
						want := md5.Sum(body)
						if !bytes.Equal(got.md5, want[:]) {
							t.Errorf("seed %d: md5 %x, want %x", seed, got.md5, want)
						}
						if crc {
							w := binary.LittleEndian.AppendUint64(nil, crc64.Checksum(body, crc64Table))
							if !bytes.Equal(got.crc64, w) {
								t.Errorf("seed %d: crc64 %x, want %x", seed, got.crc64, w)
							}
						} else if got.crc64 != nil {
							t.Errorf("crc64 computed unasked")
						}
					}(int64(g))
				}
				wg.Wait()
			})
		}
	}
	// Without MD5 asked for, no lane is taken.
	d := newBulkDigester(4*bulkMD5Min, false, true)
	if d.lane != nil || d.md5 != nil {
		t.Fatal("a lane taken without MD5")
	}
	d.close()
}
