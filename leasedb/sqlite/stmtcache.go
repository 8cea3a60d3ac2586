package sqlite

import (
	"container/list"
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"sync/atomic"

	sqlite "modernc.org/sqlite"
)

// Prepared statements kept per connection.
//
// modernc.org/sqlite compiles the SQL text of every QueryContext and
// ExecContext afresh (sqlite3_prepare_v2) and finalizes it afterwards; on
// a small Put Blob that was a fifth of the gateway's CPU, for the same dozen
// statements every time. The pools' connections are therefore wrapped:
// a wrapped connection keeps the statements it compiled, keyed by SQL
// text, and hands the same one out again. Every caller (sqlq.Tx, the
// queries written here, autocommit reads on the read pool) gains without
// changing, inside transactions and out.
//
// The cache lives in the driver connection rather than in *sql.Stmt values
// prepared on the *sql.DB: DB.PrepareContext takes a connection of its own,
// and the write pool's one connection is held by the transaction that
// meets a statement first.
//
// database/sql never uses a connection from two goroutines at once, so a
// cache needs no lock. It does run a second statement on a connection while
// rows of a first are still open (a nested query in one transaction); a
// statement whose rows are open is busy, and the same text asked for again
// meanwhile gets a statement of its own, finalized when closed.
//
// Schema changes: SQLite recompiles a prepared statement by itself when the
// schema changed under it (prepare_v2), also after a migration by another
// process. Migrate still clears every connection's cache once it
// committed (epoch), so no statement compiled against the old schema
// survives it even in principle.

// stmtCacheSize bounds the statements one connection keeps. The hot paths
// use a few dozen texts; statements built with a variable number of
// placeholders (Forget's IN lists) would otherwise grow the cache without
// bound. The least recently used idle statement goes first.
const stmtCacheSize = 128

// stmtCounters are shared by the connections of one Store.
type stmtCounters struct {
	// prepares counts statements compiled (cache misses and busy
	// duplicates); hits counts statements handed out again.
	prepares, hits atomic.Int64
	// epoch is raised by Migrate; a connection that sees a new epoch drops
	// its idle statements before the next one.
	epoch atomic.Int64
	// size is the cache size of new connections (tests set 0: no caching).
	size int
	// trace, when set (tests, before the store is used concurrently),
	// sees the text of every statement asked for.
	trace func(query string)
}

// cachingConnector opens modernc.org/sqlite connections and wraps them.
type cachingConnector struct {
	inner sqldriver.Connector
	ctr   *stmtCounters
}

func newCachingConnector(dsn string, ctr *stmtCounters) (*cachingConnector, error) {
	inner, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return &cachingConnector{inner: inner, ctr: ctr}, nil
}

func (c *cachingConnector) Connect(ctx context.Context) (sqldriver.Conn, error) {
	dc, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return newCachingConn(dc, c.ctr)
}

func (c *cachingConnector) Driver() sqldriver.Driver { return c.inner.Driver() }

// sqliteConn is what the wrapper needs of a modernc.org/sqlite connection.
type sqliteConn interface {
	sqldriver.Conn
	sqldriver.ConnPrepareContext
	sqldriver.ConnBeginTx
	sqldriver.Pinger
	sqldriver.SessionResetter
	sqldriver.Validator
}

// cachingConn deliberately implements neither driver.QueryerContext nor
// driver.ExecerContext: database/sql then prepares through PrepareContext,
// runs the statement, and closes it when its rows (or the Exec) are done;
// Close of a cached statement hands it back to the cache.
type cachingConn struct {
	c     sqliteConn
	ctr   *stmtCounters
	size  int
	epoch int64
	bySQL map[string]*list.Element // of *cachedStmt
	lru   list.List                // front: most recently handed out
}

func newCachingConn(dc sqldriver.Conn, ctr *stmtCounters) (sqldriver.Conn, error) {
	c, ok := dc.(sqliteConn)
	if !ok {
		dc.Close()
		return nil, errors.New("leasedb/sqlite: driver connection lacks the interfaces the statement cache needs")
	}
	return &cachingConn{c: c, ctr: ctr, size: ctr.size, epoch: ctr.epoch.Load(), bySQL: map[string]*list.Element{}}, nil
}

