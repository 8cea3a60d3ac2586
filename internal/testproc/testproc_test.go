package testproc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

func TestTail(t *testing.T) {
	long := bytes.Repeat([]byte("x"), 5000)
	long[999] = 'y' // the last byte before the final 4000
	tests := []struct {
		name string
		in   []byte
		want int
	}{
		{"empty", nil, 0},
		{"short", []byte("log"), 3},
		{"exactly 4000", bytes.Repeat([]byte("z"), 4000), 4000},
		{"long", long, 4000},
	}
	for _, tc := range tests {
		got := Tail(tc.in)
		if len(got) != tc.want || !bytes.HasSuffix(tc.in, got) {
			t.Errorf("%s: Tail = %d bytes, want the last %d", tc.name, len(got), tc.want)
		}
	}
	if bytes.IndexByte(Tail(long), 'y') >= 0 {
		t.Error("Tail kept a byte from before the last 4000")
	}
}

func TestInCI(t *testing.T) {
	tests := []struct {
		value string
		want  bool
	}{
		{"", false}, {"false", false}, {"0", false}, {" FALSE ", false},
		{"true", true}, {"1", true}, {"yes", true},
	}
	for _, tc := range tests {
		t.Setenv("CI", tc.value)
		if got := InCI(); got != tc.want {
			t.Errorf("CI=%q: InCI() = %v, want %v", tc.value, got, tc.want)
		}
	}
}

