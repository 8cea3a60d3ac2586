package sqlq

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
	"unicode/utf8"
)

// CheckText refuses names Postgres cannot store as text (invalid UTF-8,
// NUL) before they reach the server, where the error would abort the
// transaction; SQLite refuses the same, so both stores accept exactly the
// same names. driver prefixes the error ("leasedb/sqlite").
func CheckText(driver string, ss ...string) error {
	for _, s := range ss {
		if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
			return fmt.Errorf("%s: %q: names must be valid UTF-8 without NUL", driver, s)
		}
	}
	return nil
}

// First is the answer of a lookup by primary key: its one row, or nil
// when there is none.
func First[T any](rows []*T) *T {
	if len(rows) == 0 {
		return nil
	}
	return rows[0]
}

// CtxErr prefers the context's error when the context ended, so callers
// can test errors.Is(err, context.Canceled) whatever the driver said.
func CtxErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w (%w)", cerr, err)
	}
	return err
}

// Backoff is the randomized wait before retry attempt+1 of a transaction:
// between half and all of 2^attempt milliseconds, at most 128ms.
func Backoff(attempt int) time.Duration {
	d := time.Duration(1<<min(attempt, 7)) * time.Millisecond
	return d/2 + rand.N(d/2+1)
}

// Sleep waits for d or until ctx ends (its error).
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
