package pgtest

import (
	"fmt"
	"syscall"
	"time"

	"github.com/blobgw/blobgw/internal/testproc"
)

// Restart stops the server the way `pg_ctl restart -m immediate` does
// (SIGQUIT to the postmaster: every backend exits at once, no checkpoint,
// open connections break) and starts it again on the same port and data
// directory, so DSNs and proxies in front of it keep working once it is
// up; it returns when the server accepts connections again, after crash
// recovery. Not safe concurrently with CreateDatabase or DropDatabase.
//
// The server runs with synchronous_commit=off, so an immediate stop may
// lose the last commits it acknowledged; a test that counts every
// acknowledged commit sets synchronous_commit = on for its database
// (ALTER DATABASE ... SET), which overrides the server's default.
func (s *Server) Restart() error {
	if err := s.Halt(); err != nil {
		return fmt.Errorf("pgtest: restart: %w", err)
	}
	return s.Resume()
}

// Halt is the first half of Restart: the server stops (immediately, open
// connections break) and stays down, its port refusing connections, until
// Resume. A halted server is still removed by Stop.
func (s *Server) Halt() error {
	if s.stopped.Load() {
		return fmt.Errorf("pgtest: halt: server is stopped")
	}
	if s.admin != nil {
		s.admin.Close()
		s.admin = nil
	}
	if s.proc != nil {
		if err := s.proc.Stop("postgres", testproc.Step{Sig: syscall.SIGQUIT, Wait: 30 * time.Second},
			testproc.Step{Sig: syscall.SIGKILL, Wait: 10 * time.Second}); err != nil {
			return fmt.Errorf("pgtest: halt: %w", err)
		}
		s.proc = nil
	}
	return nil
}

// Resume starts a halted server again on the same port and data
// directory and returns when it accepts connections (after crash
// recovery).
func (s *Server) Resume() error {
	if s.stopped.Load() {
		return fmt.Errorf("pgtest: resume: server is stopped")
	}
	_, postgres, err := binaries()
	if err != nil {
		return err
	}
	cred, err := runAs()
	if err != nil {
		return err
	}
	// The port was ours a moment ago; another process taking it in between
	// is a failure, since the callers' DSNs name it.
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		if _, err := s.start(postgres, cred, s.port); err != nil {
			lastErr = err
			time.Sleep(200 * time.Millisecond)
			continue
		}
		return nil
	}
	return fmt.Errorf("pgtest: restart on port %d: %w", s.port, lastErr)
}
