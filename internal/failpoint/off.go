//go:build !failpoints

// Package failpoint marks the places where a crash test kills the process
// (a failpoint). Built without the failpoints tag (every release and
// every plain `go test`) Inject is an empty function the compiler inlines
// away: no setting, environment variable or request can reach it. Built
// with -tags failpoints, BLOBGW_FAILPOINTS arms named failpoints
// (on.go). It must never do anything but fire armed failpoints.
package failpoint

// Enabled reports whether the binary was built with the failpoints tag.
const Enabled = false

// Inject is a failpoint named name: a no-op in this build.
func Inject(name string) {}
