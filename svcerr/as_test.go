package svcerr

import (
	"errors"
	"fmt"
	"io"
	"testing"
)

// asViaMethod answers errors.As for *Error through an As method of its
// own, as a wrapper from another package might.
type asViaMethod struct{ e *Error }

func (a asViaMethod) Error() string { return "via As" }

func (a asViaMethod) As(target any) bool {
	if p, ok := target.(**Error); ok {
		*p = a.e
		return true
	}
	return false
}

// TestAsMatchesErrors: As finds what errors.As finds, through %w chains,
// errors.Join, several %w and an As method, and nothing in errors without
// an *Error.
func TestAsMatchesErrors(t *testing.T) {
	e1, e2 := New(ConditionNotMet), New(ServerBusy)
	for _, err := range []error{
		nil, io.EOF, e1,
		fmt.Errorf("commit: %w", e1),
		fmt.Errorf("outer: %w", fmt.Errorf("inner: %w", e2)),
		fmt.Errorf("no wrap: %v", e1),
		errors.Join(io.EOF, fmt.Errorf("x: %w", e2), e1),
		errors.Join(io.EOF, io.ErrUnexpectedEOF),
		fmt.Errorf("two: %w and %w", io.EOF, e1),
		asViaMethod{e2},
		fmt.Errorf("wrapped: %w", asViaMethod{e1}),
	} {
		var want *Error
		wantOK := errors.As(err, &want)
		got, ok := As(err)
		if ok != wantOK || got != want {
			t.Errorf("As(%v) = %v, %v; errors.As gives %v, %v", err, got, ok, want, wantOK)
		}
	}
}

// TestAsAllocs: As allocates nothing (errors.As's target escaped: one
// allocation a call, several a request).
func TestAsAllocs(t *testing.T) {
	err := fmt.Errorf("commit: %w", New(ConditionNotMet))
	if n := testing.AllocsPerRun(100, func() { As(err); As(nil); As(io.EOF) }); n != 0 {
		t.Errorf("As: %.0f allocations, want 0", n)
	}
}
