package svcerrtest

import (
	"errors"
	"fmt"
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

func TestCode(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		want     svcerr.Code
		wantFail bool
	}{
		{"no error wanted, none", nil, "", false},
		{"no error wanted, one", svcerr.New(svcerr.LeaseIdMissing), "", true},
		{"the code", svcerr.New(svcerr.LeaseIdMissing), svcerr.LeaseIdMissing, false},
		{"the code, wrapped", fmt.Errorf("put: %w", svcerr.New(svcerr.LeaseIdMissing)), svcerr.LeaseIdMissing, false},
		{"another code", svcerr.New(svcerr.LeaseLost), svcerr.LeaseIdMissing, true},
		{"a code wanted, none", nil, svcerr.LeaseIdMissing, true},
		{"a plain error", errors.New("boom"), svcerr.LeaseIdMissing, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{TB: t}
			Code(r, tt.err, tt.want)
			if r.failed != tt.wantFail {
				t.Fatalf("failed = %v, want %v", r.failed, tt.wantFail)
			}
		})
	}
}
