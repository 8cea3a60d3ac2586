package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blobgw/blobgw/internal/config"
)

// The collector settings: the default, file < environment < flag, and
// bad values exit 2 naming the setting.
func TestGCSettingPrecedence(t *testing.T) {
	out, code := runApp(t, nil, "config")
	if code != 0 || !yamlHas(out, "go_gc_percent", config.DefaultGCPercent) || !yamlHas(out, "go_memory_limit", config.DefaultMemoryLimit) {
		t.Fatalf("default (%d):\n%s", code, out)
	}
	file := filepath.Join(t.TempDir(), "blobgw.yaml")
	// A number and a bare off, as an operator writes them.
	os.WriteFile(file, []byte("go_gc_percent: 250\ngo_memory_limit: off\n"), 0o644)
	out, code = runApp(t, nil, "config", "--config", file)
	if code != 0 || !yamlHas(out, "go_gc_percent", "250") || !yamlHas(out, "go_memory_limit", "off") {
		t.Fatalf("file (%d):\n%s", code, out)
	}
	os.WriteFile(file, []byte("go_gc_percent: 250\ngo_memory_limit: 2GiB\n"), 0o644)
	out, code = runApp(t, nil, "config", "--config", file)
	if code != 0 || !yamlHas(out, "go_gc_percent", "250") || !yamlHas(out, "go_memory_limit", "2GiB") {
		t.Fatalf("file (%d):\n%s", code, out)
	}
	env := map[string]string{"BLOBGW_CONFIG": file, "BLOBGW_GO_GC_PERCENT": "300", "BLOBGW_GO_MEMORY_LIMIT": "3GiB"}
	out, code = runApp(t, env, "config")
	if code != 0 || !yamlHas(out, "go_gc_percent", "300") || !yamlHas(out, "go_memory_limit", "3GiB") {
		t.Fatalf("env over file (%d):\n%s", code, out)
	}
	out, code = runApp(t, env, "config", "--go-gc-percent", "off", "--go-memory-limit", "512MiB")
	if code != 0 || !yamlHas(out, "go_gc_percent", "off") || !yamlHas(out, "go_memory_limit", "512MiB") {
		t.Fatalf("flag over env (%d):\n%s", code, out)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--go-gc-percent", "abc"}, "go_gc_percent"},
		{[]string{"--go-gc-percent", "5"}, "go_gc_percent"},
		{[]string{"--go-memory-limit", "1GB"}, "go_memory_limit"},
		{[]string{"--go-memory-limit", "16MiB"}, "go_memory_limit"},
		{[]string{"--go-gc-percent", "off"}, "needs a go_memory_limit"},
	} {
		out, code := runApp(t, map[string]string{"BLOBGW_CONFIG": ""}, append([]string{"serve"}, tt.args...)...)
		if code != 2 || !strings.Contains(out, tt.want) || strings.Count(strings.TrimSpace(out), "\n") > 0 {
			t.Errorf("serve %v: exit %d, %q; want exit 2 with one line naming %q", tt.args, code, out, tt.want)
		}
	}
	// A GOGC the runtime cannot read (it would run at 100 instead) stops
	// serve before anything starts.
	// (Bounded: a serve that did start would serve until ctx ends.)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, code = runAppWith(t, ctx, map[string]string{"BLOBGW_CONFIG": "", "GOGC": "fast"}, "serve", "--data-dir", t.TempDir(),
		"--listen", "127.0.0.1:0", "--metrics-listen", "off")
	if code != 2 || !strings.Contains(out, "GOGC") {
		t.Errorf("GOGC=fast: exit %d, %q; want exit 2 naming GOGC", code, out)
	}
}

// applyGC sets the runtime from the settings unless GOGC / GOMEMLIMIT are
// in the environment, and reports what the runtime then runs with.
func TestApplyGC(t *testing.T) {
	oldPercent := debug.SetGCPercent(100)
	oldLimit := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetGCPercent(oldPercent); debug.SetMemoryLimit(oldLimit) })
	tests := []struct {
		name           string
		percent, limit string
		env            map[string]string
		// the runtime's values before applyGC, as if read from the
		// environment at start
		startPercent int
		startLimit   int64
		want         gcApplied
	}{
		{"settings", "400", "1GiB", nil, 100, math.MaxInt64,
			gcApplied{Percent: 400, Limit: 1 << 30, PercentFrom: "go_gc_percent", LimitFrom: "go_memory_limit"}},
		{"off with a limit", "off", "512MiB", nil, 100, math.MaxInt64,
			gcApplied{Percent: -1, Limit: 512 << 20, PercentFrom: "go_gc_percent", LimitFrom: "go_memory_limit"}},
		{"limit off", "200", "off", nil, 100, 1 << 30,
			gcApplied{Percent: 200, Limit: math.MaxInt64, PercentFrom: "go_gc_percent", LimitFrom: "go_memory_limit"}},
		{"GOGC wins", "400", "1GiB", map[string]string{"GOGC": "150"}, 150, math.MaxInt64,
			gcApplied{Percent: 150, Limit: 1 << 30, PercentFrom: "GOGC", LimitFrom: "go_memory_limit"}},
		{"GOMEMLIMIT wins", "400", "1GiB", map[string]string{"GOMEMLIMIT": "300MiB"}, 100, 300 << 20,
			gcApplied{Percent: 400, Limit: 300 << 20, PercentFrom: "go_gc_percent", LimitFrom: "GOMEMLIMIT"}},
		{"both win", "400", "1GiB", map[string]string{"GOGC": "off", "GOMEMLIMIT": "300MiB"}, -1, 300 << 20,
			gcApplied{Percent: -1, Limit: 300 << 20, PercentFrom: "GOGC", LimitFrom: "GOMEMLIMIT"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			debug.SetGCPercent(tt.startPercent)
			debug.SetMemoryLimit(tt.startLimit)
			cfg := config.Default()
			cfg.GoGCPercent, cfg.GoMemoryLimit = tt.percent, tt.limit
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			got, err := applyGC(cfg, func(k string) string { return tt.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("applyGC = %+v, want %+v", got, tt.want)
			}
			if p, l := debug.SetGCPercent(100), debug.SetMemoryLimit(-1); p != tt.want.Percent || l != tt.want.Limit {
				t.Fatalf("runtime runs with GOGC %d, limit %d; want %d, %d", p, l, tt.want.Percent, tt.want.Limit)
			}
		})
	}
	if _, err := applyGC(config.Default(), func(k string) string { return map[string]string{"GOGC": "4e2"}[k] }); err == nil {
		t.Fatal("GOGC=4e2 accepted")
	}
}

