package leasedb

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestNoHTTPDependency keeps HTTP out of the store: the gateway parses the
// wire and hands leasedb typed values (Conditions, LeaseRequest, lease
// ids), so no package under leasedb/ (drivers, dbopen, and the harnesses
// storetest and pgtest included) may depend on net/http, directly or
// through an import. Test files are not counted.
func TestNoHTTPDependency(t *testing.T) {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		t.Skipf("no go binary at %s: %v", goBin, err)
	}
	// Run from this package's directory: ./... is leasedb and everything
	// under it. .Deps lists the transitive imports of the non-test files.
	cmd := exec.Command(goBin, "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "./...")
	cmd.Stderr = new(strings.Builder)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, cmd.Stderr)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 2 {
		t.Fatalf("go list listed %d packages, want leasedb and its subpackages:\n%s", len(lines), out)
	}
	for _, line := range lines {
		fields := strings.Fields(line)
		var bad []string
		for _, dep := range fields[1:] {
			if dep == "net/http" || strings.HasPrefix(dep, "net/http/") {
				bad = append(bad, dep)
			}
		}
		if len(bad) > 0 {
			t.Errorf("%s depends on %s", fields[0], strings.Join(bad, ", "))
		}
	}
}
