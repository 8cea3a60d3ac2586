package testproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"
)

// What the harnesses share between starting their server and stopping
// it: the start attempts on fresh ports, the reading of a failed start,
// a scratch resource (database, bucket) per test, and the stop that also
// removes the server's directory.

// ReadyTimeout is how long a harness waits for its server to answer.
const ReadyTimeout = 60 * time.Second

// Attempts calls try up to n times, again only while it fails with retry
// set (the port it picked was taken), and returns try's last error.
func Attempts(n int, try func() (retry bool, err error)) error {
	var err error
	for i := 0; i < n; i++ {
		var retry bool
		if retry, err = try(); err == nil || !retry {
			return err
		}
	}
	return err
}

// StartErr explains err, a failed WaitReady of the server name (pkg
// starts the message). exited reports that the process is gone (the
// caller drops it); retry, that its log holds one of taken, the server's
// words for a port in use, so another port may help.
func StartErr(err error, pkg, name string, p *Proc, taken ...string) (exited, retry bool, _ error) {
	var ex *Exited
	if !errors.As(err, &ex) {
		return false, false, fmt.Errorf("%s: %s not ready after %.0fs: %v\n%s", pkg, name, ReadyTimeout.Seconds(), err, Tail(p.Log()))
	}
	for _, w := range taken {
		retry = retry || bytes.Contains(ex.Log, []byte(w))
	}
	return true, retry, fmt.Errorf("%s: %s exited during start-up (%v):\n%s", pkg, name, ex.State, Tail(ex.Log))
}

// StopAndRemove stops p (nil: not running) with steps, then removes dir.
// It returns the first failure, pkg starting its message.
func StopAndRemove(pkg, name string, p *Proc, dir string, steps ...Step) error {
	var err error
	if p != nil {
		if e := p.Stop(name, steps...); e != nil {
			err = fmt.Errorf("%s: %w", pkg, e)
		}
	}
	if e := os.RemoveAll(dir); e != nil && err == nil {
		err = fmt.Errorf("%s: remove %s: %w", pkg, dir, e)
	}
	return err
}

// Scratch makes a resource for t (a database, a bucket) with create,
// given 30 s, and fails t if that fails. Unless remove is nil it is
// removed when t ends, given cleanup; a failed removal fails t. It
// returns the resource's name.
func Scratch(t testing.TB, create func(ctx context.Context) (string, error), remove func(ctx context.Context, name string) error, cleanup time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name, err := create(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if remove != nil {
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), cleanup)
			defer cancel()
			if err := remove(ctx, name); err != nil {
				t.Errorf("%v", err)
			}
		})
	}
	return name
}
