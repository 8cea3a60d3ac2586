package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// body_idle_timeout and max_uploads: defaults, file < environment < flag,
// and bad values exit 2.
func TestLimitSettings(t *testing.T) {
	out, code := runApp(t, nil, "config")
	if code != 0 || !strings.Contains(out, "body_idle_timeout: 1m0s") || !strings.Contains(out, "max_uploads: 256") || !strings.Contains(out, "block_expiry: 168h0m0s") {
		t.Fatalf("defaults (%d):\n%s", code, out)
	}
	file := filepath.Join(t.TempDir(), "blobgw.yaml")
	os.WriteFile(file, []byte("body_idle_timeout: 5s\nmax_uploads: 7\n"), 0o644)
	out, code = runApp(t, nil, "config", "--config", file)
	if code != 0 || !strings.Contains(out, "body_idle_timeout: 5s") || !strings.Contains(out, "max_uploads: 7") {
		t.Fatalf("file (%d):\n%s", code, out)
	}
	env := map[string]string{"BLOBGW_CONFIG": file, "BLOBGW_BODY_IDLE_TIMEOUT": "9s", "BLOBGW_MAX_UPLOADS": "9"}
	out, code = runApp(t, env, "config")
	if code != 0 || !strings.Contains(out, "body_idle_timeout: 9s") || !strings.Contains(out, "max_uploads: 9") {
		t.Fatalf("env over file (%d):\n%s", code, out)
	}
	out, code = runApp(t, env, "config", "--body-idle-timeout", "11s", "--max-uploads", "11", "--block-expiry", "1h")
	if code != 0 || !strings.Contains(out, "body_idle_timeout: 11s") || !strings.Contains(out, "max_uploads: 11") || !strings.Contains(out, "block_expiry: 1h0m0s") {
		t.Fatalf("flag over env (%d):\n%s", code, out)
	}
	for _, args := range [][]string{{"--body-idle-timeout", "0s"}, {"--max-uploads", "0"}, {"--max-uploads", "-1"}, {"--block-expiry", "0s"}} {
		out, code := runApp(t, nil, append([]string{"serve"}, args...)...)
		name := strings.ReplaceAll(strings.TrimPrefix(args[0], "--"), "-", "_")
		if code != 2 || !strings.Contains(out, name) {
			t.Fatalf("%v: exit %d, %q; want exit 2 naming %s", args, code, out, name)
		}
	}
}

// `blobgw gc` removes the disk backend's temporary files older than the
// sweep bound (crash leftovers) and keeps fresh ones.
func TestGCSweepsTemp(t *testing.T) {
	dir := t.TempDir()
	tmp := filepath.Join(dir, "blobs", "tmp")
	if err := os.MkdirAll(tmp, 0o750); err != nil {
		t.Fatal(err)
	}
	old, fresh := filepath.Join(tmp, "put-00000000000000aa"), filepath.Join(tmp, "put-00000000000000bb")
	for _, p := range []string{old, fresh} {
		if err := os.WriteFile(p, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Now().Add(-time.Hour)
	if err := os.Chtimes(old, at, at); err != nil {
		t.Fatal(err)
	}
	runCLI(t, nil, "gc", "--data-dir", dir).ok(t)
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Fatalf("old temp file after gc: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Fatalf("fresh temp file after gc: %v", err)
	}
}