var (
	_ sqldriver.Conn               = (*cachingConn)(nil)
	_ sqldriver.ConnPrepareContext = (*cachingConn)(nil)
	_ sqldriver.ConnBeginTx        = (*cachingConn)(nil)
	_ sqldriver.Pinger             = (*cachingConn)(nil)
	_ sqldriver.SessionResetter    = (*cachingConn)(nil)
	_ sqldriver.Validator          = (*cachingConn)(nil)
)

type cachedStmt struct {
	stmt
	conn  *cachingConn
	query string
	busy  bool // handed out and not closed yet
	gone  bool // evicted or dropped while busy: finalize at Close
}

// stmt is what database/sql calls on a modernc.org/sqlite statement.
type stmt interface {
	sqldriver.Stmt
	sqldriver.StmtExecContext
	sqldriver.StmtQueryContext
}

func (c *cachingConn) Prepare(query string) (sqldriver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *cachingConn) PrepareContext(ctx context.Context, query string) (sqldriver.Stmt, error) {
	if c.ctr.trace != nil {
		c.ctr.trace(query)
	}
	if e := c.ctr.epoch.Load(); e != c.epoch {
		c.dropAll()
		c.epoch = e
	}
	if el, ok := c.bySQL[query]; ok {
		cs := el.Value.(*cachedStmt)
		if !cs.busy {
			cs.busy = true
			c.lru.MoveToFront(el)
			c.ctr.hits.Add(1)
			return cs, nil
		}
		// Its rows are still open: a statement of its own.
		return c.prepare(ctx, query)
	}
	ds, err := c.prepare(ctx, query)
	if err != nil || c.size <= 0 {
		return ds, err
	}
	s, ok := ds.(stmt)
	if !ok {
		return ds, nil
	}
	cs := &cachedStmt{stmt: s, conn: c, query: query, busy: true}
	c.bySQL[query] = c.lru.PushFront(cs)
	c.evict()
	return cs, nil
}

func (c *cachingConn) prepare(ctx context.Context, query string) (sqldriver.Stmt, error) {
	c.ctr.prepares.Add(1)
	return c.c.PrepareContext(ctx, query)
}

// evict drops least recently used statements beyond the cache size; a busy
// one is finalized when its user closes it.
func (c *cachingConn) evict() {
	for c.lru.Len() > c.size {
		el := c.lru.Back()
		cs := el.Value.(*cachedStmt)
		c.lru.Remove(el)
		delete(c.bySQL, cs.query)
		if cs.busy {
			cs.gone = true
			continue
		}
		_ = cs.stmt.Close()
	}
}

// dropAll empties the cache; it returns the first error finalizing an idle
// statement.
func (c *cachingConn) dropAll() error {
	var first error
	for el := c.lru.Front(); el != nil; el = el.Next() {
		cs := el.Value.(*cachedStmt)
		if cs.busy {
			cs.gone = true
			continue
		}
		if err := cs.stmt.Close(); err != nil && first == nil {
			first = err
		}
	}
	c.lru.Init()
	clear(c.bySQL)
	return first
}

// Close of a cached statement returns it to the cache: database/sql calls
// it when the statement's rows are closed (the rows reset the SQLite
// statement then) or its Exec returned.
func (s *cachedStmt) Close() error {
	s.busy = false
	if s.gone {
		return s.stmt.Close()
	}
	return nil
}

// Close finalizes the cached statements first: sqlite3_close_v2 would
// otherwise leave the connection open as a zombie until they were.
func (c *cachingConn) Close() error {
	err := c.dropAll()
	return errors.Join(err, c.c.Close())
}

func (c *cachingConn) Begin() (sqldriver.Tx, error) {
	return c.c.BeginTx(context.Background(), sqldriver.TxOptions{})
}

func (c *cachingConn) BeginTx(ctx context.Context, opts sqldriver.TxOptions) (sqldriver.Tx, error) {
	return c.c.BeginTx(ctx, opts)
}

func (c *cachingConn) Ping(ctx context.Context) error { return c.c.Ping(ctx) }

func (c *cachingConn) ResetSession(ctx context.Context) error { return c.c.ResetSession(ctx) }

func (c *cachingConn) IsValid() bool { return c.c.IsValid() }
