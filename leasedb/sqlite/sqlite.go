// Package sqlite is the embedded leasedb.Store: one SQLite file (WAL mode)
// through the pure-Go driver modernc.org/sqlite, for single-host setups.
//
// Every write transaction starts with BEGIN IMMEDIATE, so it holds the
// database's single write lock from its first statement to COMMIT. That lock
// is a file lock: it serializes writers in this Store, in another Store on
// the same file, and in other processes. That is what makes a read inside
// Update a locked read; LockShare and LockExclusive need no further work
// here. Reads (View) run in deferred transactions on separate, read-only
// connections and see one consistent snapshot.
//
// This package must never hold the write lock outside Update, ClaimDue,
// Forget and Migrate, never let a writer upgrade from a deferred
// transaction (that fails with SQLITE_BUSY_SNAPSHOT instead of waiting), and
// never touch blob bytes.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
	"github.com/blobgw/blobgw/migrations"
)

var (
	_ leasedb.Store = (*Store)(nil)
	_ leasedb.Tx    = (*tx)(nil)
)

const (
	// busyTimeout is how long SQLite itself waits for a lock held by another
	// connection before returning SQLITE_BUSY.
	busyTimeout = 5 * time.Second
	// maxAttempts bounds how often Update runs fn when SQLite reports
	// SQLITE_BUSY (each attempt already waited up to busyTimeout).
	maxAttempts = 8
	// etagBase makes the ETags look like Azure's ("0x8D...").
	etagBase = 0x8D0000000000000
)

// Store is a leasedb.Store on one SQLite file. It is safe for concurrent
// use.
type Store struct {
	path string
	// w is the write pool: one connection, transactions start with BEGIN
	// IMMEDIATE. One connection is enough (SQLite has one writer at a time)
	// and makes writers of this Store queue in database/sql instead of
	// spinning in the busy handler.
	w *sql.DB
	// r is the read pool: query_only connections, deferred transactions.
	r *sql.DB
	// wal makes commits durable: every write transaction waits for an
	// fsync of the WAL that started after its COMMIT (groupsync.go).
	wal *groupSync
	// stmts counts the statements the pools' connections compiled and
	// reused (stmtcache.go).
	stmts *stmtCounters
	// clockOffset is added to the clock every transaction reads
	// (SetClockOffset, tests only).
	clockOffset atomic.Int64
}

// Open opens (creating if needed) the SQLite database at path. It does not
// migrate; call Migrate (dbopen.Open does). path is a file system path, not
// a URI; in-memory databases are refused because the read and write pools
// must see the same database.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") || strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("leasedb/sqlite: open %q: want a plain file path (no URI, no ':memory:', no '?' or '#')", path)
	}
	bt := fmt.Sprint(busyTimeout.Milliseconds())
	wq := url.Values{}
	wq.Add("_pragma", "busy_timeout("+bt+")")
	wq.Add("_pragma", "foreign_keys(1)")
	// NORMAL plus a group fsync of the WAL after each commit
	// (groupsync.go): a committed write survives power loss, as with FULL
	// (design invariant 5: a 2xx write means the transaction committed),
	// but the write lock is not held across the fsync.
	wq.Add("_pragma", "synchronous(NORMAL)")
	wq.Set("_txlock", "immediate")
	// Both pools keep prepared statements per connection (stmtcache.go).
	ctr := &stmtCounters{size: stmtCacheSize}
	wc, err := newCachingConnector(path+"?"+wq.Encode(), ctr)
	if err != nil {
		return nil, fmt.Errorf("leasedb/sqlite: open %s: %w", path, err)
	}
	w := sql.OpenDB(wc)
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxIdleTime(0)
	w.SetConnMaxLifetime(0)

	// The write connection first: it switches the file to WAL (a persistent
	// setting) before any reader opens it. Switching needs an exclusive lock
	// and SQLite reports SQLITE_BUSY without waiting when another process
	// is opening the same new file, hence the retries.
	var mode string
	for attempt := 1; ; attempt++ {
		err = w.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode)
		if err == nil || !isBusy(err) || attempt >= 50 || ctx.Err() != nil {
			break
		}
		if err = sqlq.Sleep(ctx, sqlq.Backoff(attempt)); err != nil {
			break
		}
	}
	if err == nil && !strings.EqualFold(mode, "wal") {
		err = fmt.Errorf("journal_mode is %q, want wal", mode)
	}
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("leasedb/sqlite: open %s: set WAL mode: %w", path, sqlq.CtxErr(ctx, err))
	}

	rq := url.Values{}
	rq.Add("_pragma", "busy_timeout("+bt+")")
	rq.Add("_pragma", "foreign_keys(1)")
	rq.Set("_query_only", "1")
	rc, err := newCachingConnector(path+"?"+rq.Encode(), ctr)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("leasedb/sqlite: open %s: %w", path, err)
	}
	r := sql.OpenDB(rc)
	n := max(4, runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	if err := r.PingContext(ctx); err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("leasedb/sqlite: open %s: %w", path, err)
	}
	return &Store{path: path, w: w, r: r, stmts: ctr, wal: newGroupSync(func() error { return syncFile(path + "-wal") })}, nil
}

