// Package postgres is the production leasedb.Store: PostgreSQL through
// pgx/v5's connection pool, shared by any number of gateway replicas.
//
// Writes run at READ COMMITTED and take row locks where Go code decides
// (SELECT ... FOR UPDATE / FOR SHARE). A blob name is additionally guarded by
// a transaction-scoped advisory lock on a hash of (account, container,
// name), so two transactions racing to create the same absent blob are
// serialized too. Update reruns its function on serialization failures and
// deadlocks. The clock is the database's (clock_timestamp()).
//
// This package must never decide on data it read without the lock the
// decision needs, never keep a transaction open beyond the function given to
// Update or View, never put the DSN (it may hold a password) in an error,
// and never touch blob bytes.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/blobgw/blobgw/internal/failpoint"
	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
	"github.com/blobgw/blobgw/migrations"
)

var (
	_ leasedb.Store = (*Store)(nil)
	_ leasedb.Tx    = (*tx)(nil)
)

const (
	// maxAttempts bounds how often Update runs fn after serialization
	// failures or deadlocks.
	maxAttempts = 10
	// etagBase makes the ETags look like Azure's ("0x8D...").
	etagBase = 0x8D0000000000000
	// The migration lock uses the two-int4 advisory lock key space, which
	// never overlaps the bigint key space of the blob-name locks.
	migrateLockClass = 0x626c6f62 // "blob"
	migrateLockObj   = 1
	// migrateLockTimeout bounds a migration statement's wait for a table
	// lock (lock_timeout): while it waits, every query of the table
	// waits behind it.
	migrateLockTimeout = 2 * time.Second
)

// SQLSTATE codes Update retries on.
const (
	codeSerializationFailure = "40001"
	codeDeadlockDetected     = "40P01"
	codeForeignKeyViolation  = "23503"
)

// Store is a leasedb.Store on a Postgres database. It is safe for
// concurrent use.
type Store struct {
	pool *pgxpool.Pool
	// tracer is the connections' pgx tracer (nil: none).
	tracer pgx.QueryTracer
	// clockOffset is added to the clock every transaction reads
	// (SetClockOffset, tests only).
	clockOffset atomic.Int64
	// noOneTrip turns the one-round-trip Put Blob off (tests of the
	// few-statement path's statements only).
	noOneTrip atomic.Bool
}

// Open connects to the database named by dsn (a postgres:// URL or a
// key=value connection string; pgxpool settings such as pool_max_conns are
// honoured; without pool_max_conns the pool holds up to 16 connections, see
// defaultMaxConns). It does not migrate; call Migrate (dbopen.Open does).
func Open(ctx context.Context, dsn string) (*Store, error) { return open(ctx, dsn, nil) }

// open is Open with a pgx tracer on every connection (nil: none).
func open(ctx context.Context, dsn string, tracer pgx.QueryTracer) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx redacts the password in its parse errors.
		return nil, fmt.Errorf("leasedb/postgres: parse dsn: %w", err)
	}
	cfg.ConnConfig.Tracer = tracer
	sizePool(cfg, dsn)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("leasedb/postgres: open: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("leasedb/postgres: connect to %s/%s: %w", cfg.ConnConfig.Host, cfg.ConnConfig.Database, err)
	}
	return &Store{pool: pool, tracer: tracer}, nil
}

// Close closes the pool, waiting for connections in use to be returned.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// Update runs fn in a READ COMMITTED transaction and commits it when fn
// returns nil. On serialization_failure (40001), deadlock_detected (40P01)
// or a prepared statement the schema changed under (planChanged) it rolls
// back and runs fn again, up to 10 times in all, with a short randomized
// backoff; a retryable error through every run is returned wrapped in
// leasedb.ErrUnavailable. Other errors returned by fn are returned
// unchanged.
//
// After a statement fails inside the transaction (say PutBlob into a
// deleted container), Postgres refuses every further statement until
// rollback: fn should return the error.
//
// Its BEGIN names no access mode, so the server's default applies: an
// operator's default_transaction_read_only = on (maintenance) and a hot
// standby's recovery refuse every write statement with
// read_only_sql_transaction, which is leasedb.ErrUnavailable (BEGIN READ
// WRITE would override the operator's setting). A transaction that wrote
// nothing, or swallowed the refusal, is refused before its COMMIT
// (writesRefused).
func (s *Store) Update(ctx context.Context, fn func(leasedb.Tx) error) error {
	return s.retry(ctx, updateOpts, false, fn)
}

// View runs fn in a REPEATABLE READ, READ ONLY transaction: one consistent
// snapshot. Lock modes are ignored in a View (a snapshot has nothing to
// lock); writes fail.
func (s *Store) View(ctx context.Context, fn func(leasedb.Tx) error) error {
	return s.retry(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, true, fn)
}

// updateOpts are Update's transaction options: READ COMMITTED, the access
// mode the server's default (see Update).
var updateOpts = pgx.TxOptions{IsoLevel: pgx.ReadCommitted}

func (s *Store) retry(ctx context.Context, opts pgx.TxOptions, readOnly bool, fn func(leasedb.Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := s.run(ctx, opts, readOnly, fn)
		if !readOnly && ctx.Err() == nil && serverReadOnly(err) {
			return fmt.Errorf("%w: %w", leasedb.ErrUnavailable, err)
		}
		if err == nil || !retryable(err) || ctx.Err() != nil {
			return markUnavailable(ctx, err)
		}
		if attempt >= maxAttempts {
			// Contention through every attempt (serialization failures,
			// deadlocks, a row that kept changing under CommitReplace):
			// the database's overload, not the request's fault nor a bug,
			// so leasedb.ErrUnavailable (503 ServerBusy), as SQLite's
			// lock busy through every retry is. A retryable error
			// certainly did not commit (retryable refuses
			// leasedb.MayHaveCommitted), so nothing else is added.
			return fmt.Errorf("%w: %d attempts: %w", leasedb.ErrUnavailable, attempt, err)
		}
		if err := sqlq.Sleep(ctx, sqlq.Backoff(attempt)); err != nil {
			return fmt.Errorf("leasedb/postgres: retry: %w", err)
		}
	}
}

