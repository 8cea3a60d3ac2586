package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/blobgw/blobgw/leasedb"
)

// The pair sender: a write's two statements (BEGIN and its first
// statement, queryBegin; the write and COMMIT, CommitReplace) written to
// the connection as Bind and Execute messages of statements this
// connection prepared once, and one Sync, and their answers read message
// by message. That is what pgx.Batch sends for them on the wire, without
// the bookkeeping pgx and pgconn keep for a batch of any shape (a
// pipeline's container/list queues and the values boxed in them, batch
// and result readers, result formats copied per query, command tags as
// strings, a send buffer shrunk after each large message and grown
// again): about 20 allocations per pair. Where the context cannot end
// (the commit's: a deadline only) nothing watches it; the deadline is set
// on the connection. A context that can end is watched as pgx's default
// handler does (a deadline of now on the connection when it ends), with
// one context.AfterFunc.
//
// What stays as it was: the statements are pgx's prepared statements
// (Conn.Prepare, cached by pgx per connection); every statement is
// reported to the connection's tracer as a batch's query (the counting
// tests rely on it); a statement's failure is the server's
// *pgconn.PgError; a failure of the connection closes it and is never
// safe to retry once bytes may have left (pgconn.SafeToRetry is true only
// when nothing was written).

// pairConn is the sender's state of one connection, kept in its
// pgconn.CustomData: the statements it prepared and the buffers it
// reuses.
type pairConn struct {
	conn *pgx.Conn
	// direct: the connection runs statements as cached prepared
	// statements (pgx's default QueryExecMode); else pairs go through
	// pgx.Batch as before (say default_query_exec_mode=simple_protocol
	// for a pooler).
	direct bool
	stmts  []*pairStmt
	// params, formats, wbuf: the encoded arguments and the messages.
	params  [][]byte
	formats []int16
	vbuf    []byte
	wbuf    []byte
	bind    pgproto3.Bind
	// rowBuf and rowVals: the rows received (ncols values each),
	// copied out of pgconn's read buffer.
	rowBuf  []byte
	rowVals [][]byte
	rows    pairRows
	// cur is the pair's statements while it runs.
	cur [maxSent]*pairStmt
	// dataRow is the DataRow message pgconn's frontend decodes every
	// row into (one per connection, returned by each Receive), nil until
	// the first row.
	dataRow *pgproto3.DataRow
	// cancelWG and onCancel: the watch of a context that can end.
	cancelWG sync.WaitGroup
	onCancel func()
}

// pairStmt is a statement as this connection prepared it, with the
// formats its result columns are asked in.
type pairStmt struct {
	sql           string
	sd            *pgconn.StatementDescription
	fds           []pgconn.FieldDescription
	resultFormats []int16
	// rowVals is lent to the frontend's DataRow before this statement's
	// rows arrive (rowsFor): as many values as the statement has
	// columns.
	rowVals [][]byte
}

const pairConnKey = "blobgw/leasedb/postgres.pairConn"

// pairConnOf is conn's sender state, made on its first use.
func pairConnOf(conn *pgx.Conn) *pairConn {
	data := conn.PgConn().CustomData()
	if p, ok := data[pairConnKey].(*pairConn); ok && p.conn == conn {
		return p
	}
	p := &pairConn{conn: conn, direct: conn.Config().DefaultQueryExecMode == pgx.QueryExecModeCacheStatement}
	p.rows.p = p
	p.onCancel = func() {
		// As pgconn.DeadlineContextWatcherHandler, pgx's default.
		_ = conn.PgConn().Conn().SetDeadline(time.Now())
		p.cancelWG.Done()
	}
	data[pairConnKey] = p
	return p
}

// cached is sql as prepared on the connection, nil if it was not. The
// statements are the package's variables: == compares their pointers
// and lengths before any byte.
func (p *pairConn) cached(sql string) *pairStmt {
	for _, st := range p.stmts {
		if st.sql == sql {
			return st
		}
	}
	return nil
}

