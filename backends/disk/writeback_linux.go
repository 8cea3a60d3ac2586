package disk

import (
	"os"

	"golang.org/x/sys/unix"
)

// writebackChunk is how much a Put writes before asking the kernel to start
// writing it to the device (sync_file_range with SYNC_FILE_RANGE_WRITE,
// which does not wait). The bytes then travel while the rest of the body
// is still arriving, and the fsync at the end waits for the last chunk
// only, instead of for the whole object at once.
const writebackChunk = 1 << 20

// earlyWritebackOn switches early writeback; the benchmarks compare both.
var earlyWritebackOn = true

// earlyWriteback wraps a temporary file and starts writeback behind the
// writer every writebackChunk bytes. It changes nothing about durability:
// Put still fsyncs before the link.
type earlyWriteback struct {
	f       *os.File
	off     int64 // bytes written
	flushed int64 // bytes whose writeback was started
}

func newWriter(f *os.File) *earlyWriteback { return &earlyWriteback{f: f} }

func (w *earlyWriteback) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.off += int64(n)
	if earlyWritebackOn && w.off-w.flushed >= writebackChunk {
		// Advisory: an error here (an fs without support) is not one the
		// fsync would not report again.
		_ = unix.SyncFileRange(int(w.f.Fd()), w.flushed, w.off-w.flushed, unix.SYNC_FILE_RANGE_WRITE)
		w.flushed = w.off
	}
	return n, err
}
