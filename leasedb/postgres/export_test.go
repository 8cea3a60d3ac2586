package postgres

import "github.com/jackc/pgx/v5/pgxpool"

// Dialect is the dialect this driver gives sqlq, for the plan tests.
var Dialect = dialect

// CommitReplaceSQL is CommitReplace's statement, for its plan test.
var CommitReplaceSQL = commitReplaceSQL

// PoolMaxConns is the size of s's connection pool.
func PoolMaxConns(s *Store) int32 { return s.pool.Config().MaxConns }

// PoolStat is s's connection pool's counters.
func PoolStat(s *Store) *pgxpool.Stat { return s.pool.Stat() }

// LockForReplaceSQL is LockForReplace's statement, for its plan test.
var LockForReplaceSQL = lockForReplaceSQL

// ExtentsHaveKeySQL is LockForReplace's test for extents with a key (on
// the columns b.extents_keys and b.extents).
const ExtentsHaveKeySQL = extentsHaveKeySQL

// ExtentsKeys is the extents_keys column every write of a blob row sets.
var ExtentsKeys = extentsKeys

// MigrateLockTimeout is a migration statement's lock_timeout.
const MigrateLockTimeout = migrateLockTimeout
