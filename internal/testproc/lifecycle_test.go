package testproc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestAttempts(t *testing.T) {
	errTaken, errFatal := errors.New("port taken"), errors.New("bad config")
	for _, tc := range []struct {
		name    string
		results []error // what each call returns; errTaken asks for a retry
		n       int
		calls   int
		want    error
	}{
		{"first works", []error{nil}, 5, 1, nil},
		{"taken then works", []error{errTaken, errTaken, nil}, 5, 3, nil},
		{"no retry on other errors", []error{errFatal, nil}, 5, 1, errFatal},
		{"taken every time", []error{errTaken, errTaken, errTaken}, 3, 3, errTaken},
		{"taken then fatal", []error{errTaken, errFatal, nil}, 5, 2, errFatal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			err := Attempts(tc.n, func() (bool, error) {
				err := tc.results[calls]
				calls++
				return err == errTaken, err
			})
			if err != tc.want || calls != tc.calls {
				t.Fatalf("Attempts = %v after %d calls, want %v after %d", err, calls, tc.want, tc.calls)
			}
		})
	}
}

func TestStartErr(t *testing.T) {
	log := filepath.Join(t.TempDir(), "p.log")
	for _, tc := range []struct {
		out   string
		retry bool
	}{
		{"bind: address already in use", true},
		{"FATAL: could not create any TCP/IP sockets", true},
		{"FATAL: bad option", false},
	} {
		p, err := Start(exec.Command("sh", "-c", "echo '"+tc.out+"'; exit 3"), log, syscall.SIGKILL)
		if err != nil {
			t.Fatal(err)
		}
		werr := p.WaitReady(time.Now().Add(10*time.Second), func() error { return errors.New("not yet") })
		exited, retry, err := StartErr(werr, "pkg", "srv", p, "already in use", "could not create any TCP/IP sockets")
		if !exited || retry != tc.retry || err == nil || !strings.HasPrefix(err.Error(), "pkg: srv exited during start-up") ||
			!strings.Contains(err.Error(), tc.out) {
			t.Errorf("%q: StartErr = %v, %v, %v; want exited, retry %v", tc.out, exited, retry, err, tc.retry)
		}
	}

	// Alive but not ready: not exited, no retry, the last error and the log.
	p, err := Start(exec.Command("sh", "-c", "echo slow; exec sleep 60"), log, syscall.SIGKILL)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop("sleep", Step{syscall.SIGKILL, 10 * time.Second})
	for !strings.Contains(string(p.Log()), "slow") {
		time.Sleep(10 * time.Millisecond)
	}
	exited, retry, err := StartErr(errors.New("connection refused"), "pkg", "srv", p, "already in use")
	if exited || retry || err == nil || !strings.Contains(err.Error(), "pkg: srv not ready after 60s: connection refused") ||
		!strings.Contains(err.Error(), "slow") {
		t.Errorf("StartErr of a live process = %v, %v, %v", exited, retry, err)
	}
}

func TestStopAndRemove(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "srv")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := Start(exec.Command("sleep", "60"), filepath.Join(dir, "p.log"), syscall.SIGKILL)
	if err != nil {
		t.Fatal(err)
	}
	if err := StopAndRemove("pkg", "sleep", p, dir, Step{syscall.SIGTERM, 10 * time.Second}); err != nil {
		t.Fatalf("StopAndRemove = %v", err)
	}
	select {
	case <-p.Done():
	default:
		t.Fatal("the process still runs")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the directory is left: %v", err)
	}
	// Not running (nil): only the directory goes.
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := StopAndRemove("pkg", "sleep", nil, dir); err != nil {
		t.Fatalf("StopAndRemove(nil) = %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the directory is left: %v", err)
	}
	// A process that outlives every step: the error names pkg and it.
	p, err = Start(exec.Command("sh", "-c", "trap '' TERM; echo ready; while :; do sleep 1; done"), filepath.Join(t.TempDir(), "p.log"), syscall.SIGKILL)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop("stubborn", Step{syscall.SIGKILL, 10 * time.Second})
	for !strings.Contains(string(p.Log()), "ready") {
		time.Sleep(10 * time.Millisecond)
	}
	if err := StopAndRemove("pkg", "stubborn", p, dir, Step{syscall.SIGTERM, 100 * time.Millisecond}); err == nil || !strings.HasPrefix(err.Error(), "pkg: stubborn") {
		t.Fatalf("StopAndRemove of a stubborn process = %v", err)
	}
}

func TestScratch(t *testing.T) {
	var removed []string
	t.Run("made", func(t *testing.T) {
		name := Scratch(t, func(context.Context) (string, error) { return "db1", nil },
			func(_ context.Context, name string) error { removed = append(removed, name); return nil }, time.Second)
		if name != "db1" {
			t.Fatalf("Scratch = %q", name)
		}
		if len(removed) != 0 {
			t.Fatal("removed before the test ended")
		}
	})
	if len(removed) != 1 || removed[0] != "db1" {
		t.Fatalf("removed %v when the test ended, want [db1]", removed)
	}
	t.Run("kept", func(t *testing.T) {
		if name := Scratch(t, func(context.Context) (string, error) { return "db2", nil }, nil, 0); name != "db2" {
			t.Fatalf("Scratch = %q", name)
		}
	})
	// A failed creation fails the test (Fatal ends the goroutine, as
	// testing's does).
	var ft fakeTB
	done := make(chan struct{})
	go func() {
		defer close(done)
		Scratch(&ft, func(context.Context) (string, error) { return "", errors.New("no space") }, nil, 0)
	}()
	<-done
	if !ft.fatal {
		t.Fatal("a failed create did not fail the test")
	}
}

// fakeTB records Fatal (ending its goroutine as testing does).
type fakeTB struct {
	testing.TB
	fatal bool
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatal(args ...any) {
	f.fatal = true
	runtime.Goexit()
}
