// Package testproc is what the test harnesses that run a server process
// (leasedb/pgtest for PostgreSQL, backends/s3/miniotest for MinIO) share:
// start a child with a parent-death signal and its output in a log file,
// wait until it is ready on a free 127.0.0.1 port, stop it with escalating
// signals, tag temporary directories with the owning test binary's pid so
// a later run can sweep what a killed one left, hold one server per test
// binary, and a TestMain that stops the servers after the tests.
//
// It must never leave a process running after the test binary exits,
// never signal a process it did not start, and never remove a directory
// whose owner is alive.
package testproc

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// IsExec reports whether p is an executable regular file.
func IsExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// InCI reports whether the environment variable CI is set to anything but
// "false" or "0": a harness whose server binary is missing then fails the
// test instead of skipping it.
func InCI() bool {
	v := strings.TrimSpace(strings.ToLower(os.Getenv("CI")))
	return v != "" && v != "false" && v != "0"
}

// FreePort asks the kernel for a free 127.0.0.1 port. Another process may
// take it before the server binds it; callers retry with a new one.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Tail is the last 4000 bytes of a log, for an error message.
func Tail(b []byte) []byte {
	if len(b) > 4000 {
		return b[len(b)-4000:]
	}
	return b
}

// Alive reports whether a process with this pid exists (EPERM: it exists
// but belongs to another user).
func Alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Proc is a started child process whose output goes to a log file.
type Proc struct {
	Cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed when the process has exited
}

// Start starts cmd with its stdout and stderr written to logPath
// (truncated first) and deathSig as its parent-death signal, so that a
// test binary that dies does not leave it behind. cmd.SysProcAttr, when
// set (a Credential, say), is kept.
func Start(cmd *exec.Cmd, logPath string, deathSig syscall.Signal) (*Proc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child has its own descriptor
	cmd.Stdout, cmd.Stderr = logf, logf
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// The kernel applies the parent-death signal after a user switch (Go
	// sets it after setuid), so it survives Credential.
	cmd.SysProcAttr.Pdeathsig = deathSig
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Proc{Cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Log returns the process's output so far.
func (p *Proc) Log() []byte {
	b, _ := os.ReadFile(p.logPath)
	return b
}

// Exited is WaitReady's error when the process exits before it is ready.
type Exited struct {
	State *os.ProcessState
	Log   []byte
}

func (e *Exited) Error() string { return fmt.Sprintf("exited during start-up (%v)", e.State) }

// WaitReady calls ready every 50 ms until it returns nil. It returns an
// *Exited when the process exits first, and ready's last error once
// deadline has passed.
func (p *Proc) WaitReady(deadline time.Time, ready func() error) error {
	for {
		select {
		case <-p.done:
			return &Exited{State: p.Cmd.ProcessState, Log: p.Log()}
		default:
		}
		err := ready()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Step is one stage of Stop: send Sig, then wait up to Wait for the exit.
type Step struct {
	Sig  os.Signal
	Wait time.Duration
}

// Stop sends each step's signal in turn until the process exits (name
// goes into the errors).
func (p *Proc) Stop(name string, steps ...Step) error {
	pid := p.Cmd.Process.Pid
	for _, step := range steps {
		if err := p.Cmd.Process.Signal(step.Sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return fmt.Errorf("signal %s (pid %d): %w", name, pid, err)
		}
		select {
		case <-p.done:
			return nil
		case <-time.After(step.Wait):
		}
	}
	return fmt.Errorf("%s (pid %d) did not exit", name, pid)
}

const ownerFile = "owner.pid"

// MkdirOwned creates a new temporary directory under base (os.TempDir()
// when empty) named prefix followed by random characters, holding
// owner.pid with this process's pid. On failure nothing is left behind.
func MkdirOwned(base, prefix string) (string, error) {
	dir, err := os.MkdirTemp(base, prefix)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// OrphanedDirs returns the directories named prefix* under each base whose
// owner.pid names a process that is gone. A directory without owner.pid
// is being created, or not a harness's, and is left alone.
func OrphanedDirs(prefix string, bases ...string) []string {
	var out []string
	for _, base := range bases {
		dirs, _ := filepath.Glob(filepath.Join(base, prefix+"*"))
		for _, dir := range dirs {
			b, err := os.ReadFile(filepath.Join(dir, ownerFile))
			if err != nil {
				continue
			}
			owner, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil || owner <= 0 || Alive(owner) {
				continue
			}
			out = append(out, dir)
		}
	}
	return out
}

// Shared is the one server of type S a test binary shares, started at
// the first Get and stopped by Stop (from TestMain).
type Shared[S any] struct {
	mu      sync.Mutex
	srv     S
	err     error
	started bool
	managed bool // a TestMain is in charge of stopping it
}

// Get returns the shared server, calling start the first time.
// unmanaged reports that this call started it while no TestMain had
// called Managed, so nothing will stop it: the caller should say so.
func (sh *Shared[S]) Get(start func() (S, error)) (srv S, err error, unmanaged bool) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if !sh.started {
		sh.started = true
		sh.srv, sh.err = start()
		unmanaged = sh.err == nil && !sh.managed
	}
	return sh.srv, sh.err, unmanaged
}

// Harness names a harness in Server's messages.
type Harness struct {
	Pkg          string // "pgtest"
	What         string // "PostgreSQL"
	NotInstalled error  // what start returns (wrapped) when the binary is missing
	Install      string // how to install it
}

// Server is Get for a test. When the binary is missing it fails t if CI
// is set (InCI) and skips t otherwise; any other start-up failure fails t.
func (sh *Shared[S]) Server(t testing.TB, h Harness, start func() (S, error)) S {
	t.Helper()
	srv, err, unmanaged := sh.Get(start)
	if unmanaged {
		t.Logf("%s: started a shared %s server without %s.Main; call %s.Main(m) from TestMain so it is stopped when the tests end", h.Pkg, h.What, h.Pkg, h.Pkg)
	}
	if err != nil {
		if errors.Is(err, h.NotInstalled) {
			if InCI() {
				t.Fatalf("%v (CI is set: %s tests must run; %s)", err, h.What, h.Install)
			}
			t.Skipf("%v; skipping (%s; with CI=true this fails)", err, h.Install)
		}
		t.Fatalf("%v", err)
	}
	return srv
}

// Managed records that a TestMain stops the shared server.
func (sh *Shared[S]) Managed() {
	sh.mu.Lock()
	sh.managed = true
	sh.mu.Unlock()
}

// Stop stops the shared server with stop if it was started.
func (sh *Shared[S]) Stop(stop func(S) error) error {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if !sh.started || sh.err != nil {
		return nil
	}
	return stop(sh.srv)
}

// Main runs the tests, then every stop (each harness's StopShared), and
// exits; a failing stop fails the run. Call it from TestMain after the
// harnesses' Managed.
func Main(m *testing.M, stops ...func() error) {
	code := m.Run()
	for _, stop := range stops {
		if err := stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
	}
	os.Exit(code)
}