// Path returns the file the store was opened on.
func (s *Store) Path() string { return s.path }

// Close closes both connection pools.
func (s *Store) Close() error {
	return errors.Join(s.w.Close(), s.r.Close())
}

// Update runs fn in a write transaction (BEGIN IMMEDIATE) and commits it when
// fn returns nil. When SQLite reports SQLITE_BUSY (another writer held the
// lock for longer than the busy timeout), it rolls back and runs fn again, a
// bounded number of times. Errors returned by fn are returned unchanged.
// fn must not call Update, ClaimDue or Forget on the same Store: they wait
// for the one write connection fn holds.
func (s *Store) Update(ctx context.Context, fn func(leasedb.Tx) error) error {
	return s.retry(ctx, func() error { return s.run(ctx, false, fn) })
}

// View runs fn in a read-only deferred transaction: one consistent
// snapshot, concurrent with writers. Lock modes are ignored in a View (a
// snapshot has nothing to lock); writes fail.
func (s *Store) View(ctx context.Context, fn func(leasedb.Tx) error) error {
	return s.retry(ctx, func() error { return s.run(ctx, true, fn) })
}

// retry runs attempt until it succeeds, fails with something other than
// SQLITE_BUSY, the context ends or maxAttempts is reached. A lock still
// busy then (another connection to the file, say another process, held it
// through every busy timeout) is leasedb.ErrUnavailable: the database
// could not serve the request, which did nothing wrong. So is a full
// filesystem or an I/O error met by a statement (diskFault).
func (s *Store) retry(ctx context.Context, attempt func() error) error {
	for i := 1; ; i++ {
		err := attempt()
		if err == nil {
			return nil
		}
		if !isBusy(err) {
			if diskFault(err) && !errors.Is(err, leasedb.ErrUnavailable) {
				return fmt.Errorf("%w: %w", leasedb.ErrUnavailable, err)
			}
			return err
		}
		if i >= maxAttempts || ctx.Err() != nil {
			return fmt.Errorf("%w: %w", leasedb.ErrUnavailable, err)
		}
		if err := sqlq.Sleep(ctx, sqlq.Backoff(i)); err != nil {
			return fmt.Errorf("leasedb/sqlite: retry after busy: %w", err)
		}
	}
}

func (s *Store) run(ctx context.Context, readOnly bool, fn func(leasedb.Tx) error) (err error) {
	if !readOnly {
		return s.runWrite(ctx, fn)
	}
	// ReadOnly makes the driver issue a plain (deferred) BEGIN.
	sqlTx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("leasedb/sqlite: begin: %w", sqlq.CtxErr(ctx, err))
	}
	done := false
	defer func() {
		if !done {
			// fn panicked: end the transaction before the panic goes on.
			_ = sqlTx.Rollback()
		}
	}()
	t := &tx{Tx: sqlq.Tx[sql.NullInt64]{D: &driver, Q: querier{sqlTx}}, tx: sqlTx, readOnly: true, offset: time.Duration(s.clockOffset.Load())}
	err = fn(t)
	done = true
	// Nothing to commit; fn's reads stand even if the context ended
	// meanwhile (database/sql then already rolled back).
	_ = sqlTx.Rollback()
	return err
}