// errBegin marks a failure to start a transaction; it is retried when pgx
// says nothing reached the server.
type errBegin struct{ err error }

func (e *errBegin) Error() string { return "leasedb/postgres: begin: " + e.err.Error() }
func (e *errBegin) Unwrap() error { return e.err }

func (s *Store) run(ctx context.Context, opts pgx.TxOptions, readOnly bool, fn func(leasedb.Tx) error) error {
	// The connection is held here, not by the pgx transaction, so that a
	// transaction that committed inside fn (CommitReplace sends its write
	// and COMMIT in one batch) still gives it back; the pool closes a
	// connection given back inside a transaction.
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return &errBegin{sqlq.CtxErr(ctx, err)}
	}
	defer conn.Release()
	// BEGIN goes with the transaction's first statement (lazyTx).
	ptx := newLazyTx(conn.Conn(), opts, s.tracer)
	t := &tx{Tx: sqlq.Tx[pgtype.Timestamptz]{D: &driver, Q: txQuerier{ptx}}, tx: ptx, readOnly: readOnly, offset: time.Duration(s.clockOffset.Load()),
		noOneTrip: s.noOneTrip.Load()}
	done := false
	defer func() {
		if !done && !t.committed { // fn panicked
			rollback(ctx, ptx)
		}
	}()
	err = fn(t)
	if err == nil && !readOnly && !t.committed {
		// A write that sent nothing still begins, as it did with
		// BEGIN sent first, so the server's answer says whether it
		// takes writes (writesRefused).
		_ = ptx.begin(ctx)
	}
	if ptx.beginErr != nil {
		// As a failed BeginTx was: whatever fn made of it.
		done = true
		rollback(ctx, ptx)
		return ptx.beginErr
	}
	if err != nil {
		done = true
		if t.committed {
			// fn failed after its transaction committed: the caller must
			// not take the write for undone.
			return fmt.Errorf("leasedb/postgres: after commit: %w: %w", leasedb.ErrCommitUnknown, err)
		}
		rollback(ctx, ptx)
		return err
	}
	done = true
	if readOnly {
		rollback(ctx, ptx)
		return nil
	}
	if t.committed {
		// Crash tests: committed, the caller not told.
		failpoint.Inject("after-commit")
		return nil
	}
	if werr := writesRefused(conn.Conn().PgConn()); werr != nil {
		// Certainly not committed: nothing more was sent.
		rollback(ctx, ptx)
		return fmt.Errorf("%w: %w", leasedb.ErrUnavailable, werr)
	}
	// COMMIT runs detached from ctx: a caller that goes away while it is
	// in flight would otherwise cancel it half-way and leave its outcome
	// unknown. It is still bounded, so a silent server cannot hold it
	// (lazyTx.commitDetached).
	if err := ptx.commitDetached(ctx); err != nil {
		if commitRefused(err) {
			return fmt.Errorf("leasedb/postgres: commit: %w", err)
		}
		return fmt.Errorf("leasedb/postgres: commit: %w: %w: %w", leasedb.ErrUnavailable, leasedb.ErrCommitUnknown, err)
	}
	// Crash tests: committed, the caller not told.
	failpoint.Inject("after-commit")
	return nil
}

// commitTimeout bounds a COMMIT that the caller can no longer cancel.
const commitTimeout = 30 * time.Second

// commitRefused reports whether a failed COMMIT certainly did not commit:
// the server answered it with ROLLBACK (the transaction had failed) or
// with an ERROR (a deferred check or serialization failure rolls it back).
// Any other failure leaves the outcome unknown: the connection lost after
// COMMIT left, no answer in time, or a FATAL or PANIC (a server stopping or
// crashing around the commit record may still have made it durable).
// pgconn.SafeToRetry cannot tell here: when the connection breaks while
// pgx reads the answer to a COMMIT it did send, pgx closes the connection
// and reports "conn closed", which it marks safe to retry.
func commitRefused(err error) bool {
	if errors.Is(err, pgx.ErrTxCommitRollback) {
		return true
	}
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Severity == "ERROR"
}

// rollback ends ptx even when ctx is already canceled, so the connection
// goes back to the pool clean instead of being closed. If the rollback
// fails, pgx closes the connection, which ends the transaction server-side.
func rollback(ctx context.Context, ptx interface{ Rollback(context.Context) error }) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = ptx.Rollback(rctx)
}

// markUnavailable tags errors that say the database, not the request, failed
// (connection exceptions, administrator shutdown, too many connections, the
// server's disk full, a statement cut by the server's statement_timeout or
// lock_timeout, a connection lost mid-transaction) with
// leasedb.ErrUnavailable.
func markUnavailable(ctx context.Context, err error) error {
	if err == nil || ctx.Err() != nil || errors.Is(err, leasedb.ErrUnavailable) {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "08"), // connection exception
			strings.HasPrefix(pgErr.Code, "57P"), // operator intervention: shutdown, cannot connect now
			pgErr.Code == "53300",                // too many connections
			pgErr.Code == "53100",                // disk full: as the disk backend's full filesystem
			// A statement the server cut: statement_timeout (or an
			// operator's pg_cancel_backend; pgx ends a canceled
			// context by a deadline on the socket, and ctx ended is
			// returned above), lock_timeout. The statement failed,
			// nothing committed; the database was too slow.
			pgErr.Code == "57014", pgErr.Code == "55P03":
			return fmt.Errorf("%w: %w", leasedb.ErrUnavailable, err)
		}
		return err
	}
	// Only failures that come from the connection itself: an error fn
	// returns of its own (even context.DeadlineExceeded) stays unchanged.
	var opErr *net.OpError
	var connectErr *pgconn.ConnectError
	if errors.As(err, &opErr) || errors.As(err, &connectErr) || errors.Is(err, pgconn.ErrConnClosed) ||
		errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: %w", leasedb.ErrUnavailable, err)
	}
	return err
}

