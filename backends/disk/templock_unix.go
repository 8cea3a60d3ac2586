//go:build unix

package disk

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// holdTemp takes a shared lock (flock) on a Put's temporary file, which
// the kernel keeps until the file is closed or its process ends: a sweep
// in another process sharing the root (which cannot see this Store's
// in-flight registry) then tells the file of a live Put from a crashed
// one's whatever the file's modification time says (a body written only
// when 512 KiB have arrived, a clock stepped). A filesystem without locks
// leaves the file to the age test alone.
func holdTemp(f *os.File) {
	_ = unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB)
}

// removeUnheld removes the temporary file path unless a live Put holds it
// (holdTemp), and reports whether it removed it. It removes the file
// under an exclusive lock: no Put opens an existing temporary file, so
// none can take it meanwhile. Where the filesystem takes no lock, the
// file is removed, as the age test alone decided.
func removeUnheld(path string) (bool, error) {
	// Read-write: NFS emulates flock with byte-range locks, whose
	// exclusive form needs a file open for writing.
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return false, err
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); errors.Is(err, unix.EWOULDBLOCK) {
		return false, nil
	}
	if err := os.Remove(path); err != nil {
		return false, err
	}
	return true, nil
}
