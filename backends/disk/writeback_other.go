//go:build !linux

package disk

import (
	"io"
	"os"
)

// newWriter returns the file itself (hiding ReadFrom): early writeback is
// Linux-only.
func newWriter(f *os.File) io.Writer { return struct{ io.Writer }{f} }

var earlyWritebackOn = false
