package main

import (
	"os"
	"syscall"
	"time"
)

// terminate stops a process a test started: SIGTERM, then SIGKILL when it
// has not exited (closed exited) within grace, and waits for it to exit
// either way.
func terminate(p *os.Process, exited <-chan struct{}, grace time.Duration) {
	p.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(grace):
		p.Kill()
		<-exited
	}
}
