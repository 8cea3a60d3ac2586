package svcerrtest

import (
	"errors"
	"testing"

	"github.com/blobgw/blobgw/svcerr"
)

// recorder is a testing.TB that records a Fatalf instead of stopping.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(string, ...any) { r.failed = true }

func TestClientError(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		wantFail bool
	}{
		{"4xx", svcerr.New(svcerr.InvalidHeaderValue), false},
		{"5xx", svcerr.New(svcerr.InternalError), true},
		{"plain error", errors.New("boom"), true},
		{"nil", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{TB: t}
			func() {
				defer func() { _ = recover() }() // Fatalf did not stop: the nil *Error may panic after it
				ClientError(r, tt.name, tt.err)
			}()
			if r.failed != tt.wantFail {
				t.Errorf("failed = %v, want %v", r.failed, tt.wantFail)
			}
		})
	}
}
