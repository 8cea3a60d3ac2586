package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/jackc/pgx/v5/pgconn"
)

func TestMarkUnavailable(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want bool
	}{
		{"admin shutdown", context.Background(), fmt.Errorf("get blob: %w", &pgconn.PgError{Code: "57P01"}), true},
		{"connection failure", context.Background(), &pgconn.PgError{Code: "08006"}, true},
		{"too many connections", context.Background(), &pgconn.PgError{Code: "53300"}, true},
		{"disk full", context.Background(), &pgconn.PgError{Code: "53100"}, true},
		{"statement timeout", context.Background(), &pgconn.PgError{Code: "57014"}, true},
		{"lock timeout", context.Background(), &pgconn.PgError{Code: "55P03"}, true},
		{"unique violation", context.Background(), &pgconn.PgError{Code: "23505"}, false},
		{"socket error", context.Background(), fmt.Errorf("x: %w", &net.OpError{Op: "read", Err: errors.New("reset")}), true},
		{"conn closed", context.Background(), fmt.Errorf("x: %w", pgconn.ErrConnClosed), true},
		{"fn's own deadline error", context.Background(), context.DeadlineExceeded, false},
		{"caller gave up", canceled, &pgconn.PgError{Code: "57P01"}, false},
		{"nil", context.Background(), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := markUnavailable(tt.ctx, tt.err)
			if errors.Is(got, leasedb.ErrUnavailable) != tt.want {
				t.Fatalf("markUnavailable(%v) = %v, tagged want %v", tt.err, got, tt.want)
			}
			if tt.err != nil && !errors.Is(got, tt.err) {
				t.Fatalf("the original error is lost: %v", got)
			}
		})
	}
}
