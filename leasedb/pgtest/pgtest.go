// Package pgtest runs a throwaway PostgreSQL server for tests: initdb into a
// temporary directory, postgres on a free 127.0.0.1 port, one fresh
// database per test.
//
// Typical use shares one server per test binary:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		dsn := pgtest.Start(t) // a fresh, empty database owned by this test
//		...
//	}
//
// Main starts nothing by itself; it stops the shared server (and removes its
// directory) after the tests if one was started. Packages that want their
// own server call StartServer and Server.NewDatabase.
//
// When the PostgreSQL binaries are missing, Start fails the test if the
// environment variable CI is set (to anything but "false" or "0") and skips
// it otherwise. This package must never skip silently in CI, never leave a
// server running after the test binary exits (the server gets a parent-death
// signal as a last resort), and never touch a server it did not start.
package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/blobgw/blobgw/internal/testproc"
)

// ErrNotInstalled is returned by StartServer when initdb or postgres cannot
// be found.
var ErrNotInstalled = errors.New("pgtest: PostgreSQL server binaries (initdb, postgres) not found on PATH or in /usr/lib/postgresql/*/bin")

const dirPrefix = "blobgw-pgtest-"

// Server is one running PostgreSQL server started by this package.
type Server struct {
	dir  string // temporary root: data/, the socket, the log
	port int
	proc *testproc.Proc // nil until postgres runs
	// extra are more postgres arguments, after the defaults (for a -c
	// setting given twice, the last one wins): see StartPair.
	extra []string

	admin *pgxpool.Pool // connected to the "postgres" database
	seq   atomic.Int64

	stopOnce sync.Once
	stopped  atomic.Bool
	stopErr  error
}

// binaries locates initdb and postgres, from one installation.
func binaries() (initdb, postgres string, err error) {
	var dirs []string
	if d := os.Getenv("PGTEST_BINDIR"); d != "" {
		dirs = append(dirs, d)
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			dirs = append(dirs, filepath.Dir(r))
		}
		dirs = append(dirs, filepath.Dir(p))
	}
	installed, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(installed, func(i, j int) bool { // newest major first
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(installed[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(installed[j])))
		return vi > vj
	})
	dirs = append(dirs, installed...)
	for _, d := range dirs {
		i, p := filepath.Join(d, "initdb"), filepath.Join(d, "postgres")
		if testproc.IsExec(i) && testproc.IsExec(p) {
			return i, p, nil
		}
	}
	return "", "", ErrNotInstalled
}

// runAs says which user the server runs as: initdb refuses root, so as
// root it is the "postgres" user; otherwise the current user (nil).
func runAs() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root, and initdb refuses root, but there is no postgres user to run as: %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("pgtest: postgres user has uid %q gid %q", u.Uid, u.Gid)
	}
	// Groups nil: the child drops root's supplementary groups.
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// PrivateServer is StartServer for t: a server of its own, which t may
// stop and restart, stopped when t ends. Without the binaries t is
// skipped, except in CI (testproc.InCI), where it fails.
func PrivateServer(t testing.TB) *Server {
	t.Helper()
	srv, err := StartServer()
	if err != nil {
		if errors.Is(err, ErrNotInstalled) && !testproc.InCI() {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	return srv
}

// StartServer runs initdb in a new temporary directory and starts postgres
// on a free port. The caller must call Stop. It returns an error wrapping
// ErrNotInstalled when the binaries are missing.
func StartServer() (*Server, error) { return startServer(nil, (*Server).initdb) }

// startServer is StartServer with more postgres arguments and another way
// to create the data directory (create gets the initdb path).
func startServer(extra []string, create func(s *Server, initdb string, cred *syscall.Credential) error) (*Server, error) {
	initdb, postgres, err := binaries()
	if err != nil {
		return nil, err
	}
	cred, err := runAs()
	if err != nil {
		return nil, err
	}
	sweepStale()

	base := os.TempDir()
	if len(base) > 60 || cred != nil {
		// The socket path must stay under ~107 bytes, and the postgres
		// user must be able to reach the directory (root's TMPDIR may sit
		// under a directory only root can enter).
		base = "/tmp"
	}
	dir, err := testproc.MkdirOwned(base, dirPrefix)
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	s := &Server{dir: dir, extra: extra}
	ok := false
	defer func() {
		if !ok {
			s.Stop()
		}
	}()
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, fmt.Errorf("pgtest: chown %s to postgres: %w", dir, err)
		}
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}

	if err := create(s, initdb, cred); err != nil {
		return nil, err
	}
	err = testproc.Attempts(5, func() (bool, error) {
		port, err := testproc.FreePort()
		if err != nil {
			return false, fmt.Errorf("pgtest: %w", err)
		}
		return s.start(postgres, cred, port)
	})
	if err != nil {
		return nil, err
	}
	ok = true
	return s, nil
}

