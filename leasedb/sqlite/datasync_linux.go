package sqlite

import (
	"os"

	"golang.org/x/sys/unix"
)

// datasync is fdatasync(2): data and the metadata needed to read it back
// (the size), not the timestamps.
func datasync(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}
