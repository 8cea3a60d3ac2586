package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// inline_max_bytes: the default, file < environment < flag, and values
// out of range exit 2.
func TestInlineSetting(t *testing.T) {
	out, code := runApp(t, nil, "config")
	if code != 0 || !strings.Contains(out, "inline_max_bytes: 8192") {
		t.Fatalf("default (%d):\n%s", code, out)
	}
	file := filepath.Join(t.TempDir(), "blobgw.yaml")
	os.WriteFile(file, []byte("inline_max_bytes: 0\n"), 0o644)
	out, code = runApp(t, nil, "config", "--config", file)
	if code != 0 || !strings.Contains(out, "inline_max_bytes: 0") {
		t.Fatalf("file (%d):\n%s", code, out)
	}
	env := map[string]string{"BLOBGW_CONFIG": file, "BLOBGW_INLINE_MAX_BYTES": "4096"}
	out, code = runApp(t, env, "config")
	if code != 0 || !strings.Contains(out, "inline_max_bytes: 4096") {
		t.Fatalf("env over file (%d):\n%s", code, out)
	}
	out, code = runApp(t, env, "config", "--inline-max-bytes", "65536")
	if code != 0 || !strings.Contains(out, "inline_max_bytes: 65536") {
		t.Fatalf("flag over env (%d):\n%s", code, out)
	}
	for _, v := range []string{"-1", "65537"} {
		out, code := runApp(t, nil, "serve", "--inline-max-bytes", v)
		if code != 2 || !strings.Contains(out, "inline_max_bytes") {
			t.Fatalf("--inline-max-bytes %s: exit %d, %q; want exit 2 naming inline_max_bytes", v, code, out)
		}
	}
}