// prepare prepares sql on the connection (pgx's Conn.Prepare, which
// prepares a statement once per connection and caches it).
func (p *pairConn) prepare(ctx context.Context, sql string) (*pairStmt, error) {
	sd, err := p.conn.Prepare(ctx, sql, sql)
	if err != nil {
		return nil, err
	}
	st := &pairStmt{sql: sql, sd: sd, fds: make([]pgconn.FieldDescription, len(sd.Fields)), resultFormats: make([]int16, len(sd.Fields))}
	tm := p.conn.TypeMap()
	for i, f := range sd.Fields {
		st.resultFormats[i] = tm.FormatCodeForOID(f.DataTypeOID)
		st.fds[i] = f
		st.fds[i].Format = st.resultFormats[i]
	}
	p.stmts = append(p.stmts, st)
	return st, nil
}

// encode encodes args for st in p.params and p.formats as pgx's
// ExtendedQueryBuilder does (a string in the text format, any other
// value in its type's preferred format, the other one when that fails),
// into a buffer kept from one statement to the next.
func (p *pairConn) encode(st *pairStmt, args []any) error {
	if len(args) != len(st.sd.ParamOIDs) {
		return fmt.Errorf("expected %d arguments, got %d", len(st.sd.ParamOIDs), len(args))
	}
	tm := p.conn.TypeMap()
	if p.vbuf == nil {
		// Never nil, as pgx's builder: an empty text appends nothing,
		// and nothing appended to nil is nil, which reads as NULL below.
		p.vbuf = make([]byte, 0, 128)
	}
	p.params, p.formats, p.vbuf = p.params[:0], p.formats[:0], p.vbuf[:0]
	for i, arg := range args {
		oid := st.sd.ParamOIDs[i]
		format := tm.FormatCodeForOID(oid)
		switch arg.(type) {
		case string, *string:
			format = pgtype.TextFormatCode
		}
		start := len(p.vbuf)
		var buf []byte
		var err error
		if x, ok := arg.(extentsArg); ok && oid == pgtype.TextOID {
			// The text, in either format, appended in place.
			buf, err = leasedb.AppendExtents(p.vbuf, *x.p)
		} else {
			buf, err = tm.Encode(oid, format, arg, p.vbuf)
		}
		if err != nil {
			other := int16(pgtype.TextFormatCode)
			if format == pgtype.TextFormatCode {
				other = pgtype.BinaryFormatCode
			}
			var oerr error
			if buf, oerr = tm.Encode(oid, other, arg, p.vbuf); oerr != nil {
				return fmt.Errorf("failed to encode args[%d]: %w", i, err)
			}
			format = other
		}
		p.formats = append(p.formats, format)
		if buf == nil {
			p.params = append(p.params, nil) // NULL
			continue
		}
		// An earlier value stays valid when the buffer grows: it
		// points into the old array, which nothing writes again.
		p.vbuf = buf
		p.params = append(p.params, p.vbuf[start:len(p.vbuf):len(p.vbuf)])
	}
	return nil
}

// appendExec appends the Bind and Execute of st with args to p.wbuf.
func (p *pairConn) appendExec(st *pairStmt, args []any) error {
	if err := p.encode(st, args); err != nil {
		return err
	}
	p.bind = pgproto3.Bind{PreparedStatement: st.sd.Name, ParameterFormatCodes: p.formats, Parameters: p.params, ResultFormatCodes: st.resultFormats}
	var err error
	if p.wbuf, err = p.bind.Encode(p.wbuf); err != nil {
		return err
	}
	p.bind = pgproto3.Bind{}
	p.wbuf, err = (&pgproto3.Execute{}).Encode(p.wbuf)
	return err
}

// pairQuery is one statement of a pair.
type pairQuery struct {
	sql  string
	args []any
}

// pairResult is what a pair came to.
type pairResult struct {
	// failed is the index of the statement whose result did not
	// arrive (0 to n-1) when err is set: the one the server refused
	// (err a *pgconn.PgError, the ones after it skipped), or the one
	// being read when the connection failed (n-1 when every result
	// arrived but the end of the pair did not).
	failed int
	err    error
	// rolledBack: the last statement's command tag is ROLLBACK (a
	// COMMIT of a failed transaction).
	rolledBack bool
	// rows is the rows of the statement that returned some (one of
	// the pair at most), valid until the connection's next pair.
	rows *pairRows
}

