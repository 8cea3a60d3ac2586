//go:build linux

package disk_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/blobgw/blobgw/backends/backendtest"
	"github.com/blobgw/blobgw/backends/disk"
	"golang.org/x/sys/unix"
)

// pieces yields r in reads of at most n bytes, as a socket does.
type pieces struct {
	r io.Reader
	n int
}

func (p pieces) Read(b []byte) (int, error) { return p.r.Read(b[:min(len(b), p.n)]) }

// withDirect runs fn with O_DIRECT body writes on (for bodies of any
// size) or off.
func withDirect(t *testing.T, on bool, fn func(t *testing.T)) {
	old, oldMin := *disk.DirectWrites, *disk.DirectMin
	*disk.DirectWrites, *disk.DirectMin = on, 0
	defer func() { *disk.DirectWrites, *disk.DirectMin = old, oldMin }()
	fn(t)
}

// Put stores exactly the body, with O_DIRECT writes and without, for
// sizes around the block and chunk boundaries (the aligned part of the
// last chunk goes direct, the tail through the page cache) and reads of
// odd sizes; a short or long body is ErrSizeMismatch with nothing stored.
func TestDirectPutBytes(t *testing.T) {
	const chunk = 512 << 10
	data := backendtest.Data(3*chunk+517, 7)
	for _, on := range []bool{true, false} {
		withDirect(t, on, func(t *testing.T) {
			s := newStore(t)
			ctx := context.Background()
			for _, size := range []int{0, 1, 4095, 4096, 4097, chunk - 1, chunk, chunk + 1, 2 * chunk, 3*chunk + 517} {
				for _, piece := range []int{70001, 1 << 20} {
					key := fmt.Sprintf("d%v/%d/%d", on, size, piece)
					if err := s.Put(ctx, key, pieces{bytes.NewReader(data[:size]), piece}, int64(size)); err != nil {
						t.Fatalf("direct %v: Put %d bytes: %v", on, size, err)
					}
					rc, err := s.Open(ctx, key, 0, -1)
					if err != nil {
						t.Fatal(err)
					}
					got, err := io.ReadAll(rc)
					rc.Close()
					if err != nil || !bytes.Equal(got, data[:size]) {
						t.Fatalf("direct %v: Put %d bytes read back %d (%v)", on, size, len(got), err)
					}
				}
			}
			for _, tc := range []struct{ body, declared int }{{chunk + 10, chunk + 11}, {chunk + 12, chunk + 11}, {chunk, chunk - 1}, {4096, 4097}} {
				key := fmt.Sprintf("bad/%d-%d", tc.body, tc.declared)
				err := s.Put(ctx, key, bytes.NewReader(data[:tc.body]), int64(tc.declared))
				if !errors.Is(err, disk.ErrSizeMismatch) {
					t.Fatalf("direct %v: body %d declared %d: %v, want ErrSizeMismatch", on, tc.body, tc.declared, err)
				}
				if _, err := s.Open(ctx, key, 0, -1); err == nil {
					t.Fatalf("direct %v: body %d declared %d was stored", on, tc.body, tc.declared)
				}
			}
		})
	}
}

// residentPages counts the pages of file that are in the page cache.
func residentPages(t *testing.T, file string) (resident, pages int) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	ps := os.Getpagesize()
	vec := make([]byte, (len(m)+ps-1)/ps)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal(errno)
	}
	for _, v := range vec {
		resident += int(v & 1)
	}
	return resident, len(vec)
}

// A Put with O_DIRECT leaves the object's bytes out of the page cache
// (all but the unaligned tail's page); written through the page cache
// they would all be resident. That is where its CPU saving comes from.
func TestDirectPutBypassesPageCache(t *testing.T) {
	var st unix.Statfs_t
	dir := t.TempDir()
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Type == unix.TMPFS_MAGIC {
		t.Skip("the temporary directory is on tmpfs, which is the page cache")
	}
	s, err := disk.New(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	data := backendtest.Data(4<<20+100, 3)
	for _, on := range []bool{false, true} {
		withDirect(t, on, func(t *testing.T) {
			key := fmt.Sprintf("cache/%v", on)
			if err := s.Put(context.Background(), key, bytes.NewReader(data), int64(len(data))); err != nil {
				t.Fatal(err)
			}
			resident, pages := residentPages(t, filepath.Join(s.Root(), "objects", key))
			switch {
			case on && resident > 1:
				t.Fatalf("O_DIRECT Put: %d of %d pages in the page cache, want at most the tail's", resident, pages)
			case !on && resident < pages/2:
				// The control: if buffered writes were not resident
				// either, this test would prove nothing here.
				t.Skipf("buffered Put left only %d of %d pages resident: the page cache is under pressure", resident, pages)
			}
		})
	}
}