// errServerReadOnly is writesRefused's answer.
var errServerReadOnly = errors.New("leasedb/postgres: the server takes no writes now (a hot standby, or default_transaction_read_only = on)")

// writesRefused says, from the parameters the server reports to the
// connection (in_hot_standby and default_transaction_read_only, reported
// since Postgres 14 with every change, before each ReadyForQuery), whether
// a transaction begun on it is read-only, so its COMMIT would write
// nothing the caller asked for: a transaction that wrote nothing (or
// swallowed a write's refusal) is refused as a write on such a server is.
// A server that reports neither is taken at its word.
func writesRefused(pc *pgconn.PgConn) error {
	if pc.ParameterStatus("in_hot_standby") == "on" || pc.ParameterStatus("default_transaction_read_only") == "on" {
		return errServerReadOnly
	}
	return nil
}

// serverReadOnly reports whether a read-write transaction failed because
// the server accepts only reads: a hot standby refuses BEGIN READ WRITE
// with feature_not_supported (0A000, "cannot set transaction read-write
// mode during recovery"), a read-only server a write with
// read_only_sql_transaction (25006). That is an outage of the database
// (a failover in progress, a DSN that reached a standby), not the
// request's fault: the gateway answers 503 ServerBusy, not 500.
func serverReadOnly(err error) bool {
	if err == nil {
		return false // without the allocation errors.As's target costs
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	var be *errBegin
	return pgErr.Code == "25006" || (pgErr.Code == "0A000" && errors.As(err, &be))
}

func retryable(err error) bool {
	if leasedb.MayHaveCommitted(err) {
		return false // running fn again could apply it twice
	}
	if errors.Is(err, errStale) {
		return true // CommitReplace wrote nothing; the next run reads afresh
	}
	if planChanged(err) {
		// A prepared statement the schema changed under (a migration
		// another replica ran) failed before COMMIT; the pair sender
		// closed its connection and pgx forgot its cached statement, so
		// the next run prepares it afresh.
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == codeSerializationFailure || pgErr.Code == codeDeadlockDetected
	}
	var be *errBegin
	return errors.As(err, &be) && pgconn.SafeToRetry(be.err)
}

// ClaimDue implements leasedb.Store in one statement (its own short
// transaction): due rows are locked with FOR UPDATE SKIP LOCKED, so
// concurrent claimers skip each other's rows, and marked claimed. A row
// another claimer committed meanwhile is re-checked against the WHERE
// clause and skipped. reclaimAfter <= 0 disables reclaiming. The keys are
// returned sorted.
func (s *Store) ClaimDue(ctx context.Context, limit int, reclaimAfter time.Duration) ([]string, error) {
	if limit <= 0 {
		return nil, nil
	}
	var stale any // NULL: never reclaim
	if reclaimAfter > 0 {
		stale = reclaimAfter.Microseconds()
	}
	rows, err := s.pool.Query(ctx, `
		WITH due AS MATERIALIZED (
			SELECT key FROM gc_queue
			WHERE (claimed_at IS NULL AND due_at <= statement_timestamp() + $3::bigint * interval '1 microsecond')
			   OR claimed_at <= statement_timestamp() - $2::bigint * interval '1 microsecond'
			ORDER BY due_at, key
			LIMIT $1
			FOR UPDATE SKIP LOCKED)
		UPDATE gc_queue g SET claimed_at = statement_timestamp()
		FROM due WHERE g.key = due.key
		RETURNING g.key`, limit, stale, time.Duration(s.clockOffset.Load()).Microseconds())
	if err != nil {
		return nil, fmt.Errorf("leasedb/postgres: claim due: %w", sqlq.CtxErr(ctx, err))
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("leasedb/postgres: claim due: %w", sqlq.CtxErr(ctx, err))
	}
	sort.Strings(keys)
	return keys, nil
}

// Forget implements leasedb.Store.
func (s *Store) Forget(ctx context.Context, keys []string) (int, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM gc_queue WHERE key = ANY($1)`, keys)
	if err != nil {
		return 0, fmt.Errorf("leasedb/postgres: forget: %w", sqlq.CtxErr(ctx, err))
	}
	return int(tag.RowsAffected()), nil
}

// CollectionKeys implements leasedb.Store; keys are sorted (byte order).
func (s *Store) CollectionKeys(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT key FROM gc_queue ORDER BY key`)
	if err != nil {
		return nil, fmt.Errorf("leasedb/postgres: collection keys: %w", sqlq.CtxErr(ctx, err))
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("leasedb/postgres: collection keys: %w", sqlq.CtxErr(ctx, err))
	}
	return keys, nil
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// SchemaVersion returns the database's schema version: 0 for an empty
// database.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	return schemaVersion(ctx, s.pool)
}