// deadPid returns the pid of a process that has exited.
func deadPid(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestOrphanedDirs(t *testing.T) {
	base := t.TempDir()
	mine, err := MkdirOwned(base, "h-")
	if err != nil {
		t.Fatal(err)
	}
	orphan, err := MkdirOwned(base, "h-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(orphan, ownerFile), []byte(strconv.Itoa(deadPid(t))), 0o644); err != nil {
		t.Fatal(err)
	}
	noOwner := filepath.Join(base, "h-creating")
	garbled := filepath.Join(base, "h-garbled")
	other := filepath.Join(base, "other-x")
	for _, d := range []string{noOwner, garbled, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(garbled, ownerFile), []byte("nope"), 0o644)
	os.WriteFile(filepath.Join(other, ownerFile), []byte(strconv.Itoa(deadPid(t))), 0o644)

	if got := OrphanedDirs("h-", base); !slices.Equal(got, []string{orphan}) {
		t.Fatalf("OrphanedDirs = %q, want only %q (not %q, whose owner lives)", got, orphan, mine)
	}
	if got := OrphanedDirs("h-", base, filepath.Join(base, "missing")); len(got) != 1 {
		t.Fatalf("OrphanedDirs with a missing base = %q", got)
	}
}

func TestProcLifecycle(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "p.log")

	// A process that stops on SIGTERM is stopped by the first step.
	p, err := Start(exec.Command("sh", "-c", "echo started; exec sleep 60"), log, syscall.SIGKILL)
	if err != nil {
		t.Fatal(err)
	}
	if p.Cmd.SysProcAttr.Pdeathsig != syscall.SIGKILL {
		t.Fatalf("Pdeathsig = %v", p.Cmd.SysProcAttr.Pdeathsig)
	}
	if err := p.WaitReady(time.Now().Add(10*time.Second), func() error {
		if !bytes.Contains(p.Log(), []byte("started")) {
			return errors.New("no output yet")
		}
		return nil
	}); err != nil {
		t.Fatalf("WaitReady = %v", err)
	}
	start := time.Now()
	if err := p.Stop("sleep", Step{syscall.SIGTERM, 10 * time.Second}, Step{syscall.SIGKILL, 10 * time.Second}); err != nil {
		t.Fatalf("Stop = %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Stop took %v: SIGTERM was not enough?", d)
	}

	// A process that ignores SIGTERM gets SIGKILL after the first wait.
	p, err = Start(exec.Command("sh", "-c", "trap '' TERM; echo ready; while :; do sleep 1; done"), log, syscall.SIGKILL)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WaitReady(time.Now().Add(10*time.Second), func() error {
		if !bytes.Contains(p.Log(), []byte("ready")) {
			return errors.New("not ready")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop("stubborn", Step{syscall.SIGTERM, 200 * time.Millisecond}, Step{syscall.SIGKILL, 10 * time.Second}); err != nil {
		t.Fatalf("Stop with SIGKILL = %v", err)
	}
	select {
	case <-p.Done():
	default:
		t.Fatal("Done not closed after Stop")
	}

	// A process that exits during start-up: WaitReady says so, with its log.
	p, err = Start(exec.Command("sh", "-c", "echo bind: address already in use; exit 3"), log, syscall.SIGKILL)
	if err != nil {
		t.Fatal(err)
	}
	err = p.WaitReady(time.Now().Add(10*time.Second), func() error { return errors.New("not yet") })
	var exited *Exited
	if !errors.As(err, &exited) || !bytes.Contains(exited.Log, []byte("already in use")) || exited.State.ExitCode() != 3 {
		t.Fatalf("WaitReady of an exiting process = %v", err)
	}

	// Not ready by the deadline: ready's last error.
	p, err = Start(exec.Command("sleep", "60"), log, syscall.SIGKILL)
	if err != nil {
		t.Fatal(err)
	}
	errLate := errors.New("still starting")
	if err := p.WaitReady(time.Now().Add(100*time.Millisecond), func() error { return errLate }); err != errLate {
		t.Fatalf("WaitReady past its deadline = %v, want %v", err, errLate)
	}
	if err := p.Stop("sleep", Step{syscall.SIGKILL, 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
}

func TestShared(t *testing.T) {
	var sh Shared[*int]
	starts, stops := 0, 0
	start := func() (*int, error) { starts++; v := 7; return &v, nil }
	stop := func(*int) error { stops++; return nil }
	if err := sh.Stop(stop); err != nil || stops != 0 {
		t.Fatalf("Stop before any Get: %v, %d stops", err, stops)
	}
	v, err, unmanaged := sh.Get(start)
	if err != nil || *v != 7 || !unmanaged {
		t.Fatalf("first Get without Managed = %v, %v, unmanaged %v", v, err, unmanaged)
	}
	if _, _, unmanaged := sh.Get(start); unmanaged || starts != 1 {
		t.Fatalf("second Get: unmanaged %v, %d starts", unmanaged, starts)
	}
	if err := sh.Stop(stop); err != nil || stops != 1 {
		t.Fatalf("Stop: %v, %d stops", err, stops)
	}

	var managed Shared[*int]
	managed.Managed()
	if _, _, unmanaged := managed.Get(start); unmanaged {
		t.Fatal("Get after Managed reported unmanaged")
	}
	var failed Shared[*int]
	errStart := errors.New("no binary")
	if _, err, _ := failed.Get(func() (*int, error) { return nil, errStart }); err != errStart {
		t.Fatalf("Get of a failing start = %v", err)
	}
	if err := failed.Stop(func(*int) error { t.Fatal("stop called for a server that never started"); return nil }); err != nil {
		t.Fatal(err)
	}
}

func TestSharedServerSkipsWithoutBinary(t *testing.T) {
	errMissing := errors.New("fake: binary not found")
	h := Harness{Pkg: "fake", What: "Fake", NotInstalled: errMissing, Install: "install fake"}
	var sh Shared[*int]
	sh.Managed()
	t.Setenv("CI", "")
	skipped := false
	t.Run("missing", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		sh.Server(t, h, func() (*int, error) { return nil, fmt.Errorf("start: %w", errMissing) })
		t.Error("Server returned although the binary is missing")
	})
	if !skipped {
		t.Fatal("a missing binary outside CI did not skip the test")
	}
	var ok Shared[*int]
	v := 3
	if got := ok.Server(t, h, func() (*int, error) { return &v, nil }); got != &v {
		t.Fatalf("Server = %v", got)
	}
}
