package sqlite

import (
	"io/fs"

	"golang.org/x/sys/unix"
)

// datasyncPath opens the file at path, flushes it with fdatasync(2) (data
// and the metadata needed to read it back, the size, not the timestamps)
// and closes it, through the system calls themselves: os.Open would also
// allocate an *os.File with a finalizer and offer the descriptor to the
// runtime's poller (one more system call), for a descriptor that lives
// for one flush, and commits wait for these flushes (groupsync.go). A
// missing file is an error matching fs.ErrNotExist.
func datasyncPath(path string) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: path, Err: err}
	}
	for {
		err = unix.Fdatasync(fd)
		if err != unix.EINTR {
			break
		}
	}
	if cerr := unix.Close(fd); err == nil && cerr != nil {
		return &fs.PathError{Op: "close", Path: path, Err: cerr}
	}
	if err != nil {
		return &fs.PathError{Op: "fdatasync", Path: path, Err: err}
	}
	return nil
}
