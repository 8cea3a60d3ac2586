package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

var _ leasedb.WriteRefuser = (*Store)(nil)

// recoveryProbeTimeout bounds WritesRefused's query.
const recoveryProbeTimeout = 2 * time.Second

// errInRecovery is WritesRefused's answer for a hot standby.
var errInRecovery = errors.New("the Postgres server is a standby in recovery: it refuses every write (point the DSN at the primary, or list both with target_session_attrs=read-write)")

// WritesRefused implements leasedb.WriteRefuser: a DSN that reaches a hot
// standby reads, but every write fails (BEGIN READ WRITE is refused during
// recovery) until the server is promoted. A server that does not answer is
// not reported here: the readiness probe's read already fails.
func (s *Store) WritesRefused() error {
	ctx, cancel := context.WithTimeout(context.Background(), recoveryProbeTimeout)
	defer cancel()
	var recovering bool
	if err := s.pool.QueryRow(ctx, `SELECT pg_is_in_recovery()`).Scan(&recovering); err != nil || !recovering {
		return nil
	}
	return errInRecovery
}
