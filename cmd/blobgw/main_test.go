package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/blobgw/blobgw/internal/config"
	"github.com/urfave/cli/v2"
)

// runApp runs the CLI in-process and returns its output and exit code.
func runApp(t *testing.T, env map[string]string, args ...string) (string, int) {
	t.Helper()
	return runAppWith(t, context.Background(), env, args...)
}

func runAppWith(t testing.TB, ctx context.Context, env map[string]string, args ...string) (string, int) {
	t.Helper()
	// Each call sees only the environment it names.
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "BLOBGW_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	var out bytes.Buffer
	app := newApp()
	app.Writer = &out
	app.ErrWriter = &out
	err := app.RunContext(ctx, append([]string{"blobgw"}, args...))
	code := 0
	if err != nil {
		code = 1
		var ec cli.ExitCoder
		if errors.As(err, &ec) {
			code = ec.ExitCode()
		}
		out.WriteString(err.Error())
	}
	return out.String(), code
}

func TestConfigPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "blobgw.yaml")
	os.WriteFile(file, []byte("listen: 127.0.0.1:1111\ndata_dir: /from/file\ngc_grace: 1m\nlog_level: warn\n"), 0o644)

	out, code := runApp(t, nil, "config", "--config", file)
	if code != 0 || !strings.Contains(out, "listen: 127.0.0.1:1111") || !strings.Contains(out, "data_dir: /from/file") || !strings.Contains(out, "gc_grace: 1m0s") {
		t.Fatalf("file only (%d):\n%s", code, out)
	}
	// Environment overrides the file.
	out, code = runApp(t, map[string]string{"BLOBGW_LISTEN": "127.0.0.1:2222", "BLOBGW_CONFIG": file}, "config")
	if code != 0 || !strings.Contains(out, "listen: 127.0.0.1:2222") || !strings.Contains(out, "data_dir: /from/file") {
		t.Fatalf("env over file (%d):\n%s", code, out)
	}
	// Flags override the environment.
	out, code = runApp(t, map[string]string{"BLOBGW_LISTEN": "127.0.0.1:2222", "BLOBGW_CONFIG": file}, "config", "--listen", "127.0.0.1:3333")
	if code != 0 || !strings.Contains(out, "listen: 127.0.0.1:3333") || !strings.Contains(out, "log_level: warn") {
		t.Fatalf("flag over env (%d):\n%s", code, out)
	}
	// Accounts from the environment; keys never printed.
	out, code = runApp(t, map[string]string{"BLOBGW_ACCOUNTS": "acct1:" + "a2V5MQ==" + "," + "a2V5Mg==" + ";acct2:a2V5Mw=="}, "config")
	if code != 0 || !strings.Contains(out, "name: acct1") || !strings.Contains(out, "name: acct2") || strings.Contains(out, "a2V5") {
		t.Fatalf("accounts (%d):\n%s", code, out)
	}
	// Defaults: the dev account, ./data, SQLite under it.
	out, code = runApp(t, map[string]string{"BLOBGW_CONFIG": ""}, "config")
	if code != 0 || !strings.Contains(out, "name: devstoreaccount1") || !strings.Contains(out, "listen: 127.0.0.1:10000") || !strings.Contains(out, "metadata: data/blobgw.db") {
		t.Fatalf("defaults (%d):\n%s", code, out)
	}
}

func TestConfigErrorsExit2(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("listen: [\n"), 0o644)
	typo := filepath.Join(dir, "typo.yaml")
	os.WriteFile(typo, []byte("lisen: 127.0.0.1:1\n"), 0o644)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"missing file", []string{"--config", filepath.Join(dir, "nope.yaml")}, "config file"},
		{"malformed yaml", []string{"--config", bad}, "config file"},
		{"unknown key", []string{"--config", typo}, "lisen"},
		{"bad account key", []string{"--account", "acct1:not base64!"}, "not valid base64"},
		{"bad account spec", []string{"--account", "nokey"}, "name:key"},
		{"bad backend", []string{"--backend", "tape"}, "backend"},
		{"bad log level", []string{"--log-level", "loud"}, "log_level"},
		{"bad duration", []string{"--gc-interval", "0s"}, "gc_interval"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, code := runApp(t, map[string]string{"BLOBGW_CONFIG": ""}, append([]string{"serve"}, tt.args...)...)
			if code != 2 || !strings.Contains(out, tt.want) || strings.Count(strings.TrimSpace(out), "\n") > 1 {
				t.Fatalf("exit %d, output %q; want exit 2 mentioning %q on one line", code, out, tt.want)
			}
		})
	}
}

// TestServeDefaults runs the real binary with no flags and no config in an
// empty directory: it must listen on 127.0.0.1:10000, keep bytes under
// ./data and metadata in ./data/blobgw.db, and accept the Azurite
// connection string unchanged.
func TestServeDefaults(t *testing.T) {
	if ln, err := net.Listen("tcp", "127.0.0.1:10000"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("port 10000 is busy: %v", err)
		}
		t.Skipf("port 10000 is busy: %v", err)
	} else {
		ln.Close()
	}
	dir := t.TempDir()
	bin := buildBlobgw(t, filepath.Join(dir, "blobgw"))
	work := filepath.Join(dir, "work")
	os.Mkdir(work, 0o755)
	cmd := exec.Command(bin, "serve")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "BLOBGW_CONFIG=")
	var logs bytes.Buffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		terminate(cmd.Process, done, 10*time.Second)
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", "127.0.0.1:10000")
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("gateway did not listen on 127.0.0.1:10000:\n%s", logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	const connStr = "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;"
	client, err := azblob.NewClientFromConnectionString(connStr, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := client.CreateContainer(ctx, "defaults", nil); err != nil {
		t.Fatalf("create container: %v\n%s", err, logs.String())
	}
	if _, err := client.UploadBuffer(ctx, "defaults", "hello.txt", []byte("hello"), nil); err != nil {
		t.Fatal(err)
	}
	resp, err := client.DownloadStream(ctx, "defaults", "hello.txt", nil)
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	got.ReadFrom(resp.Body)
	resp.Body.Close()
	if got.String() != "hello" {
		t.Fatalf("read back %q", got.String())
	}
	if _, err := os.Stat(filepath.Join(work, "data", "blobgw.db")); err != nil {
		t.Fatalf("metadata file: %v", err)
	}
	// A body over inline_max_bytes (the 5 bytes above are kept in the
	// metadata row) is an object under ./data/blobs.
	big := int64(config.DefaultInlineMaxBytes + 5)
	if _, err := client.UploadBuffer(ctx, "defaults", "big.bin", bytes.Repeat([]byte("h"), int(big)), nil); err != nil {
		t.Fatal(err)
	}
	found := false
	filepath.Walk(filepath.Join(work, "data", "blobs"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && fi.Size() == big {
			found = true
		}
		return nil
	})
	if !found {
		t.Fatalf("no %d-byte object under ./data/blobs", big)
	}
}