// A started `blobgw serve` runs with the configured collector settings:
// its /metrics reports them (the Go collector's go_gc_gogc_percent and
// go_gc_gomemlimit_bytes, read from runtime/metrics), and GOGC /
// GOMEMLIMIT in its environment win over them. The start-up log names
// them.
func TestServeAppliesGC(t *testing.T) {
	dir := t.TempDir()
	bin := buildBlobgw(t, filepath.Join(dir, "blobgw"))
	defPercent, _ := config.ParseGCPercent(config.DefaultGCPercent)
	defLimit, _ := config.ParseMemoryLimit(config.DefaultMemoryLimit)
	tests := []struct {
		name      string
		env, args []string
		percent   int
		limit     int64
		logHas    string
	}{
		{"defaults", nil, nil, defPercent, defLimit, "go_gc_percent=" + config.DefaultGCPercent},
		{"flags", nil, []string{"--go-gc-percent", "250", "--go-memory-limit", "300MiB"}, 250, 300 << 20,
			"go_gc_percent=250 from=go_gc_percent go_memory_limit=300MiB limit_from=go_memory_limit"},
		{"environment", []string{"BLOBGW_GO_GC_PERCENT=350", "BLOBGW_GO_MEMORY_LIMIT=1GiB"}, nil, 350, 1 << 30,
			"go_gc_percent=350"},
		{"GOGC and GOMEMLIMIT win", []string{"GOGC=150", "GOMEMLIMIT=200MiB"}, []string{"--go-gc-percent", "250", "--go-memory-limit", "300MiB"},
			150, 200 << 20, "go_gc_percent=150 from=GOGC go_memory_limit=200MiB limit_from=GOMEMLIMIT"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr, metricsAddr := freeAddr(t), freeAddr(t)
			cmd := exec.Command(bin, append([]string{"serve", "--listen", addr, "--metrics-listen", metricsAddr,
				"--data-dir", filepath.Join(dir, "data"+strconv.Itoa(i))}, tt.args...)...)
			cmd.Env = append(gcFreeEnviron(), append([]string{"BLOBGW_CONFIG="}, tt.env...)...)
			logs := newSyncBuffer()
			cmd.Stderr = logs
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				done := make(chan struct{})
				go func() { cmd.Wait(); close(done) }()
				terminate(cmd.Process, done, 15*time.Second)
			})
			var body []byte
			for deadline := time.Now().Add(60 * time.Second); ; {
				resp, err := http.Get("http://" + metricsAddr + "/metrics")
				if err == nil {
					body, _ = io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode == 200 {
						break
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("no /metrics: %v\n%s", err, logs.String())
				}
				time.Sleep(100 * time.Millisecond)
			}
			if got, ok := promValue(body, "go_gc_gogc_percent"); !ok || got != float64(tt.percent) {
				t.Errorf("go_gc_gogc_percent %v (found %v), want %d", got, ok, tt.percent)
			}
			if got, ok := promValue(body, "go_gc_gomemlimit_bytes"); !ok || got != float64(tt.limit) {
				t.Errorf("go_gc_gomemlimit_bytes %v (found %v), want %d", got, ok, tt.limit)
			}
			if !strings.Contains(logs.String(), "go garbage collector") || !strings.Contains(logs.String(), tt.logHas) {
				t.Errorf("start-up log lacks %q:\n%s", tt.logHas, logs.String())
			}
		})
	}
}

// yamlHas reports whether the YAML text out sets key to the string v,
// quoted or not.
func yamlHas(out, key, v string) bool {
	return strings.Contains(out, "\n"+key+": "+v+"\n") || strings.Contains(out, "\n"+key+": \""+v+"\"\n")
}

// gcFreeEnviron is this process's environment without GOGC, GOMEMLIMIT and
// the BLOBGW_ variables.
func gcFreeEnviron() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "GOGC" || k == "GOMEMLIMIT" || strings.HasPrefix(k, "BLOBGW_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// promValue finds an unlabelled sample in a Prometheus text exposition.
func promValue(body []byte, name string) (float64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f, err == nil
		}
	}
	return 0, false
}