func schemaVersion(ctx context.Context, q querier) (int, error) {
	var exists bool
	if err := q.QueryRow(ctx, `SELECT to_regclass('schema_version') IS NOT NULL`).Scan(&exists); err != nil {
		return 0, fmt.Errorf("leasedb/postgres: schema version: %w", sqlq.CtxErr(ctx, err))
	}
	if !exists {
		return 0, nil
	}
	var v int
	if err := q.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_version`).Scan(&v); err != nil {
		return 0, fmt.Errorf("leasedb/postgres: schema version: %w", sqlq.CtxErr(ctx, err))
	}
	return v, nil
}

// Migrate brings the schema to the newest embedded migration and returns
// the versions before and after. Everything runs in one transaction that
// first takes an advisory lock, so replicas starting at once migrate one
// after the other (the later ones find nothing to do). A database newer
// than this binary is refused with an error wrapping
// leasedb.ErrSchemaTooNew.
func (s *Store) Migrate(ctx context.Context) (from, to int, err error) {
	return s.MigrateTo(ctx, 0)
}

// MigrateTo is Migrate stopping at schema version target (0: the newest),
// for tests of upgrades from an older schema. A database already at or
// past target is left alone (there are no down migrations); a target
// beyond the newest embedded migration is an error.
func (s *Store) MigrateTo(ctx context.Context, target int) (from, to int, err error) {
	from, to, err = s.migrateTo(ctx, target)
	// A lost connection (also one lost at COMMIT) is tagged
	// leasedb.ErrUnavailable, so a caller can run the migration again:
	// it reads schema_version under the migration lock, so a run whose
	// COMMIT did land applies nothing twice.
	return from, to, markUnavailable(ctx, err)
}

func (s *Store) migrateTo(ctx context.Context, target int) (from, to int, err error) {
	plan, err := sqlq.PlanMigration("leasedb/postgres", migrations.Postgres, target)
	if err != nil {
		return 0, 0, err
	}
	ptx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return 0, 0, fmt.Errorf("leasedb/postgres: migrate: begin: %w", sqlq.CtxErr(ctx, err))
	}
	defer rollback(ctx, ptx)
	if _, err := ptx.Exec(ctx, `SELECT pg_advisory_xact_lock($1::int4, $2::int4)`, migrateLockClass, migrateLockObj); err != nil {
		return 0, 0, fmt.Errorf("leasedb/postgres: migrate: lock: %w", sqlq.CtxErr(ctx, err))
	}
	// Set after the migration lock, whose wait (another replica
	// migrating) blocks no one else. A DDL statement waiting for its
	// table lock queues every later statement on that table behind it,
	// on every replica: behind a long open transaction it waits at most
	// migrateLockTimeout, then the migration rolls back (55P03, tagged
	// leasedb.ErrUnavailable, so dbopen.Open runs it again a while).
	if _, err := ptx.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", migrateLockTimeout.Milliseconds())); err != nil {
		return 0, 0, fmt.Errorf("leasedb/postgres: migrate: lock_timeout: %w", sqlq.CtxErr(ctx, err))
	}
	if _, err := ptx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp())`); err != nil {
		return 0, 0, fmt.Errorf("leasedb/postgres: migrate: %w", sqlq.CtxErr(ctx, err))
	}
	from, err = schemaVersion(ctx, ptx)
	if err != nil {
		return 0, 0, err
	}
	if err := plan.TooNew("leasedb/postgres: database", from); err != nil {
		return from, from, err
	}
	reached := from
	for _, f := range plan.Pending(from) {
		// No arguments: pgx uses the simple protocol, which runs a file of
		// several statements.
		if _, err := ptx.Exec(ctx, f.SQL); err != nil {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == "55P03" {
				return from, from, fmt.Errorf("leasedb/postgres: migrate: %s: a table lock it needs was not granted within %s (a long open transaction holds the table: see pg_stat_activity); nothing was applied: %w", f.Name, migrateLockTimeout, err)
			}
			return from, from, fmt.Errorf("leasedb/postgres: migrate: %s: %w", f.Name, sqlq.CtxErr(ctx, err))
		}
		if _, err := ptx.Exec(ctx, `INSERT INTO schema_version (version, name) VALUES ($1, $2)`, f.Version, f.Name); err != nil {
			return from, from, fmt.Errorf("leasedb/postgres: migrate: record %s: %w", f.Name, sqlq.CtxErr(ctx, err))
		}
		reached = f.Version
	}
	if err := ptx.Commit(ctx); err != nil {
		return from, from, fmt.Errorf("leasedb/postgres: migrate: commit: %w", sqlq.CtxErr(ctx, err))
	}
	return from, reached, nil
}

// tx is one transaction. It is not safe for concurrent use and must not be
// used after the function it was passed to returns.
type tx struct {
	sqlq.Tx[pgtype.Timestamptz] // the Tx methods both drivers share
	// offset is the Store's clockOffset when the transaction began.
	offset    time.Duration
	noOneTrip bool // the Store's noOneTrip
	tx        *lazyTx
	readOnly  bool
	now       time.Time
	// account is the account of the first container a read-write
	// transaction reads; settings, once read, are its account_settings,
	// read with the clock in one statement (Now), so a write that needs
	// both (keepVersion) pays one round trip for them.
	account  string
	settings *leasedb.AccountSettings
	// replacing is what LockForReplace locked, for CommitReplace;
	// committed is set once CommitReplace committed the transaction.
	replacing *replacing
	committed bool
	// leasing is the row LockBlob or LockBlobTier locked, for
	// CommitBlobLease, CommitBlobTags and CommitBlobTier; headClock the
	// clock their statement read (lockHead).
	leasing   leasedb.BlobRef
	headClock time.Time
	// staging is the name LockForStage locked, for CommitStage.
	staging *staging
}

// Now returns clock_timestamp(), read at the first call (normally after
// the transaction took its locks) and reused for the rest of the
// transaction.
func (t *tx) Now(ctx context.Context) (time.Time, error) {
	if t.now.IsZero() {
		var now time.Time
		if t.account != "" && t.settings == nil {
			var v, days int
			if err := t.tx.QueryRow(ctx, `SELECT clock_timestamp(), COALESCE(s.versioning, 0), COALESCE(s.delete_retention_days, 0)
				FROM (SELECT 1) AS one LEFT JOIN account_settings s ON s.account = $1`, t.account).Scan(&now, &v, &days); err != nil {
				return time.Time{}, fmt.Errorf("leasedb/postgres: now: %w", sqlq.CtxErr(ctx, err))
			}
			t.settings = &leasedb.AccountSettings{Versioning: v != 0, DeleteRetentionDays: days}
		} else if err := t.tx.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&now); err != nil {
			return time.Time{}, fmt.Errorf("leasedb/postgres: now: %w", sqlq.CtxErr(ctx, err))
		}
		t.now = now.Add(t.offset).UTC().Truncate(time.Microsecond)
	}
	return t.now, nil
}

