package main

import (
	"bytes"
	"context"
	"errors"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
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

// serveBound is how long runAppWith lets an in-process `serve` run. The
// tests run serve in process only with arguments it must refuse; one that
// starts serving instead would hold the test until the package's timeout.
const serveBound = 2 * time.Minute

// errServeBound ends the context of a serve that outlived serveBound.
var errServeBound = errors.New("serve outlived the test's bound")

// runAppWith is runApp with ctx. A serve still running after serveBound
// (see runAppWithin) fails the test.
func runAppWith(t testing.TB, ctx context.Context, env map[string]string, args ...string) (string, int) {
	t.Helper()
	return runAppWithin(t, ctx, serveBound, env, args...)
}

// runAppWithin is runAppWith with bound in place of serveBound: a serve
// command runs on a context that ends after bound, and if that ending is
// what stopped it (not ctx's own), the test fails saying serve did not
// refuse.
func runAppWithin(t testing.TB, ctx context.Context, bound time.Duration, env map[string]string, args ...string) (string, int) {
	t.Helper()
	serving := len(args) > 0 && args[0] == "serve"
	if serving {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, bound, errServeBound)
		defer cancel()
	}
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
	if serving && errors.Is(context.Cause(ctx), errServeBound) {
		t.Fatalf("blobgw %s: serve did not refuse: it was still serving after %s and stopped only when the test ended it (exit %d); output:\n%s",
			strings.Join(args, " "), bound, code, out.String())
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

// TestRunAppBoundsServe: an in-process serve that does not refuse (its
// arguments are valid here) returns when runAppWithin's bound ends it, and
// the test fails with a message that says serve did not refuse; a serve
// the caller's own context ends first is left to the caller to judge.
func TestRunAppBoundsServe(t *testing.T) {
	// serve sets the collector from its settings; the tests after this
	// one run with what they had.
	oldPercent, oldLimit := debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetGCPercent(oldPercent); debug.SetMemoryLimit(oldLimit) })
	env := map[string]string{"BLOBGW_CONFIG": ""}
	serveArgs := func() []string {
		return []string{"serve", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--metrics-listen", "off", "--log-level", "warn", "--drain-delay", "0s"}
	}
	// run calls runAppWithin with a recorder in place of t (whose Fatal
	// ends only that goroutine) and waits at most a minute for it.
	run := func(ctx context.Context, bound time.Duration, args []string) (msg string, code int, took time.Duration) {
		rec := &fatalRecorder{TB: t}
		done := make(chan struct{})
		start := time.Now()
		code = -1
		go func() {
			defer close(done)
			_, code = runAppWithin(rec, ctx, bound, env, args...)
		}()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatalf("blobgw %s did not return a minute after its %s bound", strings.Join(args, " "), bound)
		}
		return rec.msg, code, time.Since(start)
	}

	const bound = 2 * time.Second
	args := serveArgs()
	msg, _, took := run(context.Background(), bound, args)
	if took < bound {
		t.Errorf("serve returned after %s, before its %s bound: it did not serve (%q)", took, bound, msg)
	}
	for _, want := range []string{"blobgw " + strings.Join(args, " ") + ": ", "serve did not refuse", "after 2s"} {
		if !strings.Contains(msg, want) {
			t.Errorf("failure message lacks %q: %q", want, msg)
		}
	}

	// The caller's context ends first: no failure of runAppWithin's, and
	// serve's own exit (a clean shutdown) is what the caller sees.
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if msg, code, _ := run(ctx, time.Minute, serveArgs()); msg != "" || code != 0 {
		t.Errorf("serve ended by the caller's context: exit %d, failure %q; want exit 0 and no failure", code, msg)
	}
}
