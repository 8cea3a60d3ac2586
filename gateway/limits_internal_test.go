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
