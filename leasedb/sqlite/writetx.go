package sqlite

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"fmt"
	"time"

	"github.com/blobgw/blobgw/internal/failpoint"
	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

// Write transactions on the write pool's connection, without sql.Tx.
//
// database/sql's Tx starts a goroutine for every transaction (to roll it
// back when its context ends) and one more for every Rows read in it (to
// close them when the transaction's or the query's context ends), and
// modernc.org/sqlite starts one for every statement whose context can end
// (to interrupt it). A small write's dozen statements take a few µs each
// in SQLite; starting, waking and ending those goroutines cost more. So
// Update takes the connection itself (sql.Conn) and sends BEGIN
// IMMEDIATE, the statements and COMMIT on it: the same statements in the
// same transaction on the same connection, holding the same write lock
// from BEGIN IMMEDIATE to COMMIT. Each statement runs detached from the
// context once the context was checked (writeConn): a context that ended
// fails the next statement before it starts, as it did, and the
// transaction rolls back. What changes is only that a statement already
// running when the context ends runs to its end rather than being
// interrupted; the write lock is held from the first statement, so none of
// them waits for a lock. Reads (View, ReadBlob) keep sql.Tx and the
// interruption: a long listing whose client went away stops at once.

// sqlExec is what a transaction's statements run on: *sql.Tx or writeConn.
type sqlExec interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

var (
	_ sqlExec = (*sql.Tx)(nil)
	_ sqlExec = writeConn{}
)

// writeConn runs statements on the connection of a write transaction.
type writeConn struct{ c *sql.Conn }

// detach is ctx without its end, once checked (ctx itself when it has
// none: nothing to detach, nothing to allocate).
func detach(ctx context.Context) (context.Context, error) {
	if ctx.Done() == nil {
		return ctx, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return context.WithoutCancel(ctx), nil
}

func (w writeConn) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	dctx, err := detach(ctx)
	if err != nil {
		return nil, err
	}
	return w.c.QueryContext(dctx, query, args...)
}

func (w writeConn) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	dctx, err := detach(ctx)
	if err != nil {
		// database/sql answers a context that ended with its error, before
		// the statement runs.
		return w.c.QueryRowContext(ctx, query, args...)
	}
	return w.c.QueryRowContext(dctx, query, args...)
}

func (w writeConn) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	dctx, err := detach(ctx)
	if err != nil {
		return nil, err
	}
	return w.c.ExecContext(dctx, query, args...)
}

// runWrite is run for Update: BEGIN IMMEDIATE, fn, COMMIT, then the
// group fsync of the WAL.
func (s *Store) runWrite(ctx context.Context, fn func(leasedb.Tx) error) error {
	// Detached from ctx: a writer waiting for the one write connection,
	// BEGIN (whose busy wait is bounded by busy_timeout) and COMMIT are
	// not cut short by the caller, as with database/sql's Tx before, whose
	// rollback from another goroutine when ctx ended would race the
	// COMMIT.
	bctx := context.WithoutCancel(ctx)
	if err := s.WritesRefused(); err != nil {
		// Nothing committed now could be made durable (groupsync.go):
		// refused before it begins, so certainly not committed.
		return fmt.Errorf("leasedb/sqlite: begin: %w: %w", leasedb.ErrUnavailable, err)
	}
	conn, err := s.w.Conn(bctx)
	if err != nil {
		return fmt.Errorf("leasedb/sqlite: begin: %w", sqlq.CtxErr(ctx, err))
	}
	if _, err := conn.ExecContext(bctx, "BEGIN IMMEDIATE"); err != nil {
		release(conn, false)
		return fmt.Errorf("leasedb/sqlite: begin: %w", sqlq.CtxErr(ctx, err))
	}
	inTx := true
	defer func() {
		if inTx {
			// fn panicked: release the lock before the panic goes on.
			release(conn, true)
		}
	}()
	t := &tx{Tx: sqlq.Tx[sql.NullInt64]{D: &driver, Q: querier{writeConn{conn}}}, tx: writeConn{conn}, offset: time.Duration(s.clockOffset.Load())}
	if err := fn(t); err != nil {
		inTx = false
		release(conn, true)
		return err
	}
	inTx = false
	if _, err := conn.ExecContext(bctx, "COMMIT"); err != nil {
		// A failed COMMIT may leave the transaction open (SQLITE_BUSY):
		// roll it back, as modernc.org/sqlite's Tx.Commit does.
		release(conn, true)
		if isBusy(err) {
			// SQLite refused the COMMIT: nothing committed.
			return fmt.Errorf("leasedb/sqlite: commit: %w", sqlq.CtxErr(ctx, err))
		}
		// An I/O error or a full disk during COMMIT may or may not
		// have left the transaction committed.
		return fmt.Errorf("leasedb/sqlite: commit: %w: %w: %w", leasedb.ErrUnavailable, leasedb.ErrCommitUnknown, err)
	}
	release(conn, false)
	if err := s.wal.wait(); err != nil {
		// The transaction committed (other connections already read
		// it) but is not known to be durable.
		return fmt.Errorf("leasedb/sqlite: %w: %w: %w", leasedb.ErrUnavailable, leasedb.ErrCommitUnknown, err)
	}
	// Crash tests: committed and durable, the caller not told.
	failpoint.Inject("after-commit")
	return nil
}

// release hands the connection back to the pool, after a ROLLBACK when
// rollback is set. A ROLLBACK that fails may leave the connection inside
// a transaction (or SQLite already ended it: "no transaction is active");
// the connection is then closed rather than pooled, so no later writer
// inherits an open transaction and its write lock.
func release(conn *sql.Conn, rollback bool) {
	if rollback {
		if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
			_ = conn.Raw(func(any) error { return sqldriver.ErrBadConn })
		}
	}
	_ = conn.Close()
}

var _ leasedb.WriteRefuser = (*Store)(nil)

// WritesRefused implements leasedb.WriteRefuser: after a failed WAL flush
// (groupsync.go) every write is refused until a restart.
func (s *Store) WritesRefused() error { return s.wal.failed() }
