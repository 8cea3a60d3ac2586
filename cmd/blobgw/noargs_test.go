package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStrayArgumentRefused: a command that takes no arguments refuses
// one (exit 2, naming it) instead of ignoring it and, with it, every flag
// after it (the flag parser stops at the first argument): `blobgw serve
// ./data --backend s3 ...` served the local disk.
func TestStrayArgumentRefused(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"BLOBGW_CONFIG": "", "BLOBGW_DATA_DIR": filepath.Join(dir, "data")}
	for _, args := range [][]string{
		{"config", "stray", "--listen", "1.2.3.4:1"},
		{"serve", "stray", "--listen", "127.0.0.1:0", "--metrics-listen", "off"},
		{"migrate", "stray"},
		{"gc", "stray"},
		{"fsck", "stray", "--repair"},
		{"cert", "dev", "stray"},
	} {
		out, code := runAppWithin(t, t.Context(), 10*time.Second, env, args...)
		if code != 2 || !strings.Contains(out, `"stray"`) || !strings.Contains(out, "takes no arguments") {
			t.Errorf("blobgw %s: exit %d, %q; want exit 2 refusing \"stray\"", strings.Join(args, " "), code, out)
		}
	}
}