// errNotSent is a failure before any byte of the pair was written:
// nothing reached the server (safe to retry, as pgconn says of such
// failures).
type errNotSent struct{ err error }

func (e *errNotSent) Error() string     { return e.err.Error() }
func (e *errNotSent) Unwrap() error     { return e.err }
func (e *errNotSent) SafeToRetry() bool { return true }

// errSent is a failure of the connection once the pair may have reached
// the server (pgconn marks some of those safe to retry, as
// ReceiveMessage does every failure: here they are not).
type errSent struct{ err error }

func (e *errSent) Error() string     { return e.err.Error() }
func (e *errSent) Unwrap() error     { return e.err }
func (e *errSent) SafeToRetry() bool { return false }

// sendPair runs q[0] and q[1] in one round trip. tracer is the
// connection's (nil: none); watch says whether ctx can end the pair
// (false: only its values are used); deadline, unless zero, bounds it.
// Before anything is sent it prepares what the connection has not
// prepared yet: a failure there returns failed 1 when q[1]'s prepare
// failed (q[0] did not run either), with errPrepare.
func (p *pairConn) sendPair(ctx context.Context, tracer pgx.BatchTracer, watch bool, deadline time.Time, batch *pgx.Batch, q [2]pairQuery) (res pairResult) {
	return p.send(ctx, tracer, watch, deadline, batch, [maxSent]pairQuery{q[0], q[1]}, 2)
}

// sendOne runs q alone, as sendPair runs a pair (failed is 0 when err is
// set; rolledBack is q's tag).
func (p *pairConn) sendOne(ctx context.Context, tracer pgx.BatchTracer, watch bool, deadline time.Time, q pairQuery) (res pairResult) {
	return p.send(ctx, tracer, watch, deadline, nil, [maxSent]pairQuery{q}, 1)
}

// maxSent is the most queries one send writes: BEGIN, two statements and
// COMMIT (the one-round-trip Put Blob, onetrip.go).
const maxSent = 4

// send runs the first n (1 to maxSent) queries of q in one round trip.
func (p *pairConn) send(ctx context.Context, tracer pgx.BatchTracer, watch bool, deadline time.Time, batch *pgx.Batch, q [maxSent]pairQuery, n int) (res pairResult) {
	if tracer != nil {
		ctx = tracer.TraceBatchStart(ctx, p.conn, pgx.TraceBatchStartData{Batch: batch})
		for _, qq := range q[:n] {
			tracer.TraceBatchQuery(ctx, p.conn, pgx.TraceBatchQueryData{SQL: qq.sql, Args: qq.args})
		}
		defer func() { tracer.TraceBatchEnd(ctx, p.conn, pgx.TraceBatchEndData{Err: res.err}) }()
	}
	var sts [maxSent]*pairStmt
	for i, qq := range q[:n] {
		st := p.cached(qq.sql)
		if st == nil {
			// Prepared once per connection: on a context that cannot
			// end, the prepare is bounded by the deadline alone.
			pctx := ctx
			if !watch {
				dl := deadline
				if dl.IsZero() {
					dl = time.Now().Add(commitTimeout)
				}
				var cancel context.CancelFunc
				pctx, cancel = context.WithDeadline(context.WithoutCancel(ctx), dl)
				defer cancel()
			}
			var err error
			if st, err = p.prepare(pctx, qq.sql); err != nil {
				return pairResult{failed: i, err: &errPrepare{sql: qq.sql, err: err}}
			}
		}
		sts[i] = st
	}
	pc := p.conn.PgConn()
	if pc.IsClosed() || pc.IsBusy() {
		return pairResult{err: &errNotSent{pgconn.ErrConnClosed}}
	}
	p.wbuf = p.wbuf[:0]
	for i, st := range sts[:n] {
		if err := p.appendExec(st, q[i].args); err != nil {
			return pairResult{failed: i, err: &errNotSent{err}}
		}
	}
	p.wbuf, _ = (&pgproto3.Sync{}).Encode(p.wbuf)
	nc := pc.Conn()
	var stop func() bool
	if watch && ctx.Done() != nil {
		if err := ctx.Err(); err != nil {
			return pairResult{err: &errNotSent{err}}
		}
		p.cancelWG.Add(1)
		stop = context.AfterFunc(ctx, p.onCancel)
	}
	if !deadline.IsZero() {
		_ = nc.SetDeadline(deadline)
	}
	p.cur = sts
	res = p.exchange(pc, nc, n)
	p.cur = [maxSent]*pairStmt{}
	if planChanged(res.err) {
		closeNow(pc)
	}
	if stop != nil {
		if stop() {
			p.cancelWG.Done()
		} else {
			p.cancelWG.Wait()
		}
	}
	if stop != nil || !deadline.IsZero() {
		_ = nc.SetDeadline(time.Time{})
	}
	if len(p.wbuf) > maxKeptBuf {
		p.wbuf = nil
	}
	if len(p.vbuf) > maxKeptBuf {
		p.vbuf = nil
	}
	if len(p.rowBuf) > maxKeptBuf {
		// The rows are the caller's until the next pair: a new
		// buffer then, not this one cut short.
		p.rowBuf = nil
	}
	return res
}

