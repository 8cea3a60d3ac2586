package disk_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/blobgw/blobgw/backends"
	"github.com/blobgw/blobgw/backends/backendtest"
	"github.com/blobgw/blobgw/backends/disk"
)

// A full filesystem (ENOSPC) fails Put with ErrUnavailable, which the
// gateway answers 503 ServerBusy as it does the S3 backend's
// XMinioStorageFull, not 500; the syscall error stays visible, and the
// failed Put leaves nothing behind. Needs root to mount a 1 MiB tmpfs.
func TestPutFilesystemFull(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs (needs root): %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	s, err := disk.New(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const size = 3 << 20
	for _, sz := range []int64{size, -1} { // O_DIRECT where taken; buffered
		err := s.Put(ctx, "b/full", backendtest.NewReader(size, 1), sz)
		if !errors.Is(err, syscall.ENOSPC) || !errors.Is(err, backends.ErrUnavailable) {
			t.Errorf("Put of %d bytes (size %d) on a full filesystem = %v, want ENOSPC and ErrUnavailable", size, sz, err)
		}
		checkNoResidue(t, s)
	}
	want := []byte("fits")
	if err := s.Put(ctx, "b/small", bytes.NewReader(want), int64(len(want))); err != nil {
		t.Fatal(err)
	}
	rc, err := s.Open(ctx, "b/small", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if got, err := io.ReadAll(rc); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read back %q, %v; want %q", got, err, want)
	}
}
