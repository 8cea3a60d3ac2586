//go:build !linux

package disk

import (
	"io"
	"os"
)

// copyDirect is Linux-only (direct_linux.go): elsewhere Put copies through
// the page cache.
func copyDirect(f *os.File, src io.Reader, size int64) (int64, bool, error) { return 0, false, nil }

var directWritesOn = false

var directMinBytes int64 = 1 << 20
