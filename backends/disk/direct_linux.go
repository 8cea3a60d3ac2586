//go:build linux

package disk

import (
	"errors"
	"io"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Put writes a body with O_DIRECT where the filesystem allows it: the
// bytes go from our buffer to the device, without the copy into the page
// cache, the page cache's per-page bookkeeping and the writeback that
// follows. On ext4 that measured (whole machine, the writer and the
// kernel's writeback workers, perf) about 430 µs of CPU per MiB written
// the buffered way (256 KiB writes plus sync_file_range, then fsync)
// against about 160 with 1 MiB O_DIRECT writes; BenchmarkPutDirect, the
// process alone, about 590 → 490. A large upload is CPU-bound on a small
// machine (its MD5 alone takes most of a core), so that CPU goes to the
// uploads. The written object is then not in the page cache: the first
// read of it comes from the device. Durability is unchanged: Put still
// fsyncs the file (for its size, its extents and the unaligned tail) and
// the directories.

// directWritesOn switches O_DIRECT body writes; tests and benchmarks
// compare both.
var directWritesOn = true

// directMinBytes is the smallest body written with O_DIRECT (a body of
// unknown length is not): a small one saves little CPU, and its O_DIRECT
// write waits for the device before the fsync's own flush, one device
// round trip more than the buffered write that the fsync alone makes
// durable.
var directMinBytes int64 = 1 << 20

const (
	// directChunk is the size of each O_DIRECT write (the body is read
	// into one of two buffers of this size first: 1 MiB an upload, where
	// the buffered path takes 256 KiB).
	directChunk = 512 << 10
	// directAlign is the alignment O_DIRECT wants of buffer addresses,
	// lengths and file offsets: the logical block size, at most the page
	// size on the filesystems we run on.
	directAlign = 4096
)

var directPool = sync.Pool{New: func() any {
	b := make([]byte, directChunk+directAlign)
	off := (directAlign - int(uintptr(unsafe.Pointer(&b[0]))&(directAlign-1))) & (directAlign - 1)
	b = b[off : off+directChunk : off+directChunk]
	return &b
}}

// copyDirect copies src, a body of size bytes (-1: unknown), to the empty
// file f with O_DIRECT writes of directChunk bytes, the unaligned tail
// with an ordinary write. ok is false, with nothing read or written, for a
// body under directMinBytes or of unknown size, or when f cannot take
// O_DIRECT (the filesystem refuses it): the caller copies the ordinary
// way. A write the filesystem refuses after all (EINVAL: an unaligned
// offset after a short write, a filesystem that takes the flag but not
// the I/O) is made again without O_DIRECT, and so is the rest of the body.
func copyDirect(f *os.File, src io.Reader, size int64) (n int64, ok bool, err error) {
	if !directWritesOn || size < directMinBytes {
		return 0, false, nil
	}
	fd := int(f.Fd())
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return 0, false, nil
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, flags|unix.O_DIRECT); err != nil {
		return 0, false, nil
	}
	direct := true
	buffered := func() error {
		if !direct {
			return nil
		}
		direct = false
		_, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, flags&^unix.O_DIRECT)
		return err
	}
	defer buffered()
	// Two buffers: the device takes one (an O_DIRECT write returns once
	// the device has the bytes, not when they are copied) while the body
	// fills the other.
	bufs := [2]*[]byte{directPool.Get().(*[]byte), directPool.Get().(*[]byte)}
	defer func() { directPool.Put(bufs[0]); directPool.Put(bufs[1]) }()
	write := func(p []byte) error {
		for len(p) > 0 {
			m, err := f.Write(p)
			p = p[m:]
			if errors.Is(err, unix.EINVAL) && direct {
				if err := buffered(); err != nil {
					return err
				}
				continue
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	var pending chan error // the write in flight, nil when none
	wait := func() error {
		if pending == nil {
			return nil
		}
		err := <-pending
		pending = nil
		return err
	}
	defer wait() // no write outlives copyDirect (nor uses a pooled buffer)
	for cur := 0; ; cur ^= 1 {
		buf := *bufs[cur]
		m, rerr := io.ReadFull(src, buf)
		if err := wait(); err != nil {
			return n, true, err
		}
		if rerr == nil {
			pending = make(chan error, 1)
			go func(p []byte, done chan<- error) { done <- write(p) }(buf, pending)
			n += int64(m)
			continue
		}
		if rerr != io.EOF && rerr != io.ErrUnexpectedEOF {
			return n + int64(m), true, rerr
		}
		// The last, partial chunk: its aligned part direct, the rest
		// (less than a block) through the page cache.
		aligned := m &^ (directAlign - 1)
		if err := write(buf[:aligned]); err != nil {
			return n, true, err
		}
		if err := buffered(); err != nil {
			return n, true, err
		}
		if err := write(buf[aligned:m]); err != nil {
			return n, true, err
		}
		return n + int64(m), true, nil
	}
}
