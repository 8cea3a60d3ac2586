//go:build !failpoints

package failpoint

import "testing"

// Without the failpoints tag, an armed failpoint does nothing: the
// environment cannot reach a release build.
func TestOffBuildIgnoresEnv(t *testing.T) {
	t.Setenv("BLOBGW_FAILPOINTS", "x=kill:1")
	Inject("x") // this process would die here if it were armed
	if Enabled {
		t.Fatal("Enabled in a build without the failpoints tag")
	}
}