func (t *tx) NextETag(ctx context.Context) (string, error) {
	var n int64
	if err := t.tx.QueryRow(ctx, `SELECT nextval('etag_seq')`).Scan(&n); err != nil {
		return "", fmt.Errorf("leasedb/postgres: next etag: %w", sqlq.CtxErr(ctx, err))
	}
	return formatETag(n), nil
}

// lockClause returns the row-lock clause for mode; none in a read-only
// transaction.
func (t *tx) lockClause(mode leasedb.LockMode) string {
	if t.readOnly {
		return ""
	}
	switch mode {
	case leasedb.LockShare:
		return " FOR SHARE"
	case leasedb.LockExclusive:
		return " FOR UPDATE"
	}
	return ""
}

const containerCols = sqlq.ContainerCols

// putBlobSQL is Tx.PutBlob's statement: sqlq.PutBlob's upsert, which
// both dialects share, with this one's extents_keys (migration 0018) from
// $30 (extentsKeys).
var putBlobSQL = upsertSQL(blobColCount + 1)

// upsertSQL is sqlq.PutBlob's upsert of a blob row with its extents_keys
// column from parameter n. Every statement that writes a blob row is one
// of it (Tx.PutBlob, CommitReplace's), so the column is never stale: what
// LockForReplace reads instead of searching the extents text.
func upsertSQL(n int) string {
	return sqlq.PutBlobWith(dialect.Placeholder, "extents_keys", dialect.Placeholder(n)+"::bool")
}

// extentsKeys is a row's extents_keys: whether an extent has a key (an
// object in the backend), as extentsHaveKeySQL finds in its text.
func extentsKeys(x []leasedb.Extent) bool {
	for i := range x {
		if x[i].Key != "" {
			return true
		}
	}
	return false
}

// Container implements leasedb.Tx: LockShare is FOR SHARE, LockExclusive
// the container's advisory lock exclusive and then FOR UPDATE
// (lockContainerSQL).
func (t *tx) Container(ctx context.Context, account, name string, lock leasedb.LockMode) (*leasedb.Container, error) {
	if err := checkText(account, name); err != nil {
		return nil, err
	}
	if !t.readOnly && t.account == "" {
		t.account = account
	}
	var (
		rows pgx.Rows
		err  error
	)
	if lock == leasedb.LockExclusive && !t.readOnly {
		rows, err = t.tx.Query(ctx, lockContainerSQL, account, name, containerLockKey(account, name))
	} else {
		rows, err = t.tx.Query(ctx, `SELECT `+containerCols+` FROM containers WHERE account = $1 AND name = $2`+t.lockClause(lock),
			account, name)
	}
	if err != nil {
		return nil, fmt.Errorf("leasedb/postgres: get container %s/%s: %w", account, name, sqlq.CtxErr(ctx, err))
	}
	cs, err := scanContainers(rows)
	if err != nil {
		return nil, fmt.Errorf("leasedb/postgres: get container %s/%s: %w", account, name, sqlq.CtxErr(ctx, err))
	}
	return sqlq.First(cs), nil
}

// DeleteContainer implements leasedb.Tx; ErrNotFound when the container row
// does not exist. It locks the container first as Container with
// LockExclusive does, so no blob commit, snapshot or block staging in it
// (which hold the container's advisory lock shared, FOR SHARE or, through
// the foreign key, FOR KEY SHARE) can run between the deletes. The lock and the
// five deletes go in one round trip; each statement takes its snapshot when
// it starts, so the deletes see every row committed before the lock was
// granted. Keys are distinct, each where it first appears in: the blobs'
// extents in blob-name order, then the snapshots' in (name, snapshot)
// order, then the versions' in (name, version id) order, then the
// soft-deleted rows' in (name, snapshot) order, then the staged blocks'
// keys in (blob name, block id) order.
func (t *tx) DeleteContainer(ctx context.Context, account, name string) ([]string, error) {
	if err := checkText(account, name); err != nil {
		return nil, err
	}
	b := &pgx.Batch{}
	b.Queue(lockContainerSQL, account, name, containerLockKey(account, name))
	b.Queue(`DELETE FROM blobs WHERE account = $1 AND container = $2 RETURNING name, '', extents`, account, name)
	b.Queue(`DELETE FROM snapshots WHERE account = $1 AND container = $2 RETURNING name, snapshot, extents`, account, name)
	b.Queue(`DELETE FROM versions WHERE account = $1 AND container = $2 RETURNING name, version_id, extents`, account, name)
	b.Queue(`DELETE FROM deleted_blobs WHERE account = $1 AND container = $2 RETURNING name, snapshot, extents`, account, name)
	b.Queue(`DELETE FROM blocks WHERE account = $1 AND container = $2 RETURNING blob, block_id, key`, account, name)
	b.Queue(`DELETE FROM containers WHERE account = $1 AND name = $2`, account, name)
	// deleted is one deleted row: (name, snapshot, extents) of a blob or
	// snapshot, (blob, block id, key) of a block.
	type deleted [3]string
	var (
		found                                           bool
		blobs, snapshots, versions, softDeleted, blocks []deleted
	)
	br := t.tx.SendBatch(ctx, b)
	err := func() error {
		tag, err := br.Exec()
		if err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		found = tag.RowsAffected() > 0
		for _, q := range []struct {
			what string
			out  *[]deleted
		}{{"blobs", &blobs}, {"snapshots", &snapshots}, {"versions", &versions}, {"deleted_blobs", &softDeleted}, {"blocks", &blocks}} {
			rows, err := br.Query()
			if err != nil {
				return fmt.Errorf("%s: %w", q.what, err)
			}
			var d deleted
			if _, err := pgx.ForEachRow(rows, []any{&d[0], &d[1], &d[2]}, func() error {
				*q.out = append(*q.out, d)
				return nil
			}); err != nil {
				return fmt.Errorf("%s: %w", q.what, err)
			}
		}
		if _, err := br.Exec(); err != nil {
			return err
		}
		return nil
	}()
	if cerr := br.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("leasedb/postgres: delete container %s/%s: %w", account, name, sqlq.CtxErr(ctx, err))
	}
	if !found {
		return nil, fmt.Errorf("leasedb/postgres: delete container %s/%s: %w", account, name, leasedb.ErrNotFound)
	}
	byKey := func(ds []deleted) {
		sort.Slice(ds, func(i, j int) bool {
			if ds[i][0] != ds[j][0] {
				return ds[i][0] < ds[j][0]
			}
			return ds[i][1] < ds[j][1]
		})
	}
	byKey(blobs)
	byKey(snapshots)
	byKey(versions)
	byKey(softDeleted)
	byKey(blocks)
	var keys leasedb.NameKeys // once per blob name
	for _, d := range append(append(append(blobs, snapshots...), versions...), softDeleted...) {
		x, err := leasedb.DecodeExtents(d[2])
		if err != nil {
			return nil, fmt.Errorf("leasedb/postgres: delete container %s/%s: %w", account, name, err)
		}
		for _, e := range x {
			if e.Key != "" { // an inline extent has no object
				keys.Add(d[0], e.Key)
			}
		}
	}
	for _, k := range blocks {
		keys.Add(k[0], k[2])
	}
	return keys.Keys, nil
}

