//go:build !unix

package disk

import "os"

// holdTemp: no file locks here; a sweep in another process judges a
// temporary file by its age alone (templock_unix.go).
func holdTemp(*os.File) {}

// removeUnheld removes the temporary file path.
func removeUnheld(path string) (bool, error) {
	if err := os.Remove(path); err != nil {
		return false, err
	}
	return true, nil
}
