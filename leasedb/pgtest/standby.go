package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blobgw/blobgw/internal/testproc"
)

// standbyName is the standby's application_name, which the primary's
// synchronous_standby_names lists.
const standbyName = "standby1"

// Pair is a primary with one synchronous streaming standby, for failover
// tests: the primary acknowledges a commit only once the standby has
// flushed its WAL (synchronous_commit = on, synchronous_standby_names =
// 'FIRST 1 (standby1)'), so after KillPrimary and Promote the standby holds
// every commit a client was told about.
//
// Both run with fsync off like Server: they survive the kill of a process,
// not of the machine, which is all a test needs.
type Pair struct {
	Primary, Standby *Server
	pgCtl            string
	cred             *syscall.Credential
}

// StartPair starts a primary and a standby replicating from it and waits
// until the standby streams synchronously. Both are stopped when t ends.
// When the binaries (initdb, postgres, pg_basebackup, pg_ctl) are missing
// it fails t if CI is set and skips t otherwise.
func StartPair(t testing.TB) *Pair {
	t.Helper()
	p, err := startPair()
	if err != nil {
		if errors.Is(err, ErrNotInstalled) && !testproc.InCI() {
			t.Skipf("%v; skipping (install the PostgreSQL server or set PGTEST_BINDIR; with CI=true this fails)", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

func startPair() (*Pair, error) {
	initdb, _, err := binaries()
	if err != nil {
		return nil, err
	}
	bin := filepath.Dir(initdb)
	pgCtl, basebackup := filepath.Join(bin, "pg_ctl"), filepath.Join(bin, "pg_basebackup")
	if !testproc.IsExec(pgCtl) || !testproc.IsExec(basebackup) {
		return nil, fmt.Errorf("%w (pg_ctl, pg_basebackup beside %s)", ErrNotInstalled, initdb)
	}
	cred, err := runAs()
	if err != nil {
		return nil, err
	}
	// The command line overrides the defaults start sets (the last -c
	// wins): a failover test needs durable, synchronously replicated
	// commits. pg_basebackup copies the data directory, not these
	// settings, so the standby does not wait for a standby of its own once
	// promoted.
	primary, err := startServer([]string{
		"-c", "wal_level=replica",
		"-c", "max_wal_senders=10",
		"-c", "full_page_writes=on",
		"-c", "synchronous_commit=on",
		"-c", "synchronous_standby_names=FIRST 1 (" + standbyName + ")",
	}, func(s *Server, initdb string, cred *syscall.Credential) error {
		if err := s.initdb(initdb, cred); err != nil {
			return err
		}
		// initdb -A trust already lets replication connections in from
		// 127.0.0.1; say so explicitly rather than rely on its template.
		hba := filepath.Join(s.dir, "data", "pg_hba.conf")
		f, err := os.OpenFile(hba, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("pgtest: %w", err)
		}
		defer f.Close()
		if _, err := f.WriteString("\nhost replication all 127.0.0.1/32 trust\n"); err != nil {
			return fmt.Errorf("pgtest: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	p := &Pair{Primary: primary, pgCtl: pgCtl, cred: cred}
	ok := false
	defer func() {
		if !ok {
			p.Stop()
		}
	}()
	conninfo := fmt.Sprintf("host=127.0.0.1 port=%d user=postgres application_name=%s", primary.port, standbyName)
	p.Standby, err = startServer([]string{
		"-c", "hot_standby=on",
		"-c", "full_page_writes=on",
		"-c", "synchronous_commit=on",
		"-c", "primary_conninfo=" + conninfo,
	}, func(s *Server, _ string, cred *syscall.Credential) error {
		// -R writes standby.signal (and a primary_conninfo the command
		// line overrides with the application_name).
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, basebackup, "-h", "127.0.0.1", "-p", strconv.Itoa(primary.port), "-U", "postgres",
			"-D", filepath.Join(s.dir, "data"), "-R", "-X", "stream", "-c", "fast", "--no-sync")
		s.prepare(cmd, cred)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("pgtest: pg_basebackup: %w\n%s", err, out)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Until the standby is the synchronous one, the primary's commits
	// would wait (CREATE DATABASE included); wait here instead.
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		var state string
		err := primary.admin.QueryRow(ctx, "SELECT sync_state FROM pg_stat_replication WHERE application_name = $1", standbyName).Scan(&state)
		cancel()
		if err == nil && state == "sync" {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("pgtest: standby not streaming synchronously after 60s (state %q, %v)\nstandby log:\n%s",
				state, err, testproc.Tail(p.Standby.proc.Log()))
		}
		time.Sleep(50 * time.Millisecond)
	}
	ok = true
	return p, nil
}

// DSN is the multi-host URL of database: the primary first, the standby
// second, and target_session_attrs=read-write so that pgx connects only to
// the one that accepts writes (the primary, or the standby once promoted).
func (p *Pair) DSN(database string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/%s?target_session_attrs=read-write&sslmode=disable",
		p.Primary.port, p.Standby.port, database)
}

// CreateDatabase creates an empty database on the primary and waits until
// the standby has replayed it (a synchronous commit waits for the
// standby's flush, not its replay), so that it can be opened on either. It
// returns the name and the multi-host DSN. The database goes with the pair.
func (p *Pair) CreateDatabase(ctx context.Context, hint string) (name, dsn string, err error) {
	name, _, err = p.Primary.CreateDatabase(ctx, hint)
	if err != nil {
		return "", "", err
	}
	for {
		var n int
		err := p.Standby.admin.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n)
		if err == nil && n == 1 {
			return name, p.DSN(name), nil
		}
		if ctx.Err() != nil {
			return "", "", fmt.Errorf("pgtest: database %s not on the standby: %v", name, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// NewDatabase is CreateDatabase for t: it returns the multi-host DSN.
func (p *Pair) NewDatabase(t testing.TB) string {
	t.Helper()
	var dsn string
	testproc.Scratch(t, func(ctx context.Context) (name string, err error) {
		name, dsn, err = p.CreateDatabase(ctx, t.Name())
		return name, err
	}, nil, 0)
	return dsn
}

// KillPrimary sends SIGKILL to the primary's postmaster and all its
// children (backends, WAL sender, ...) at once, as when its machine dies,
// and waits until they are gone: no shutdown checkpoint, its port closes,
// and every connection to it breaks. (A postmaster killed alone leaves its
// backends serving their connections until each notices.)
func (p *Pair) KillPrimary() error {
	s := p.Primary
	if s.admin != nil {
		s.admin.Close()
		s.admin = nil
	}
	if s.proc == nil {
		return errors.New("pgtest: primary is not running")
	}
	// The children are listed before the postmaster dies: afterwards they
	// are reparented and no longer tell whose they were.
	pid := s.proc.Cmd.Process.Pid
	children := childrenOf(pid)
	if err := s.proc.Stop("postgres primary", testproc.Step{Sig: syscall.SIGKILL, Wait: 10 * time.Second}); err != nil {
		return fmt.Errorf("pgtest: kill primary: %w", err)
	}
	s.proc = nil
	for _, c := range children {
		syscall.Kill(c, syscall.SIGKILL)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, c := range children {
		for running(c) {
			if time.Now().After(deadline) {
				return fmt.Errorf("pgtest: kill primary: backend %d still running", c)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
}

// childrenOf lists the pids whose parent is pid (from /proc/*/stat).
func childrenOf(pid int) []int {
	var out []int
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(b[i+1:]))
		if len(fields) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(fields[1]); err == nil && ppid == pid {
			if c, err := strconv.Atoi(filepath.Base(filepath.Dir(f))); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// running reports whether pid exists and is not a zombie (a zombie has
// exited: its sockets are closed, it only waits to be reaped).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && !strings.HasPrefix(strings.TrimSpace(string(b[i+1:])), "Z")
}

// Promote runs `pg_ctl promote` on the standby and returns once it is out
// of recovery (pg_is_in_recovery() false), accepting writes.
func (p *Pair) Promote() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.pgCtl, "promote", "-D", filepath.Join(p.Standby.dir, "data"), "-w", "-t", "60")
	p.Standby.prepare(cmd, p.cred)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgtest: pg_ctl promote: %w\n%s", err, out)
	}
	for {
		var inRecovery bool
		qctx, qcancel := context.WithTimeout(ctx, 2*time.Second)
		err := p.Standby.admin.QueryRow(qctx, "SELECT pg_is_in_recovery()").Scan(&inRecovery)
		qcancel()
		if err == nil && !inRecovery {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("pgtest: standby still in recovery after promote (%v)\n%s", err,
				testproc.Tail(p.Standby.proc.Log()))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop stops both servers and removes their directories.
func (p *Pair) Stop() {
	for _, s := range []*Server{p.Standby, p.Primary} {
		if s != nil {
			s.Stop()
		}
	}
}