const blobCols = sqlq.BlobCols

// Blob implements leasedb.Tx. With LockExclusive it first takes
// pg_advisory_xact_lock on a hash of the name (held until the transaction
// ends, whether or not the row exists), then reads the row FOR UPDATE; both
// statements go in one round trip. LockShare reads FOR SHARE.
func (t *tx) Blob(ctx context.Context, account, container, name string, lock leasedb.LockMode) (*leasedb.Blob, error) {
	if err := checkText(account, container, name); err != nil {
		return nil, err
	}
	const q = `SELECT ` + blobCols + ` FROM blobs WHERE account = $1 AND container = $2 AND name = $3`
	var (
		bs  []*leasedb.Blob
		err error
	)
	if lock == leasedb.LockExclusive && !t.readOnly {
		b := &pgx.Batch{}
		b.Queue(`SELECT pg_advisory_xact_lock($1)`, nameLockKey(account, container, name))
		b.Queue(q+` FOR UPDATE`, account, container, name)
		br := t.tx.SendBatch(ctx, b)
		if _, err = br.Exec(); err == nil {
			var rows pgx.Rows
			rows, err = br.Query()
			if err == nil {
				bs, err = scanBlobs(rows, false)
			}
		}
		if cerr := br.Close(); err == nil {
			err = cerr
		}
	} else {
		var rows pgx.Rows
		rows, err = t.tx.Query(ctx, q+t.lockClause(lock), account, container, name)
		if err == nil {
			bs, err = scanBlobs(rows, false)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("leasedb/postgres: get blob %s/%s/%s: %w", account, container, name, sqlq.CtxErr(ctx, err))
	}
	return sqlq.First(bs), nil
}

// nameLockKey is the advisory lock key of a blob name: FNV-1a 64 over the
// NUL-separated parts (names cannot contain NUL, so the encoding is
// unambiguous). A collision only serializes two unrelated names.
func nameLockKey(account, container, name string) int64 {
	h := fnv.New64a()
	h.Write([]byte("blob\x00"))
	h.Write([]byte(account))
	h.Write([]byte{0})
	h.Write([]byte(container))
	h.Write([]byte{0})
	h.Write([]byte(name))
	return int64(h.Sum64())
}

// PutBlob implements leasedb.Tx. A missing container is ErrNotFound (the
// transaction is then aborted; see Update).
func (t *tx) PutBlob(ctx context.Context, b *leasedb.Blob) error {
	if err := checkText(b.Account, b.Container, b.Name); err != nil {
		return err
	}
	vals, err := sqlq.BlobValues(b, ts)
	if err != nil {
		return err
	}
	_, err = t.tx.Exec(ctx, putBlobSQL, append(vals, extentsKeys(b.Extents))...)
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == codeForeignKeyViolation {
			return fmt.Errorf("leasedb/postgres: put blob %s/%s/%s: container: %w", b.Account, b.Container, b.Name, leasedb.ErrNotFound)
		}
		return fmt.Errorf("leasedb/postgres: put blob %s/%s/%s: %w", b.Account, b.Container, b.Name, sqlq.CtxErr(ctx, err))
	}
	return nil
}

