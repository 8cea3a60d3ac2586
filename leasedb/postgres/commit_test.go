package postgres

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestCommitRefused: only an answer from the server that the transaction
// rolled back makes a failed COMMIT certain; everything else may have
// committed.
func TestCommitRefused(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"rollback answer", pgx.ErrTxCommitRollback, true},
		{"serialization failure", &pgconn.PgError{Severity: "ERROR", Code: codeSerializationFailure}, true},
		{"deferred constraint", fmt.Errorf("wrapped: %w", &pgconn.PgError{Severity: "ERROR", Code: "23505"}), true},
		{"server shutting down", &pgconn.PgError{Severity: "FATAL", Code: "57P01"}, false},
		{"server crash", &pgconn.PgError{Severity: "PANIC", Code: "XX000"}, false},
		{"connection lost", io.ErrUnexpectedEOF, false},
		{"conn closed after send", pgconn.ErrConnClosed, false},
		{"other", errors.New("timeout"), false},
	}
	for _, tt := range tests {
		if got := commitRefused(tt.err); got != tt.want {
			t.Errorf("%s: commitRefused = %v, want %v", tt.name, got, tt.want)
		}
	}
}
