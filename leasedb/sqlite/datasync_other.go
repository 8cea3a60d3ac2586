//go:build !linux

package sqlite

import "os"

// datasyncPath opens the file at path, flushes it with a full fsync (no
// fdatasync here) and closes it. A missing file is an error matching
// fs.ErrNotExist.
func datasyncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
