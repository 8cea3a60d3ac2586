package postgres

import (
	"errors"
	"io"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/blobgw/blobgw/leasedb"
)

// TestCommitLeaseError: CommitBlobLease's, CommitBlobTags' and
// CommitBlobTier's failures (commitHeadError) as Put Blob's CommitReplace
// words them: the server's refusal of the UPDATE or of
// COMMIT, or COMMIT answered ROLLBACK, did not commit; a connection lost
// once the UPDATE and COMMIT were sent leaves the outcome unknown; a
// failure before anything was sent is safe to retry.
func TestCommitLeaseError(t *testing.T) {
	ref := leasedb.BlobRef{Account: "a", Container: "c", Name: "b"}
	refused := &pgconn.PgError{Severity: "ERROR", Code: "P0001", Message: "no"}
	for _, tc := range []struct {
		name       string
		werr, cerr error
		unknown    bool
		is         error
	}{
		{"UPDATE refused", refused, nil, false, nil},
		{"UPDATE not sent", &errNotSent{io.EOF}, nil, false, nil},
		{"connection lost with UPDATE and COMMIT sent", &errSent{io.EOF}, nil, true, leasedb.ErrUnavailable},
		{"no row", pgx.ErrNoRows, nil, false, leasedb.ErrNotFound},
		{"COMMIT refused", nil, refused, false, nil},
		{"connection lost at COMMIT", nil, &errSent{io.EOF}, true, leasedb.ErrUnavailable},
		{"COMMIT answered ROLLBACK", nil, nil, false, pgx.ErrTxCommitRollback},
	} {
		for _, what := range []string{"lease", "tags", "tier"} {
			err := commitHeadError(what, ref, tc.werr, tc.cerr)
			if errors.Is(err, leasedb.ErrCommitUnknown) != tc.unknown || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Errorf("%s %s: %v; want unknown outcome %v, matching %v", what, tc.name, err, tc.unknown, tc.is)
			}
			if !tc.unknown && errors.Is(err, leasedb.ErrUnavailable) {
				t.Errorf("%s %s: %v is an outage", what, tc.name, err)
			}
		}
	}
}