// ClaimDue implements leasedb.Store. The write lock serializes claimers, so
// two callers never see the same unclaimed row. reclaimAfter <= 0 disables
// reclaiming. The keys are returned sorted.
func (s *Store) ClaimDue(ctx context.Context, limit int, reclaimAfter time.Duration) ([]string, error) {
	if limit <= 0 {
		return nil, nil
	}
	var keys []string
	err := s.Update(ctx, func(ltx leasedb.Tx) error {
		t := ltx.(*tx)
		keys = keys[:0]
		now, err := t.Now(ctx)
		if err != nil {
			return err
		}
		var stale any // NULL: never reclaim
		if reclaimAfter > 0 {
			stale = now.Add(-reclaimAfter).UnixMicro()
		}
		rows, err := t.tx.QueryContext(ctx, `
			UPDATE gc_queue SET claimed_at = ?1
			WHERE key IN (
				SELECT key FROM gc_queue
				WHERE (claimed_at IS NULL AND due_at <= ?1) OR claimed_at <= ?2
				ORDER BY due_at, key
				LIMIT ?3)
			RETURNING key`, now.UnixMicro(), stale, limit)
		if err != nil {
			return fmt.Errorf("leasedb/sqlite: claim due: %w", err)
		}
		keys, err = scanStrings(rows, keys)
		if err != nil {
			return fmt.Errorf("leasedb/sqlite: claim due: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(keys)
	return keys, nil
}

// Forget implements leasedb.Store.
func (s *Store) Forget(ctx context.Context, keys []string) (int, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	var n int
	err := s.Update(ctx, func(ltx leasedb.Tx) error {
		t := ltx.(*tx)
		// The transaction may run again.
		n = 0
		const chunk = 500 // well under SQLite's bound-parameter limit
		for start := 0; start < len(keys); start += chunk {
			part := keys[start:min(start+chunk, len(keys))]
			args := make([]any, len(part))
			for i, k := range part {
				args[i] = k
			}
			q := "DELETE FROM gc_queue WHERE key IN (?" + strings.Repeat(",?", len(part)-1) + ")"
			res, err := t.tx.ExecContext(ctx, q, args...)
			if err != nil {
				return fmt.Errorf("leasedb/sqlite: forget: %w", err)
			}
			removed, err := res.RowsAffected()
			if err != nil {
				return fmt.Errorf("leasedb/sqlite: forget: %w", err)
			}
			n += int(removed)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// CollectionKeys implements leasedb.Store; keys are sorted.
func (s *Store) CollectionKeys(ctx context.Context) ([]string, error) {
	var keys []string
	err := s.View(ctx, func(ltx leasedb.Tx) error {
		rows, err := ltx.(*tx).tx.QueryContext(ctx, "SELECT key FROM gc_queue ORDER BY key")
		if err != nil {
			return fmt.Errorf("leasedb/sqlite: collection keys: %w", err)
		}
		keys, err = scanStrings(rows, nil)
		if err != nil {
			return fmt.Errorf("leasedb/sqlite: collection keys: %w", err)
		}
		return nil
	})
	return keys, err
}

// SchemaVersion returns the database's schema version: 0 for an empty
// database.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.View(ctx, func(ltx leasedb.Tx) error {
		var err error
		v, err = schemaVersion(ctx, ltx.(*tx).tx)
		return err
	})
	return v, err
}

func schemaVersion(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int, error) {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'schema_version'`).Scan(&n); err != nil {
		return 0, fmt.Errorf("leasedb/sqlite: schema version: %w", err)
	}
	if n == 0 {
		return 0, nil
	}
	var v int
	if err := q.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_version`).Scan(&v); err != nil {
		return 0, fmt.Errorf("leasedb/sqlite: schema version: %w", err)
	}
	return v, nil
}

// Migrate brings the schema to the newest embedded migration in one write
// transaction (so concurrent migrators serialize on the write lock) and
// returns the versions before and after. A database newer than this binary
// is refused with an error wrapping leasedb.ErrSchemaTooNew.
func (s *Store) Migrate(ctx context.Context) (from, to int, err error) {
	return s.MigrateTo(ctx, 0)
}

// MigrateTo is Migrate stopping at schema version target (0: the newest),
// for tests of upgrades from an older schema. A database already at or
// past target is left alone (there are no down migrations); a target
// beyond the newest embedded migration is an error.
func (s *Store) MigrateTo(ctx context.Context, target int) (from, to int, err error) {
	plan, err := sqlq.PlanMigration("leasedb/sqlite", migrations.SQLite, target)
	if err != nil {
		return 0, 0, err
	}
	err = s.retry(ctx, func() error {
		sqlTx, err := s.w.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("leasedb/sqlite: migrate: begin: %w", sqlq.CtxErr(ctx, err))
		}
		defer sqlTx.Rollback()
		if _, err := sqlTx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
			version    INTEGER NOT NULL PRIMARY KEY,
			name       TEXT NOT NULL,
			applied_at INTEGER NOT NULL
		) STRICT`); err != nil {
			return fmt.Errorf("leasedb/sqlite: migrate: %w", err)
		}
		from, err = schemaVersion(ctx, sqlTx)
		if err != nil {
			return err
		}
		if err := plan.TooNew("leasedb/sqlite: "+s.path, from); err != nil {
			to = from
			return err
		}
		reached := from
		for _, f := range plan.Pending(from) {
			if _, err := sqlTx.ExecContext(ctx, f.SQL); err != nil {
				return fmt.Errorf("leasedb/sqlite: migrate: %s: %w", f.Name, err)
			}
			if _, err := sqlTx.ExecContext(ctx, `INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)`,
				f.Version, f.Name, time.Now().UnixMicro()); err != nil {
				return fmt.Errorf("leasedb/sqlite: migrate: record %s: %w", f.Name, err)
			}
			reached = f.Version
		}
		if err := sqlTx.Commit(); err != nil {
			return fmt.Errorf("leasedb/sqlite: migrate: commit: %w", sqlq.CtxErr(ctx, err))
		}
		to = reached
		if reached != from {
			// Statements compiled against the old schema are dropped
			// (stmtcache.go).
			s.stmts.epoch.Add(1)
		}
		return s.wal.wait()
	})
	return from, to, err
}

// tx is one transaction. It is not safe for concurrent use and must not be
// used after the function it was passed to returns.
type tx struct {
	sqlq.Tx[sql.NullInt64] // the Tx methods both drivers share
	// offset is the Store's clockOffset when the transaction began.
	offset time.Duration
	// tx runs the statements: a *sql.Tx in a View, writeConn in Update.
	tx       sqlExec
	readOnly bool
	now      time.Time
	// settings are the account settings read in this transaction
	// (txreads.go), valid when settingsOK, of account settingsFor.
	settings    leasedb.AccountSettings
	settingsFor string
	settingsOK  bool
	// replacing is what LockForReplace locked, for CommitReplace
	// (fastput.go).
	replacing *replacing
}

// Now returns Go's clock, read once per transaction. Inside Update the
// write lock is already held (BEGIN IMMEDIATE), so the times of successive
// writers are ordered like their commits as long as the host clock is.
func (t *tx) Now(ctx context.Context) (time.Time, error) {
	if t.now.IsZero() {
		t.now = time.Now().Add(t.offset).UTC().Truncate(time.Microsecond)
	}
	return t.now, nil
}

func (t *tx) NextETag(ctx context.Context) (string, error) {
	var n int64
	err := t.tx.QueryRowContext(ctx, `UPDATE etag_seq SET n = n + 1 WHERE id = 1 RETURNING n`).Scan(&n)
	if err != nil {
		return "", fmt.Errorf("leasedb/sqlite: next etag: %w", err)
	}
	return formatETag(n), nil
}

// formatETag is the ETag of etag_seq's value n.
func formatETag(n int64) string { return fmt.Sprintf(`"0x%X"`, etagBase+n) }

const containerCols = sqlq.ContainerCols

// containerRowSQL reads one container row by name, its columns named
// quietly (resultcols.go).
var containerRowSQL = `SELECT ` + quiet(containerCols) + ` FROM containers WHERE account = ? AND name = ?`

// putBlobSQL is Tx.PutBlob's statement (sqlq.PutBlob), which both
// dialects share; its parameters are bound in order, so SQLite's plain "?"
// placeholders serve.
var putBlobSQL = sqlq.PutBlob(func(int) string { return "?" })

// Container implements leasedb.Tx. The write transaction already excludes
// every other writer, so the lock modes need no statement of their own.
func (t *tx) Container(ctx context.Context, account, name string, lock leasedb.LockMode) (*leasedb.Container, error) {
	if err := checkText(account, name); err != nil {
		return nil, err
	}
	rows, err := t.tx.QueryContext(ctx, containerRowSQL, account, name)
	if err != nil {
		return nil, fmt.Errorf("leasedb/sqlite: get container %s/%s: %w", account, name, err)
	}
	cs, err := scanContainers(rows)
	if err != nil {
		return nil, fmt.Errorf("leasedb/sqlite: get container %s/%s: %w", account, name, err)
	}
	return sqlq.First(cs), nil
}

// DeleteContainer implements leasedb.Tx; ErrNotFound when the container row
// does not exist. Keys are distinct, each where it first appears in: the
// blobs' extents in blob-name order, then the snapshots' in (name,
// snapshot) order, then the versions' in (name, version id) order, then
// the soft-deleted rows' in (name, snapshot) order, then the staged
// blocks' keys in (blob name, block id) order.
func (t *tx) DeleteContainer(ctx context.Context, account, name string) ([]string, error) {
	if err := checkText(account, name); err != nil {
		return nil, err
	}
	var keys leasedb.NameKeys // once per blob name
	for _, q := range []struct{ what, query string }{
		{"blobs", `SELECT name, extents FROM blobs WHERE account = ? AND container = ? ORDER BY name`},
		{"snapshots", `SELECT name, extents FROM snapshots WHERE account = ? AND container = ? ORDER BY name, snapshot`},
		{"versions", `SELECT name, extents FROM versions WHERE account = ? AND container = ? ORDER BY name, version_id`},
		{"deleted_blobs", `SELECT name, extents FROM deleted_blobs WHERE account = ? AND container = ? ORDER BY name, snapshot`},
		{"blocks", `SELECT blob, key FROM blocks WHERE account = ? AND container = ? ORDER BY blob, block_id`},
	} {
		err := func() error {
			rows, err := t.tx.QueryContext(ctx, q.query, account, name)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var blob, ext string
				if err := rows.Scan(&blob, &ext); err != nil {
					return err
				}
				if q.what == "blocks" { // ext is the block's key
					keys.Add(blob, ext)
					continue
				}
				x, err := leasedb.DecodeExtents(ext)
				if err != nil {
					return err
				}
				for _, e := range x {
					if e.Key != "" { // an inline extent has no object
						keys.Add(blob, e.Key)
					}
				}
			}
			return rows.Err()
		}()
		if err != nil {
			return nil, fmt.Errorf("leasedb/sqlite: delete container %s/%s: %s: %w", account, name, q.what, err)
		}
	}
	for _, table := range []string{"blobs", "snapshots", "versions", "deleted_blobs", "blocks"} {
		if _, err := t.tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE account = ? AND container = ?`, account, name); err != nil {
			return nil, fmt.Errorf("leasedb/sqlite: delete container %s/%s: %s: %w", account, name, table, err)
		}
	}
	res, err := t.tx.ExecContext(ctx, `DELETE FROM containers WHERE account = ? AND name = ?`, account, name)
	if err != nil {
		return nil, fmt.Errorf("leasedb/sqlite: delete container %s/%s: %w", account, name, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return nil, fmt.Errorf("leasedb/sqlite: delete container %s/%s: %w", account, name, err)
	} else if n == 0 {
		return nil, fmt.Errorf("leasedb/sqlite: delete container %s/%s: %w", account, name, leasedb.ErrNotFound)
	}
	return keys.Keys, nil
}

const blobCols = sqlq.BlobCols

// Blob implements leasedb.Tx; see Container for the lock modes.
func (t *tx) Blob(ctx context.Context, account, container, name string, lock leasedb.LockMode) (*leasedb.Blob, error) {
	if err := checkText(account, container, name); err != nil {
		return nil, err
	}
	rows, err := t.tx.QueryContext(ctx, blobRowSQL, account, container, name)
	if err != nil {
		return nil, fmt.Errorf("leasedb/sqlite: get blob %s/%s/%s: %w", account, container, name, err)
	}
	bs, err := scanBlobs(rows, false)
	if err != nil {
		return nil, fmt.Errorf("leasedb/sqlite: get blob %s/%s/%s: %w", account, container, name, err)
	}
	return sqlq.First(bs), nil
}

// PutBlob implements leasedb.Tx. A missing container is ErrNotFound.
func (t *tx) PutBlob(ctx context.Context, b *leasedb.Blob) error {
	if err := checkText(b.Account, b.Container, b.Name); err != nil {
		return err
	}
	vals, err := sqlq.BlobValues(b, micros)
	if err != nil {
		return err
	}
	_, err = t.tx.ExecContext(ctx, putBlobSQL, vals...)
	if err != nil {
		if code(err) == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY {
			return fmt.Errorf("leasedb/sqlite: put blob %s/%s/%s: container: %w", b.Account, b.Container, b.Name, leasedb.ErrNotFound)
		}
		return fmt.Errorf("leasedb/sqlite: put blob %s/%s/%s: %w", b.Account, b.Container, b.Name, err)
	}
	return nil
}

func (t *tx) DeleteBlob(ctx context.Context, account, container, name string) error {
	if err := checkText(account, container, name); err != nil {
		return err
	}
	res, err := t.tx.ExecContext(ctx, `DELETE FROM blobs WHERE account = ? AND container = ? AND name = ?`, account, container, name)
	if err != nil {
		return fmt.Errorf("leasedb/sqlite: delete blob %s/%s/%s: %w", account, container, name, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("leasedb/sqlite: delete blob %s/%s/%s: %w", account, container, name, err)
	} else if n == 0 {
		return fmt.Errorf("leasedb/sqlite: delete blob %s/%s/%s: %w", account, container, name, leasedb.ErrNotFound)
	}
	return nil
}

// StageBlock implements leasedb.Tx. The write transaction excludes every
// other writer, so reading the replaced key and upserting need no lock of
// their own. A missing container is ErrNotFound.
func (t *tx) StageBlock(ctx context.Context, account, container, blob string, b leasedb.Block) (string, error) {
	if err := checkText(account, container, blob, b.ID, b.Key); err != nil {
		return "", err
	}
	var old string
	err := t.tx.QueryRowContext(ctx, `SELECT key FROM blocks WHERE account = ? AND container = ? AND blob = ? AND block_id = ?`,
		account, container, blob, b.ID).Scan(&old)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("leasedb/sqlite: stage block %s/%s/%s %s: %w", account, container, blob, b.ID, err)
	}
	_, err = t.tx.ExecContext(ctx, `INSERT INTO blocks (account, container, blob, block_id, key, size, staged_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (account, container, blob, block_id) DO UPDATE SET
			key = excluded.key, size = excluded.size, staged_at = excluded.staged_at`,
		account, container, blob, b.ID, b.Key, b.Size, b.StagedAt.UnixMicro())
	if err != nil {
		if code(err) == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY {
			return "", fmt.Errorf("leasedb/sqlite: stage block %s/%s/%s %s: container: %w", account, container, blob, b.ID, leasedb.ErrNotFound)
		}
		return "", fmt.Errorf("leasedb/sqlite: stage block %s/%s/%s %s: %w", account, container, blob, b.ID, err)
	}
	return old, nil
}

// ListLeases implements leasedb.Tx. Both halves read only the partial
// indexes' rows; a container's own row (kind 0) sorts before its blobs.
// INDEXED BY pins the partial indexes: without statistics (blobgw never
// runs ANALYZE) SQLite would rather scan a whole table in primary key order
// than sort the few leased rows, and the statement fails outright if the
// predicate ever stops matching the indexes'.
func (t *tx) ListLeases(ctx context.Context, f leasedb.LeaseFilter) ([]leasedb.LeaseRow, error) {
	if err := checkText(f.Account, f.Container); err != nil {
		return nil, err
	}
	cw, bw := sqlq.LeasedPred, sqlq.LeasedPred
	var cargs, bargs []any
	if f.Account != "" {
		cw += " AND account = ?"
		bw += " AND account = ?"
		cargs, bargs = append(cargs, f.Account), append(bargs, f.Account)
	}
	if f.Container != "" {
		cw += " AND name = ?"
		bw += " AND container = ?"
		cargs, bargs = append(cargs, f.Container), append(bargs, f.Container)
	}
	return t.LeaseRows(ctx, `
		SELECT account, name, '', 0, `+sqlq.LeaseCols+` FROM containers INDEXED BY containers_leased WHERE `+cw+`
		UNION ALL
		SELECT account, container, name, 1, `+sqlq.LeaseCols+` FROM blobs INDEXED BY blobs_leased WHERE `+bw+`
		ORDER BY 1, 2, 4, 3`, append(cargs, bargs...)...)
}

// AddIntent implements leasedb.Tx; ErrExists when key is already queued.
func (t *tx) AddIntent(ctx context.Context, key string, deadline time.Time) error {
	if err := checkText(key); err != nil {
		return err
	}
	res, err := t.tx.ExecContext(ctx, `INSERT INTO gc_queue (key, due_at, is_intent) VALUES (?, ?, 1)
		ON CONFLICT (key) DO NOTHING`, key, deadline.UnixMicro())
	if err != nil {
		return fmt.Errorf("leasedb/sqlite: add intent %s: %w", key, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("leasedb/sqlite: add intent %s: %w", key, err)
	} else if n == 0 {
		return fmt.Errorf("leasedb/sqlite: add intent %s: %w", key, leasedb.ErrExists)
	}
	return nil
}

func (t *tx) TakeIntent(ctx context.Context, key string) (bool, error) {
	if err := checkText(key); err != nil {
		return false, err
	}
	res, err := t.tx.ExecContext(ctx, `DELETE FROM gc_queue WHERE key = ? AND is_intent = 1 AND claimed_at IS NULL`, key)
	if err != nil {
		return false, fmt.Errorf("leasedb/sqlite: take intent %s: %w", key, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("leasedb/sqlite: take intent %s: %w", key, err)
	}
	return n == 1, nil
}

// AddGC implements leasedb.Tx. A key already queued (an intent, say)
// becomes a plain collection entry due at due; an existing claim is kept.
func (t *tx) AddGC(ctx context.Context, keys []string, due time.Time) error {
	if err := checkText(keys...); err != nil {
		return err
	}
	for _, k := range keys {
		if _, err := t.tx.ExecContext(ctx, `INSERT INTO gc_queue (key, due_at, is_intent) VALUES (?, ?, 0)
			ON CONFLICT (key) DO UPDATE SET due_at = excluded.due_at, is_intent = 0`, k, due.UnixMicro()); err != nil {
			return fmt.Errorf("leasedb/sqlite: add gc %s: %w", k, err)
		}
	}
	return nil
}

// checkText refuses names Postgres cannot store (see sqlq.CheckText), so
// both stores accept exactly the same names.
func checkText(ss ...string) error { return sqlq.CheckText("leasedb/sqlite", ss...) }

func scanContainers(rows *sql.Rows) ([]*leasedb.Container, error) {
	defer rows.Close()
	return sqlq.ScanContainers(rows, fromMicros)
}

// scanBlobs reads rows of blobCols, followed by the snapshot id when
// snapshot is set (snapshotCols).
func scanBlobs(rows *sql.Rows, snapshot bool) ([]*leasedb.Blob, error) {
	defer rows.Close()
	if snapshot {
		return sqlq.ScanSnapshots(rows, fromMicros)
	}
	return sqlq.ScanBlobs(rows, fromMicros, nil)
}

// scanItems reads the rows of sqlq.ListEntries and sqlq.ListDelimited.
func scanItems(rows *sql.Rows) ([]leasedb.ListItem, error) {
	defer rows.Close()
	return sqlq.ScanItems(rows, fromMicros)
}

func scanStrings(rows *sql.Rows, out []string) ([]string, error) {
	defer rows.Close()
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// micros stores a time as microseconds since the Unix epoch; the zero time
// is NULL so it comes back as the zero time.
func micros(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}

func fromMicros(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return time.UnixMicro(v.Int64).UTC()
}

// code returns the SQLite (extended) result code of err, 0 if none.
func code(err error) int {
	var e *sqlite.Error
	if errors.As(err, &e) {
		return e.Code()
	}
	return 0
}

// diskFault reports whether err is SQLITE_FULL or SQLITE_IOERR (any
// extended code): the file's filesystem is full or failed a read or write.
// A statement that meets it fails and its transaction rolls back (a
// transaction larger than the page cache writes to the WAL before its
// COMMIT); a COMMIT that meets it has its own classification (runWrite).
func diskFault(err error) bool {
	c := code(err) & 0xff
	return c == sqlite3.SQLITE_FULL || c == sqlite3.SQLITE_IOERR
}

// isBusy reports whether err is SQLITE_BUSY or SQLITE_LOCKED (any extended
// code): another connection held a lock we needed, and a retry may work.
func isBusy(err error) bool {
	c := code(err) & 0xff
	return c == sqlite3.SQLITE_BUSY || c == sqlite3.SQLITE_LOCKED
}

// ---------------------------------------------------------------------------
// Adopted keys (migration 0006; leasedb.DB.AdoptBlob). The write lock
// already serializes claims; no statement of their own is needed.

// ClaimAdoptedKey implements leasedb.Tx.
func (t *tx) ClaimAdoptedKey(ctx context.Context, key string, ref leasedb.BlobRef) (leasedb.BlobRef, bool, error) {
	if err := checkText(key, ref.Account, ref.Container, ref.Name); err != nil {
		return leasedb.BlobRef{}, false, err
	}
	res, err := t.tx.ExecContext(ctx, `INSERT INTO adopted_keys (key, account, container, name) VALUES (?, ?, ?, ?)
		ON CONFLICT (key) DO NOTHING`, key, ref.Account, ref.Container, ref.Name)
	if err != nil {
		return leasedb.BlobRef{}, false, fmt.Errorf("leasedb/sqlite: claim adopted key %s: %w", key, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return leasedb.BlobRef{}, false, fmt.Errorf("leasedb/sqlite: claim adopted key %s: %w", key, err)
	} else if n == 1 {
		return ref, true, nil
	}
	var h leasedb.BlobRef
	if err := t.tx.QueryRowContext(ctx, `SELECT account, container, name FROM adopted_keys WHERE key = ?`, key).
		Scan(&h.Account, &h.Container, &h.Name); err != nil {
		return leasedb.BlobRef{}, false, fmt.Errorf("leasedb/sqlite: claim adopted key %s: holder: %w", key, err)
	}
	return h, false, nil
}

// ---- keys shared by several blob names (migration 0008) ----

// ShareKeys implements leasedb.Tx.
func (t *tx) ShareKeys(ctx context.Context, keys []string) error {
	if err := checkText(keys...); err != nil {
		return err
	}
	for _, k := range keys {
		if _, err := t.tx.ExecContext(ctx, `INSERT INTO extent_shares (key, names) VALUES (?, 2)
			ON CONFLICT (key) DO UPDATE SET names = names + 1`, k); err != nil {
			return fmt.Errorf("leasedb/sqlite: share key %s: %w", k, err)
		}
	}
	return nil
}

// ReleaseKeys implements leasedb.Tx.
func (t *tx) ReleaseKeys(ctx context.Context, keys []string) ([]string, error) {
	if err := checkText(keys...); err != nil {
		return nil, err
	}
	leaving, order := countKeys(keys)
	var free []string
	for _, k := range order {
		var names int
		err := t.tx.QueryRowContext(ctx, `SELECT names FROM extent_shares WHERE key = ?`, k).Scan(&names)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			free = append(free, k)
			continue
		case err != nil:
			return nil, fmt.Errorf("leasedb/sqlite: release key %s: %w", k, err)
		}
		left := names - leaving[k]
		if left >= 2 {
			_, err = t.tx.ExecContext(ctx, `UPDATE extent_shares SET names = ? WHERE key = ?`, left, k)
		} else {
			_, err = t.tx.ExecContext(ctx, `DELETE FROM extent_shares WHERE key = ?`, k)
		}
		if err != nil {
			return nil, fmt.Errorf("leasedb/sqlite: release key %s: %w", k, err)
		}
		if left <= 0 {
			free = append(free, k)
		}
	}
	return free, nil
}

// countKeys counts the occurrences of each key, in first-seen order.
func countKeys(keys []string) (map[string]int, []string) {
	n := make(map[string]int, len(keys))
	var order []string
	for _, k := range keys {
		if n[k] == 0 {
			order = append(order, k)
		}
		n[k]++
	}
	return n, order
}