func (t *tx) DeleteBlob(ctx context.Context, account, container, name string) error {
	if err := checkText(account, container, name); err != nil {
		return err
	}
	tag, err := t.tx.Exec(ctx, `DELETE FROM blobs WHERE account = $1 AND container = $2 AND name = $3`, account, container, name)
	if err != nil {
		return fmt.Errorf("leasedb/postgres: delete blob %s/%s/%s: %w", account, container, name, sqlq.CtxErr(ctx, err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("leasedb/postgres: delete blob %s/%s/%s: %w", account, container, name, leasedb.ErrNotFound)
	}
	return nil
}

// StageBlock implements leasedb.Tx. It first takes the blob name's
// advisory lock (the one Blob takes with LockExclusive; re-taking it in the
// same transaction is free), so stagers of one name, and a commit holding
// that lock, run one after the other: the key read as replaced is the one
// the upsert overwrites, and a replaced object is never lost to a
// concurrent stager. Lock and upsert go in one round trip. A missing
// container is ErrNotFound (the transaction is then aborted; see Update).
func (t *tx) StageBlock(ctx context.Context, account, container, blob string, b leasedb.Block) (string, error) {
	if err := checkText(account, container, blob, b.ID, b.Key); err != nil {
		return "", err
	}
	batch := &pgx.Batch{}
	batch.Queue(`SELECT pg_advisory_xact_lock($1)`, nameLockKey(account, container, blob))
	batch.Queue(`
		WITH old AS (
			SELECT key FROM blocks
			WHERE account = $1 AND container = $2 AND blob = $3 AND block_id = $4),
		up AS (
			INSERT INTO blocks (account, container, blob, block_id, key, size, staged_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (account, container, blob, block_id) DO UPDATE SET
				key = excluded.key, size = excluded.size, staged_at = excluded.staged_at)
		SELECT coalesce((SELECT key FROM old), '')`,
		account, container, blob, b.ID, b.Key, b.Size, dueTS(b.StagedAt))
	var old string
	br := t.tx.SendBatch(ctx, batch)
	_, err := br.Exec()
	if err == nil {
		err = br.QueryRow().Scan(&old)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == codeForeignKeyViolation {
			return "", fmt.Errorf("leasedb/postgres: stage block %s/%s/%s %s: container: %w", account, container, blob, b.ID, leasedb.ErrNotFound)
		}
		return "", fmt.Errorf("leasedb/postgres: stage block %s/%s/%s %s: %w", account, container, blob, b.ID, sqlq.CtxErr(ctx, err))
	}
	return old, nil
}

// ListLeases implements leasedb.Tx in one statement. Both halves read only
// the partial indexes' rows; a container's own row (kind 0) sorts before
// its blobs. Every text column is COLLATE "C", so the order is byte order.
func (t *tx) ListLeases(ctx context.Context, f leasedb.LeaseFilter) ([]leasedb.LeaseRow, error) {
	if err := checkText(f.Account, f.Container); err != nil {
		return nil, err
	}
	cw, bw := sqlq.LeasedPred, sqlq.LeasedPred
	var args []any
	if f.Account != "" {
		args = append(args, f.Account)
		n := strconv.Itoa(len(args))
		cw += " AND account = $" + n
		bw += " AND account = $" + n
	}
	if f.Container != "" {
		args = append(args, f.Container)
		n := strconv.Itoa(len(args))
		cw += " AND name = $" + n
		bw += " AND container = $" + n
	}
	return t.LeaseRows(ctx, `
		SELECT account, name, ''::text COLLATE "C", 0, `+sqlq.LeaseCols+` FROM containers WHERE `+cw+`
		UNION ALL
		SELECT account, container, name, 1, `+sqlq.LeaseCols+` FROM blobs WHERE `+bw+`
		ORDER BY 1, 2, 4, 3`, args...)
}

// AddIntent implements leasedb.Tx; ErrExists when key is already queued.
func (t *tx) AddIntent(ctx context.Context, key string, deadline time.Time) error {
	if err := checkText(key); err != nil {
		return err
	}
	tag, err := t.tx.Exec(ctx, `INSERT INTO gc_queue (key, due_at, is_intent) VALUES ($1, $2, TRUE)
		ON CONFLICT (key) DO NOTHING`, key, dueTS(deadline))
	if err != nil {
		return fmt.Errorf("leasedb/postgres: add intent %s: %w", key, sqlq.CtxErr(ctx, err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("leasedb/postgres: add intent %s: %w", key, leasedb.ErrExists)
	}
	return nil
}

// AddIntents implements leasedb.IntentsAdder: one INSERT for all keys.
// ErrExists when fewer rows went in than keys were given (a key already
// queued, or given twice).
func (t *tx) AddIntents(ctx context.Context, keys []string, deadline time.Time) error {
	if err := checkText(keys...); err != nil {
		return err
	}
	tag, err := t.tx.Exec(ctx, `INSERT INTO gc_queue (key, due_at, is_intent)
		SELECT k, $2, TRUE FROM unnest($1::text[]) AS k
		ON CONFLICT (key) DO NOTHING`, keys, dueTS(deadline))
	if err != nil {
		return fmt.Errorf("leasedb/postgres: add %d intents: %w", len(keys), sqlq.CtxErr(ctx, err))
	}
	if n := tag.RowsAffected(); n != int64(len(keys)) {
		return fmt.Errorf("leasedb/postgres: add %d intents: %d already queued: %w", len(keys), int64(len(keys))-n, leasedb.ErrExists)
	}
	return nil
}

// TakeIntent implements leasedb.Tx. If a ClaimDue holds the row, the DELETE
// waits for it and then finds the row claimed: false.
func (t *tx) TakeIntent(ctx context.Context, key string) (bool, error) {
	if err := checkText(key); err != nil {
		return false, err
	}
	tag, err := t.tx.Exec(ctx, `DELETE FROM gc_queue WHERE key = $1 AND is_intent AND claimed_at IS NULL`, key)
	if err != nil {
		return false, fmt.Errorf("leasedb/postgres: take intent %s: %w", key, sqlq.CtxErr(ctx, err))
	}
	return tag.RowsAffected() == 1, nil
}

// AddGC implements leasedb.Tx. A key already queued (an intent, say)
// becomes a plain collection entry due at due; an existing claim is kept.
func (t *tx) AddGC(ctx context.Context, keys []string, due time.Time) error {
	if len(keys) == 0 {
		return nil
	}
	if err := checkText(keys...); err != nil {
		return err
	}
	// Deduplicate: ON CONFLICT cannot touch one row twice in a statement.
	uniq := sortedUnique(keys)
	if _, err := t.tx.Exec(ctx, `INSERT INTO gc_queue (key, due_at, is_intent)
		SELECT k, $2, FALSE FROM unnest($1::text[]) AS k
		ON CONFLICT (key) DO UPDATE SET due_at = excluded.due_at, is_intent = FALSE`, uniq, dueTS(due)); err != nil {
		return fmt.Errorf("leasedb/postgres: add gc (%d keys): %w", len(uniq), sqlq.CtxErr(ctx, err))
	}
	return nil
}

// sortedUnique returns the distinct keys, sorted (a fresh slice).
func sortedUnique(keys []string) []string {
	out := append([]string(nil), keys...)
	sort.Strings(out)
	return compact(out)
}

func compact(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// checkText refuses what a Postgres text value cannot hold before it
// reaches the server, where the error would abort the transaction (see
// sqlq.CheckText).
func checkText(ss ...string) error { return sqlq.CheckText("leasedb/postgres", ss...) }

func scanContainers(rows pgx.Rows) ([]*leasedb.Container, error) {
	defer rows.Close()
	return sqlq.ScanContainers(rows, fromTS)
}

// scanBlobs reads rows of blobCols, followed by the snapshot id when
// snapshot is set (snapshotCols).
func scanBlobs(rows pgx.Rows, snapshot bool) ([]*leasedb.Blob, error) {
	defer rows.Close()
	if snapshot {
		return sqlq.ScanSnapshots(rows, fromTS)
	}
	return sqlq.ScanBlobs(rows, fromTS, nil)
}

// ts stores a time truncated to microseconds (Postgres' precision); the
// zero time is NULL so it comes back as the zero time.
func ts(t time.Time) any {
	if t.IsZero() {
		return pgtype.Timestamptz{}
	}
	return pgtype.Timestamptz{Time: t.UTC().Truncate(time.Microsecond), Valid: true}
}

// dueTS is ts for the NOT NULL columns due_at and staged_at: the zero time
// (for due_at, "due now") is stored as the timestamp Go's zero time maps to
// (0001-01-01 UTC), which reads back as the zero time.
func dueTS(t time.Time) pgtype.Timestamptz {
	return pgtype.Timestamptz{Time: t.UTC().Truncate(time.Microsecond), Valid: true}
}

func fromTS(v pgtype.Timestamptz) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return v.Time.UTC()
}

// ---------------------------------------------------------------------------
// Adopted keys (migration 0006; leasedb.DB.AdoptBlob).

// ClaimAdoptedKey implements leasedb.Tx. The insert holds the new row's
// lock until commit; a concurrent claim of the same key waits in its own
// INSERT ... ON CONFLICT DO NOTHING for this one to end, then reads the
// committed holder FOR UPDATE (READ COMMITTED: a new statement sees it).
func (t *tx) ClaimAdoptedKey(ctx context.Context, key string, ref leasedb.BlobRef) (leasedb.BlobRef, bool, error) {
	if err := checkText(key, ref.Account, ref.Container, ref.Name); err != nil {
		return leasedb.BlobRef{}, false, err
	}
	// Records are never deleted today; the loop only guards against one
	// vanishing between the two statements.
	for range 3 {
		tag, err := t.tx.Exec(ctx, `INSERT INTO adopted_keys (key, account, container, name) VALUES ($1, $2, $3, $4)
			ON CONFLICT (key) DO NOTHING`, key, ref.Account, ref.Container, ref.Name)
		if err != nil {
			return leasedb.BlobRef{}, false, fmt.Errorf("leasedb/postgres: claim adopted key %s: %w", key, sqlq.CtxErr(ctx, err))
		}
		if tag.RowsAffected() == 1 {
			return ref, true, nil
		}
		var h leasedb.BlobRef
		err = t.tx.QueryRow(ctx, `SELECT account, container, name FROM adopted_keys WHERE key = $1 FOR UPDATE`, key).
			Scan(&h.Account, &h.Container, &h.Name)
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return leasedb.BlobRef{}, false, fmt.Errorf("leasedb/postgres: claim adopted key %s: holder: %w", key, sqlq.CtxErr(ctx, err))
		}
		return h, false, nil
	}
	return leasedb.BlobRef{}, false, fmt.Errorf("leasedb/postgres: claim adopted key %s: its record keeps vanishing", key)
}

// ---- keys shared by several blob names (migration 0008) ----

// ShareKeys implements leasedb.Tx.
func (t *tx) ShareKeys(ctx context.Context, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	if err := checkText(keys...); err != nil {
		return err
	}
	uniq := sortedUnique(keys)
	if _, err := t.tx.Exec(ctx, `INSERT INTO extent_shares (key, names)
		SELECT k, 2 FROM unnest($1::text[]) AS k
		ON CONFLICT (key) DO UPDATE SET names = extent_shares.names + 1`, uniq); err != nil {
		return fmt.Errorf("leasedb/postgres: share keys (%d): %w", len(uniq), sqlq.CtxErr(ctx, err))
	}
	return nil
}

// ReleaseKeys implements leasedb.Tx. The rows are updated in key order,
// so two releases of overlapping keys cannot deadlock.
func (t *tx) ReleaseKeys(ctx context.Context, keys []string) ([]string, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	if err := checkText(keys...); err != nil {
		return nil, err
	}
	leaving := map[string]int{}
	for _, k := range keys {
		leaving[k]++
	}
	uniq := sortedUnique(keys)
	shared := map[string]int{}
	rows, err := t.tx.Query(ctx, `SELECT key, names FROM extent_shares WHERE key = ANY($1::text[]) ORDER BY key FOR UPDATE`, uniq)
	if err != nil {
		return nil, fmt.Errorf("leasedb/postgres: release keys: %w", sqlq.CtxErr(ctx, err))
	}
	var k string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&k, &n}, func() error { shared[k] = n; return nil }); err != nil {
		return nil, fmt.Errorf("leasedb/postgres: release keys: %w", sqlq.CtxErr(ctx, err))
	}
	var free []string
	for _, k := range uniq {
		names, ok := shared[k]
		if !ok {
			free = append(free, k)
			continue
		}
		left := names - leaving[k]
		if left >= 2 {
			_, err = t.tx.Exec(ctx, `UPDATE extent_shares SET names = $2 WHERE key = $1`, k, left)
		} else {
			_, err = t.tx.Exec(ctx, `DELETE FROM extent_shares WHERE key = $1`, k)
		}
		if err != nil {
			return nil, fmt.Errorf("leasedb/postgres: release key %s: %w", k, sqlq.CtxErr(ctx, err))
		}
		if left <= 0 {
			free = append(free, k)
		}
	}
	return free, nil
}