// initdb creates the cluster. It prefers an ICU en-US default collation so
// that tests would notice a name column that forgot COLLATE "C"; it falls
// back to the C locale where ICU is unavailable.
func (s *Server) initdb(initdb string, cred *syscall.Credential) error {
	data := filepath.Join(s.dir, "data")
	common := []string{"-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"}
	variants := [][]string{
		{"--locale=C.UTF-8", "--locale-provider=icu", "--icu-locale=en-US"},
		{"--no-locale"},
	}
	var out []byte
	var err error
	for _, v := range variants {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, initdb, append(append([]string(nil), common...), v...)...)
		s.prepare(cmd, cred)
		out, err = cmd.CombinedOutput()
		cancel()
		if err == nil {
			return nil
		}
		os.RemoveAll(data)
	}
	return fmt.Errorf("pgtest: initdb: %w\n%s", err, out)
}

// prepare sets what every child process gets: the server's user, a clean
// environment, the temporary directory as working directory, and a
// parent-death signal so a test binary that dies does not leave it behind.
func (s *Server) prepare(cmd *exec.Cmd, cred *syscall.Credential) {
	cmd.Dir = s.dir
	env := []string{"HOME=" + s.dir, "LC_ALL=C.UTF-8"}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PG") || strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "LC_") || strings.HasPrefix(kv, "LANG") {
			continue
		}
		env = append(env, kv)
	}
	cmd.Env = env
	// The kernel applies the parent-death signal after the user switch (Go
	// sets it after setuid), so it survives Credential. (testproc.Start
	// sets the same signal again for postgres itself.)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT}
}

// start runs postgres on port and waits until it accepts connections.
// retry reports whether another port may help (the port was taken).
func (s *Server) start(postgres string, cred *syscall.Credential, port int) (retry bool, err error) {
	args := []string{
		"-D", filepath.Join(s.dir, "data"),
		"-k", s.dir,
		"-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "fsync=off",
		"-c", "synchronous_commit=off",
		"-c", "full_page_writes=off",
		"-c", "max_connections=200",
		"-c", "log_min_messages=warning",
	}
	cmd := exec.Command(postgres, append(args, s.extra...)...)
	s.prepare(cmd, cred)
	proc, err := testproc.Start(cmd, filepath.Join(s.dir, "postgres.log"), syscall.SIGQUIT)
	if err != nil {
		return false, fmt.Errorf("pgtest: start postgres: %w", err)
	}
	s.proc, s.port = proc, port

	err = proc.WaitReady(time.Now().Add(testproc.ReadyTimeout), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		pool, err := pgxpool.New(ctx, s.DSN("postgres"))
		if err != nil {
			return err
		}
		if err := pool.Ping(ctx); err != nil {
			pool.Close()
			return err
		}
		s.admin = pool
		return nil
	})
	if err == nil {
		return false, nil
	}
	exited, retry, err := testproc.StartErr(err, "pgtest", "postgres", proc,
		"could not bind", "already in use", "could not create any TCP/IP sockets")
	if exited {
		s.proc = nil
	}
	return retry, err
}

// DSN returns the URL of database on this server (superuser postgres, no
// password).
func (s *Server) DSN(database string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, database)
}

// Port returns the TCP port the server listens on (127.0.0.1).
func (s *Server) Port() int { return s.port }

var unsafeChars = regexp.MustCompile(`[^a-z0-9_]+`)