// maxKeptBuf is the largest buffer kept for the connection's next pair.
const maxKeptBuf = 256 << 10

// exchange writes p.wbuf and reads the answers up to ReadyForQuery.
func (p *pairConn) exchange(pc *pgconn.PgConn, nc interface{ Write([]byte) (int, error) }, n int) (res pairResult) {
	if n, err := nc.Write(p.wbuf); err != nil {
		closeNow(pc)
		if n == 0 {
			return pairResult{err: &errNotSent{err}}
		}
		return pairResult{err: &errSent{err}}
	}
	p.rowBuf, p.rowVals = p.rowBuf[:0], p.rowVals[:0]
	p.rows = pairRows{p: p}
	res.rows = &p.rows
	cur := 0 // the statement whose result is being read
	p.rowsFor(cur, n)
	for {
		msg, err := pc.ReceiveMessage(context.Background())
		if err != nil {
			closeNow(pc)
			if res.err == nil {
				res.failed, res.err = min(cur, n-1), &errSent{err}
			}
			return res
		}
		switch m := msg.(type) {
		case *pgproto3.BindComplete, *pgproto3.NoticeResponse, *pgproto3.ParameterStatus, *pgproto3.NotificationResponse:
		case *pgproto3.DataRow:
			if p.dataRow == nil {
				p.dataRow = m
			}
			if res.err == nil {
				p.addRow(cur, m.Values)
			}
		case *pgproto3.CommandComplete:
			if cur == n-1 && string(m.CommandTag) == "ROLLBACK" {
				res.rolledBack = true
			}
			cur++
			p.rowsFor(cur, n)
		case *pgproto3.EmptyQueryResponse:
			cur++
			p.rowsFor(cur, n)
		case *pgproto3.ErrorResponse:
			if res.err == nil {
				res.failed, res.err = min(cur, n-1), pgconn.ErrorResponseToPgError(m)
			}
			cur = n // the server skips the rest up to Sync
		case *pgproto3.ReadyForQuery:
			if res.err == nil && cur < n {
				res.failed, res.err = cur, &errSent{errors.New("leasedb/postgres: pair: ReadyForQuery before every result")}
			}
			return res
		default:
			closeNow(pc)
			if res.err == nil {
				res.failed, res.err = min(cur, n-1), &errSent{fmt.Errorf("leasedb/postgres: pair: unexpected message %T", msg)}
			}
			return res
		}
	}
}

// rowsFor lends statement i's rowVals to the frontend's DataRow before
// its rows arrive. pgproto3's DataRow.Decode allocates a new values slice
// when the one it holds is too short for the row or more than 32 longer:
// a write's LockForReplace row (35 columns) and CommitReplace's (1) did
// that twice per Put Blob, 1.6 KB. Decode only fills the slice, and
// addRow copies each row out before the next Receive.
func (p *pairConn) rowsFor(i, n int) {
	if p.dataRow == nil || i >= n {
		return
	}
	st := p.cur[i]
	if len(st.fds) == 0 {
		return // no rows
	}
	if cap(st.rowVals) != len(st.fds) {
		st.rowVals = make([][]byte, 0, len(st.fds))
	}
	p.dataRow.Values = st.rowVals[:0]
}

