package gateway

import (
	"errors"
	"io"
	"net/http"
	"os"
	"syscall"
	"time"

	"github.com/blobgw/blobgw/svcerr"
)

// Defaults of the request limits (Options.BodyIdleTimeout, MaxUploads).
const (
	DefaultBodyIdleTimeout = 60 * time.Second
	DefaultMaxUploads      = 256
)

// idleBody is a request body whose every Read must make progress within
// idle: before each Read it moves the connection's read deadline idle into
// the future. A client that announces a body and stops sending would
// otherwise hold its socket, a staged temporary object and a goroutine for
// ever (the server's header and idle timeouts do not cover bodies). A
// stalled Read fails with 408 RequestTimeout, which the Azure SDKs retry.
type idleBody struct {
	io.ReadCloser
	ctl  http.ResponseController
	idle time.Duration
	done bool // EOF or an error seen: the deadline is no longer ours
}

// limitBody makes b, wrapping r.Body, the body with the idle deadline and
// reports whether it did; b.unwrap then puts the original body back: call
// it when the handler is done. (Go's server inspects its own body type
// after the handler to decide whether the connection can be reused or the
// rest of the body must be drained.) A writer that cannot set read
// deadlines (none that blobgw serve uses) leaves the body as it is.
func (s *Server) limitBody(b *idleBody, w http.ResponseWriter, r *http.Request) bool {
	orig := r.Body
	if s.opt.BodyIdleTimeout <= 0 || orig == nil || orig == http.NoBody {
		return false
	}
	b.ctl = *http.NewResponseController(w)
	if err := b.ctl.SetReadDeadline(time.Now().Add(s.opt.BodyIdleTimeout)); err != nil {
		return false
	}
	b.ReadCloser, b.idle = orig, s.opt.BodyIdleTimeout
	r.Body = b
	return true
}

// unwrap puts back the body limitBody wrapped.
func (b *idleBody) unwrap(r *http.Request) { r.Body = b.ReadCloser }

func (b *idleBody) Read(p []byte) (int, error) {
	if !b.done {
		_ = b.ctl.SetReadDeadline(time.Now().Add(b.idle))
	}
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == nil:
	case err == io.EOF:
		if !b.done {
			// The handler may take long after the body (a commit); the
			// server's background read for the next request must not
			// hit our deadline and cancel the request's context.
			_ = b.ctl.SetReadDeadline(time.Time{})
		}
		b.done = true
	default:
		// The deadline stays: whatever the server still reads of a
		// failed body must fail as fast.
		b.done = true
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return n, errBodyTimeout()
		}
	}
	return n, err
}

func errBodyTimeout() error {
	return svcerr.Newf(svcerr.RequestTimeout, "The request body was not received within the permitted time: no bytes arrived for the body idle timeout.")
}

// uploadLimiter caps the operations that stream a body (or a copy source)
// into the backend at once. Each holds a socket, a staged object (a
// temporary file on disk) and buffers; beyond the cap the request is
// answered 503 ServerBusy at once, before a byte of its body is read, so
// the replica runs out of neither file handles nor memory.
type uploadLimiter chan struct{}

func newUploadLimiter(n int) uploadLimiter { return make(uploadLimiter, n) }

// acquire takes a slot or fails with ServerBusy; call release when done.
func (l uploadLimiter) acquire() error {
	select {
	case l <- struct{}{}:
		return nil
	default:
		return svcerr.Newf(svcerr.ServerBusy, "The server is handling too many uploads. Please retry your request.")
	}
}

// release gives back a slot acquire took.
func (l uploadLimiter) release() { <-l }

// isUpload reports whether the routed request is an operation that reads
// a body or a copy source into the backend: Put Blob, Put Blob From URL,
// Copy Blob, Put Block (From URL) and Append Block (From URL), marked
// upload in the operation table (router.go). Put Block List's body is a
// small XML document and is not counted.
func isUpload(r *http.Request, req *request) bool {
	return req.op.upload
}

// outOfFiles reports whether err is the process or the system running out
// of file descriptors (EMFILE, ENFILE), anywhere: a backend put or open, a
// SQLite WAL sync. That is overload, not a bug: 503 ServerBusy, which
// clients retry.
func outOfFiles(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}
