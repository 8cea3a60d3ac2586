package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

// lazyTx is the transaction of Store.run with BEGIN deferred to the first
// statement, so that the statement that opens a write (LockForReplace)
// can travel with BEGIN in one round trip (queryBegin). Every other first
// statement is preceded by BEGIN in a round trip of its own, as pgx's
// Conn.BeginTx does. Deferring BEGIN changes nothing a transaction sees:
// at READ COMMITTED each statement takes its own snapshot, at REPEATABLE
// READ the snapshot is taken at the first statement, not at BEGIN, and the
// clock is clock_timestamp(), not the transaction's start.
//
// A failed BEGIN is sticky (beginErr): every later call returns it, so no
// statement of fn can run outside a transaction when fn ignores an error,
// and run returns it as it returned a failed BeginTx (errBegin: retried
// when pgx says nothing reached the server; a standby's refusal is an
// outage).
type lazyTx struct {
	conn     *pgx.Conn
	beginSQL string
	// tracer is the connection's batch tracer (nil: none), told of
	// the pairs sent by sendPair.
	tracer pgx.BatchTracer
	// begun: BEGIN was sent (whatever its outcome: a later ROLLBACK is
	// harmless outside a transaction, and needed when the answer was lost).
	begun    bool
	closed   bool
	beginErr error
	// aborted: the query sent with BEGIN failed before anything ran; every
	// later statement fails with it and COMMIT is refused, as in a
	// transaction a failed statement aborted.
	aborted error
	// pair is the batch of two queries a write sends (queryBegin:
	// BEGIN and the first statement; CommitReplace: the write and
	// COMMIT), held here so that it costs no allocations of its own
	// (pgx's Batch.Queue allocates each query and grows the batch's
	// slice). One batch at a time: each is closed before the next.
	// The one-round-trip Put Blob (onetrip.go) sends four.
	pair struct {
		batch pgx.Batch
		q     [maxSent]pgx.QueuedQuery
		ptrs  [maxSent]*pgx.QueuedQuery
	}
}

func newLazyTx(conn *pgx.Conn, opts pgx.TxOptions, tracer pgx.QueryTracer) *lazyTx {
	l := &lazyTx{conn: conn, beginSQL: beginSQL(opts)}
	l.tracer, _ = tracer.(pgx.BatchTracer)
	return l
}

// beginSQL is the BEGIN of opts: a constant for the options Update and
// View use.
func beginSQL(opts pgx.TxOptions) string {
	switch opts {
	case updateOpts:
		return "begin isolation level read committed"
	case pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}:
		return "begin isolation level repeatable read read only"
	}
	sql := "begin isolation level " + string(opts.IsoLevel)
	if opts.AccessMode != "" {
		sql += " " + string(opts.AccessMode)
	}
	return sql
}

// pairBatch is the batch of the two queries (l.pair).
func (l *lazyTx) pairBatch(sql1 string, args1 []any, sql2 string, args2 []any) *pgx.Batch {
	return l.batchOf(&[maxSent]pairQuery{{sql1, args1}, {sql2, args2}}, 2)
}

// batchOf is the batch of q's first n queries (l.pair).
func (l *lazyTx) batchOf(q *[maxSent]pairQuery, n int) *pgx.Batch {
	p := &l.pair
	for i := range q[:n] {
		p.q[i] = pgx.QueuedQuery{SQL: q[i].sql, Arguments: q[i].args}
		p.ptrs[i] = &p.q[i]
	}
	p.batch = pgx.Batch{QueuedQueries: p.ptrs[:n]}
	return &p.batch
}

// unusable is the error every call returns once the transaction ended,
// its BEGIN failed or the statement sent with BEGIN aborted it; nil while
// it can run statements.
func (l *lazyTx) unusable() error {
	switch {
	case l.closed:
		return pgx.ErrTxClosed
	case l.beginErr != nil:
		return l.beginErr
	default:
		return l.aborted
	}
}

// begin sends BEGIN alone when nothing was sent yet.
func (l *lazyTx) begin(ctx context.Context) error {
	if err := l.unusable(); err != nil {
		return err
	}
	if l.begun {
		return nil
	}
	l.begun = true
	if _, err := l.conn.Exec(ctx, l.beginSQL); err != nil {
		return l.failBegin(ctx, err)
	}
	return nil
}

// failBegin records a failed BEGIN. As pgx's BeginTx, a failure that is
// not the server's answer, or a fatal one, ends the connection.
func (l *lazyTx) failBegin(ctx context.Context, err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Severity == "FATAL" || pgErr.Severity == "PANIC" {
		l.closeConn()
	}
	l.beginErr = &errBegin{sqlq.CtxErr(ctx, err)}
	return l.beginErr
}

func (l *lazyTx) closeConn() {
	cctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = l.conn.Close(cctx)
}