// CreateDatabase creates a new empty database and returns its DSN. The name
// is derived from hint and made unique.
func (s *Server) CreateDatabase(ctx context.Context, hint string) (name, dsn string, err error) {
	if s.admin == nil {
		return "", "", errors.New("pgtest: server is not running")
	}
	name = fmt.Sprintf("t%d_%s", s.seq.Add(1), unsafeChars.ReplaceAllString(strings.ToLower(hint), "_"))
	if len(name) > 63 {
		name = name[:63]
	}
	if _, err := s.admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", "", fmt.Errorf("pgtest: create database %s: %w", name, err)
	}
	return name, s.DSN(name), nil
}

// DropDatabase drops a database, disconnecting whoever is still connected.
func (s *Server) DropDatabase(ctx context.Context, name string) error {
	if s.admin == nil {
		return errors.New("pgtest: server is not running")
	}
	if _, err := s.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("pgtest: drop database %s: %w", name, err)
	}
	return nil
}

// NewDatabase creates a fresh database for t, dropped when t ends, and
// returns its DSN.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	var dsn string
	testproc.Scratch(t, func(ctx context.Context) (name string, err error) {
		name, dsn, err = s.CreateDatabase(ctx, t.Name())
		return name, err
	}, func(ctx context.Context, name string) error {
		if s.stopped.Load() {
			return nil // the database went with the server
		}
		return s.DropDatabase(ctx, name)
	}, 30*time.Second)
	return dsn
}

// Stop shuts the server down (fast shutdown, then immediate, then kill)
// and removes its directory. It is safe to call more than once.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		s.stopped.Store(true)
		if s.admin != nil {
			s.admin.Close()
		}
		// SIGINT is a fast shutdown, SIGQUIT an immediate one; SIGKILL is
		// the last resort.
		s.stopErr = testproc.StopAndRemove("pgtest", "postgres", s.proc, s.dir, testproc.Step{Sig: syscall.SIGINT, Wait: 30 * time.Second},
			testproc.Step{Sig: syscall.SIGQUIT, Wait: 10 * time.Second}, testproc.Step{Sig: syscall.SIGKILL, Wait: 10 * time.Second})
	})
	return s.stopErr
}

// sweepStale removes directories of servers whose test binary died without
// stopping them (killed by a timeout, say). A leftover postgres is stopped
// only if its command line names that directory, so nothing else is touched.
func sweepStale() {
	bases := []string{os.TempDir()}
	if os.TempDir() != "/tmp" {
		bases = append(bases, "/tmp")
	}
	for _, dir := range testproc.OrphanedDirs(dirPrefix, bases...) {
		if pb, err := os.ReadFile(filepath.Join(dir, "data", "postmaster.pid")); err == nil {
			line, _, _ := strings.Cut(string(pb), "\n")
			if pid, err := strconv.Atoi(strings.TrimSpace(line)); err == nil && pid > 0 && testproc.Alive(pid) {
				cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				if !bytes.Contains(cmdline, []byte(dir)) {
					continue
				}
				syscall.Kill(pid, syscall.SIGQUIT)
				for i := 0; i < 100 && testproc.Alive(pid); i++ {
					time.Sleep(50 * time.Millisecond)
				}
				if testproc.Alive(pid) {
					continue
				}
			}
		}
		os.RemoveAll(dir)
	}
}

// The shared server of this test binary.
var shared testproc.Shared[*Server]

// SharedServer returns the test binary's shared server, starting it at the
// first call. When the binaries are missing it fails t if CI is set and
// skips t otherwise; any other start-up failure fails t.
func SharedServer(t testing.TB) *Server {
	t.Helper()
	return shared.Server(t, testproc.Harness{Pkg: "pgtest", What: "PostgreSQL", NotInstalled: ErrNotInstalled,
		Install: "install the PostgreSQL server or set PGTEST_BINDIR"}, StartServer)
}

// Start returns the DSN of a fresh, empty database on the shared server,
// dropped when t ends.
func Start(t testing.TB) string {
	t.Helper()
	return SharedServer(t).NewDatabase(t)
}

// Managed tells pgtest that the caller's TestMain stops the shared server
// with StopShared (for packages that also run other harnesses and so cannot
// use Main).
func Managed() { shared.Managed() }

// Main runs the tests and then stops the shared server if one was started.
// Call it from TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
func Main(m *testing.M) {
	Managed()
	testproc.Main(m, StopShared)
}

// StopShared stops the shared server if it was started. Main calls it; a
// TestMain that needs more control may call it itself after m.Run.
func StopShared() error { return shared.Stop((*Server).Stop) }
