// Package svcerrtest holds test assertions on service errors.
package svcerrtest

import (
	"testing"

	"github.com/blobgw/blobgw/svcerr"
)

// ClientError fails t unless err is a *svcerr.Error with a 4xx status (a
// plain error would reach the client as a 500) and returns it. what names
// the input in the failure.
func ClientError(t testing.TB, what string, err error) *svcerr.Error {
	t.Helper()
	e, ok := svcerr.As(err)
	if !ok {
		t.Fatalf("%s: error %v is not a *svcerr.Error", what, err)
	}
	if s := e.Status(); s < 400 || s > 499 {
		t.Fatalf("%s: error %v has status %d, want 4xx", what, err, s)
	}
	return e
}

// Code fails t unless err carries the service error code want; an empty
// want means no error at all. Table tests of pure rules use it, one row
// per outcome.
func Code(t testing.TB, err error, want svcerr.Code) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("unexpected error %v", err)
	case want != "" && !svcerr.HasCode(err, want):
		t.Fatalf("error = %v, want code %s", err, want)
	}
}