// addRow copies a row of statement i out of pgconn's read buffer.
func (p *pairConn) addRow(i int, vals [][]byte) {
	r := &p.rows
	if r.n == 0 {
		r.stmt, r.fds = i, p.cur[i].fds
	}
	if r.stmt != i || len(vals) != len(r.fds) {
		return
	}
	for _, v := range vals {
		if v == nil {
			p.rowVals = append(p.rowVals, nil)
			continue
		}
		start := len(p.rowBuf)
		p.rowBuf = append(p.rowBuf, v...)
		p.rowVals = append(p.rowVals, p.rowBuf[start:len(p.rowBuf):len(p.rowBuf)])
	}
	r.n++
}

// closeNow closes a connection whose protocol state is unknown.
func closeNow(pc *pgconn.PgConn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = pc.Close(ctx)
}

// errPrepare is a failure to prepare one of the pair's statements:
// nothing of the pair ran.
type errPrepare struct {
	sql string
	err error
}

func (e *errPrepare) Error() string { return "prepare: " + e.err.Error() }
func (e *errPrepare) Unwrap() error { return e.err }

// SafeToRetry: nothing of the pair ran; a failure of the connection
// closed it and with it the transaction. The server's refusal of the
// statement is not retried.
func (e *errPrepare) SafeToRetry() bool { return !isPgError(e.err) }

func isPgError(err error) bool {
	if err == nil {
		return false // without the allocation errors.As's target costs
	}
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr)
}

// planChanged reports whether err says a prepared statement must be
// prepared again (the schema changed under it): pgx's statement cache
// forgets such a statement; a connection that prepared it here is
// closed instead, so that the pool opens one that prepares it afresh.
func planChanged(err error) bool {
	if err == nil {
		return false // without the allocation errors.As's target costs
	}
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "26000" ||
		(pgErr.Code == "0A000" && strings.Contains(pgErr.Message, "cached plan must not change result type")))
}

// pairRows is the rows of a pair's statement as pgx.Rows (one pass).
type pairRows struct {
	p    *pairConn
	stmt int
	fds  []pgconn.FieldDescription
	n, i int
}

var _ pgx.Rows = (*pairRows)(nil)

func (r *pairRows) Close()                                       {}
func (r *pairRows) Err() error                                   { return nil }
func (r *pairRows) CommandTag() pgconn.CommandTag                { return pgconn.CommandTag{} }
func (r *pairRows) FieldDescriptions() []pgconn.FieldDescription { return r.fds }
func (r *pairRows) Conn() *pgx.Conn                              { return r.p.conn }
func (r *pairRows) TypeMap() *pgtype.Map                         { return r.p.conn.TypeMap() }

func (r *pairRows) Next() bool {
	if r.i >= r.n {
		return false
	}
	r.i++
	return true
}

// RawValues is the current row's values.
func (r *pairRows) RawValues() [][]byte {
	if r.i == 0 {
		return nil
	}
	nc := len(r.fds)
	return r.p.rowVals[(r.i-1)*nc : r.i*nc]
}

func (r *pairRows) Scan(dest ...any) error {
	if r.i == 0 {
		return errors.New("leasedb/postgres: Scan before Next")
	}
	return pgx.ScanRow(r.p.conn.TypeMap(), r.fds, r.RawValues(), dest...)
}

func (r *pairRows) Values() ([]any, error) {
	raw := r.RawValues()
	tm := r.p.conn.TypeMap()
	vals := make([]any, len(raw))
	for i, v := range raw {
		if v == nil {
			continue
		}
		if err := tm.Scan(r.fds[i].DataTypeOID, r.fds[i].Format, v, &vals[i]); err != nil {
			return nil, err
		}
	}
	return vals, nil
}