// queryBegin runs one query, with BEGIN in the same round trip (a pgx
// batch) when the transaction has not begun, and hands its rows to scan.
func (l *lazyTx) queryBegin(ctx context.Context, scan func(pgx.Rows) error, sql string, args ...any) error {
	if err := l.unusable(); err != nil {
		return err
	}
	if l.begun {
		rows, err := l.conn.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		return scan(rows)
	}
	l.begun = true
	if pc := pairConnOf(l.conn); pc.direct {
		res := pc.sendPair(ctx, l.tracer, true, time.Time{}, l.pairBatch(l.beginSQL, nil, sql, args),
			[2]pairQuery{{l.beginSQL, nil}, {sql, args}})
		var pe *errPrepare
		switch {
		case res.err == nil:
			return scan(res.rows)
		case res.failed == 0:
			return l.failBegin(ctx, res.err)
		case errors.As(res.err, &pe):
			// The query's prepare failed before anything ran: as
			// a statement failed in a transaction, it is over.
			l.aborted = res.err
			return res.err
		}
		return res.err // BEGIN ran, the query failed
	}
	br := l.conn.SendBatch(ctx, l.pairBatch(l.beginSQL, nil, sql, args))
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		var pe pgx.ErrPreprocessingBatch
		if errors.As(err, &pe) && pe.SQL() != l.beginSQL {
			// pgx prepares the batch's statements before it runs
			// any: the query failed, nothing ran. As a statement
			// failed in a transaction, the transaction is over.
			l.aborted = err
			return err
		}
		return l.failBegin(ctx, err)
	}
	rows, err := br.Query()
	if err == nil {
		err = scan(rows)
		rows.Close()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// commitPair runs the write sql and COMMIT in one round trip (the
// transaction has begun), detached from ctx (a caller that goes away
// must not cancel it half-way and leave its outcome unknown) and bounded
// by commitTimeout. werr is the write's failure (its statement returns
// one row), cerr COMMIT's or the connection's after the write's result;
// rolledBack: COMMIT answered ROLLBACK.
func (l *lazyTx) commitPair(ctx context.Context, sql string, args []any) (werr, cerr error, rolledBack bool) {
	batch := l.pairBatch(sql, args, "COMMIT", nil)
	if err := l.begin(ctx); err != nil {
		return err, nil, false
	}
	if pc := pairConnOf(l.conn); pc.direct {
		res := pc.sendPair(ctx, l.tracer, false, time.Now().Add(commitTimeout), batch,
			[2]pairQuery{{sql, args}, {"COMMIT", nil}})
		switch {
		case res.err != nil && res.failed == 0:
			return res.err, nil, false
		case res.err != nil:
			return nil, res.err, false
		case res.rows.n != 1 || res.rows.stmt != 0:
			return pgx.ErrNoRows, nil, false
		}
		return nil, nil, res.rolledBack
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer cancel()
	br := l.conn.SendBatch(cctx, batch)
	var n int
	werr = br.QueryRow().Scan(&n)
	var tag pgconn.CommandTag
	if werr == nil {
		tag, cerr = br.Exec()
	}
	if err := br.Close(); werr == nil && cerr == nil && err != nil {
		cerr = err
	}
	if werr != nil {
		werr = sqlq.CtxErr(cctx, werr)
	}
	return werr, cerr, tag.String() == "ROLLBACK"
}

func (l *lazyTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := l.begin(ctx); err != nil {
		return pgconn.CommandTag{}, err
	}
	return l.conn.Exec(ctx, sql, args...)
}

func (l *lazyTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := l.begin(ctx); err != nil {
		return nil, err
	}
	return l.conn.Query(ctx, sql, args...)
}

func (l *lazyTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if err := l.begin(ctx); err != nil {
		return errRow{err}
	}
	return l.conn.QueryRow(ctx, sql, args...)
}

func (l *lazyTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if err := l.begin(ctx); err != nil {
		return errBatch{err}
	}
	return l.conn.SendBatch(ctx, b)
}

// Commit is pgx's Tx.Commit: a COMMIT answered ROLLBACK is
// pgx.ErrTxCommitRollback, and a failure that leaves the connection inside
// a transaction ends the connection. A transaction that sent nothing has
// nothing to commit.
func (l *lazyTx) Commit(ctx context.Context) error {
	if l.closed {
		return pgx.ErrTxClosed
	}
	l.closed = true
	if l.beginErr != nil {
		return l.beginErr
	}
	if l.aborted != nil {
		_, _ = l.conn.Exec(ctx, "rollback")
		return pgx.ErrTxCommitRollback
	}
	if !l.begun {
		return nil
	}
	tag, err := l.conn.Exec(ctx, "commit")
	if err != nil {
		if l.conn.PgConn().TxStatus() != 'I' {
			l.closeConn()
		}
		return err
	}
	if tag.String() == "ROLLBACK" {
		return pgx.ErrTxCommitRollback
	}
	return nil
}

// commitDetached is Commit detached from ctx (a caller that goes away
// while COMMIT is in flight would otherwise cancel it half-way and leave
// its outcome unknown) and bounded by commitTimeout: on the pair sender,
// a deadline on the connection, with no context to watch.
func (l *lazyTx) commitDetached(ctx context.Context) error {
	pc := pairConnOf(l.conn)
	if !pc.direct || l.closed || l.beginErr != nil || l.aborted != nil || !l.begun {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
		defer cancel()
		return l.Commit(cctx)
	}
	l.closed = true
	res := pc.sendOne(ctx, l.tracer, false, time.Now().Add(commitTimeout), pairQuery{sql: "commit"})
	if res.err != nil {
		if l.conn.PgConn().TxStatus() != 'I' {
			l.closeConn()
		}
		return res.err
	}
	if res.rolledBack {
		return pgx.ErrTxCommitRollback
	}
	return nil
}

// Rollback is pgx's Tx.Rollback: a failed ROLLBACK ends the connection.
func (l *lazyTx) Rollback(ctx context.Context) error {
	if l.closed {
		return pgx.ErrTxClosed
	}
	l.closed = true
	if !l.begun {
		return nil
	}
	if _, err := l.conn.Exec(ctx, "rollback"); err != nil {
		l.closeConn()
		return err
	}
	return nil
}

// errRow and errBatch carry a failed BEGIN to QueryRow's and SendBatch's
// callers.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

type errBatch struct{ err error }

func (b errBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, b.err }
func (b errBatch) Query() (pgx.Rows, error)         { return nil, b.err }
func (b errBatch) QueryRow() pgx.Row                { return errRow(b) }
func (b errBatch) Close() error                     { return b.err }
func (b errBatch) Tx() pgx.Tx                       { return nil }
