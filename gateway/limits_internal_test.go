package gateway

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/blobgw/blobgw/backends"
	"github.com/blobgw/blobgw/svcerr"
)

// Running out of file descriptors anywhere (a backend put, a SQLite WAL
// sync) is overload: 503 ServerBusy, never a 500.
func TestWriteErrorStatus(t *testing.T) {
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	tests := []struct {
		name   string
		err    error
		status int
		code   svcerr.Code
	}{
		{"EMFILE from the WAL sync", fmt.Errorf("leasedb/sqlite: sync WAL: %w", &os.PathError{Op: "open", Path: "blobgw.db-wal", Err: syscall.EMFILE}), 503, svcerr.ServerBusy},
		{"EMFILE from a backend put", fmt.Errorf("backend put: %w", fmt.Errorf("disk: put k: create temporary file: %w", &os.PathError{Op: "open", Path: "put-1", Err: syscall.EMFILE})), 503, svcerr.ServerBusy},
		{"ENFILE", &os.PathError{Op: "open", Path: "x", Err: syscall.ENFILE}, 503, svcerr.ServerBusy},
		{"backend unavailable", fmt.Errorf("x: %w", backends.ErrUnavailable), 503, svcerr.ServerBusy},
		{"other errno", &os.PathError{Op: "open", Path: "x", Err: syscall.EIO}, 500, svcerr.InternalError},
		{"plain error", errors.New("boom"), 500, svcerr.InternalError},
		{"stalled body", errBodyTimeout(), 408, svcerr.RequestTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			r := httptest.NewRequest(http.MethodPut, "/devstoreaccount1/c/b", nil)
			s.writeError(rec, r, &request{id: "req"}, tc.err)
			if rec.Code != tc.status || rec.Header().Get("x-ms-error-code") != string(tc.code) {
				t.Fatalf("%v: %d %s, want %d %s", tc.err, rec.Code, rec.Header().Get("x-ms-error-code"), tc.status, tc.code)
			}
		})
	}
}

// deadlineWriter is a ResponseWriter that records the read deadlines set
// through http.ResponseController.
type deadlineWriter struct {
	http.ResponseWriter
	set []time.Time
}

func (w *deadlineWriter) SetReadDeadline(t time.Time) error {
	w.set = append(w.set, t)
	return nil
}

// chunkedBody yields its bytes n at a time, after pause; each Read first
// calls onRead.
type chunkedBody struct {
	data   []byte
	n      int
	pause  time.Duration
	onRead func()
}

func (b *chunkedBody) Read(p []byte) (int, error) {
	b.onRead()
	time.Sleep(b.pause)
	k := copy(p[:min(len(p), b.n)], b.data)
	b.data = b.data[k:]
	if len(b.data) == 0 {
		return k, io.EOF
	}
	return k, nil
}

func (b *chunkedBody) Close() error { return nil }

// A body read in quick Reads moves the connection's read deadline once,
// at the start (and clears it at EOF), not before every Read; Reads
// further apart than the slack move it each time, and every Read has at
// least the idle timeout.
func TestIdleBodyDeadlineMoves(t *testing.T) {
	for _, tt := range []struct {
		name      string
		idle      time.Duration
		pause     time.Duration
		wantMoves int // SetReadDeadline calls with a non-zero deadline
		// atLeast: wantMoves is a floor (a slow machine may move the
		// deadline before the first Read too).
		atLeast bool
	}{
		{"quick reads", time.Minute, 0, 1, false},
		{"reads further apart than the slack", 640 * time.Millisecond, 20 * time.Millisecond, 4, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &Server{opt: Options{BodyIdleTimeout: tt.idle}}
			w := &deadlineWriter{ResponseWriter: httptest.NewRecorder()}
			r := httptest.NewRequest(http.MethodPut, "/c/b", nil)
			// Each read of the connection: when it began, and the
			// deadline then.
			var reads [][2]time.Time
			r.Body = &chunkedBody{data: make([]byte, 4096), n: 1024, pause: tt.pause, onRead: func() {
				reads = append(reads, [2]time.Time{time.Now(), w.set[len(w.set)-1]})
			}}
			var b idleBody
			if !s.limitBody(&b, w, r) {
				t.Fatal("limitBody: not wrapped")
			}
			buf := make([]byte, 4097)
			for {
				_, err := r.Body.Read(buf)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			b.unwrap(r)
			if last := w.set[len(w.set)-1]; !last.IsZero() {
				t.Fatalf("deadline at EOF %v, want cleared", last)
			}
			if moves := len(w.set) - 1; moves != tt.wantMoves && !(tt.atLeast && moves > tt.wantMoves) {
				t.Fatalf("%d deadline moves for %d Reads, want %d", moves, len(reads), tt.wantMoves)
			}
			for i, rd := range reads {
				if d := rd[1].Sub(rd[0]); d < tt.idle || d > tt.idle+idleSlack(tt.idle) {
					t.Errorf("Read %d: deadline %v ahead, want %v to %v", i, d, tt.idle, tt.idle+idleSlack(tt.idle))
				}
			}
		})
	}
}
