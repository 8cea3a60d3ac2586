package pgtest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// Cut says what a Proxy does with one simple-protocol query on its way to
// the server.
type Cut int

const (
	// Pass forwards the query and its answer.
	Pass Cut = iota
	// CutBefore closes both connections instead of forwarding the query:
	// the server never sees it.
	CutBefore
	// CutAfterReply forwards the query, waits until the server has
	// answered it in full (ReadyForQuery), then closes both connections
	// without forwarding the answer: the server did the work, the client
	// never hears of it. For a COMMIT this is the commit whose outcome the
	// client cannot know.
	CutAfterReply
)

// Proxy is a TCP proxy between clients and a PostgreSQL server that reads
// the frontend protocol, so a test can cut connections at a chosen
// statement (say right after a COMMIT reached the server). It handles
// unencrypted connections only (Proxy.DSN sets sslmode=disable).
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   func(q Query) Cut
	conns map[net.Conn]bool
	cuts  int
	wg    sync.WaitGroup
}

// StartProxy starts a proxy on a free 127.0.0.1 port in front of the
// server of dsn and returns it; it is closed when t ends. Until SetCut is
// called it passes everything.
func StartProxy(t testing.TB, dsn string) *Proxy {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("pgtest: proxy: parse dsn: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("pgtest: proxy: listen: %v", err)
	}
	p := &Proxy{ln: ln, target: u.Host, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// DSN returns dsn with its host and port replaced by the proxy's.
func (p *Proxy) DSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		panic(err)
	}
	u.Host = p.ln.Addr().String()
	q := u.Query()
	q.Set("sslmode", "disable")
	u.RawQuery = q.Encode()
	return u.String()
}

// Query is one simple-protocol query ('Q' message: pgx sends BEGIN and
// COMMIT so) as a Proxy sees it.
type Query struct {
	// SQL is the query's text.
	SQL string
	// Tx is the text of every statement the connection sent since its
	// last BEGIN (extended-protocol statements included: pgx prepares
	// them once per connection and then names them), this one last.
	Tx []string
}

// InTx reports whether a statement of q's transaction contains sub.
func (q Query) InTx(sub string) bool {
	for _, s := range q.Tx {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// SetCut installs fn, asked for every simple-protocol query and for every
// extended-protocol COMMIT (one sent in a pipeline after the statements it
// commits, leasedb/postgres CommitReplace); nil passes everything.
func (p *Proxy) SetCut(fn func(q Query) Cut) {
	p.mu.Lock()
	p.cut = fn
	p.mu.Unlock()
}

// Cuts returns how many connections the proxy has cut so far.
func (p *Proxy) Cuts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cuts
}

// decide asks the proxy's cut function what to do with q, the statement
// txn (the connection's transaction so far) ends with, and counts a cut.
func (p *Proxy) decide(q string, txn []string) Cut {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := Pass
	if p.cut != nil {
		c = p.cut(Query{SQL: q, Tx: append([]string(nil), txn...)})
	}
	if c != Pass {
		p.cuts++
	}
	return c
}

// CutOnce returns a cut function that cuts the next query matching match
// with c, and passes everything else (including later matches).
func CutOnce(match func(q Query) bool, c Cut) func(Query) Cut {
	var once sync.Once
	return func(q Query) Cut {
		out := Pass
		if match(q) {
			once.Do(func() { out = c })
		}
		return out
	}
}

// IsCommit reports whether q is a COMMIT.
func (q Query) IsCommit() bool { return strings.EqualFold(strings.TrimSpace(q.SQL), "commit") }

// Close stops accepting, closes every open connection and waits for the
// proxy's goroutines.
func (p *Proxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) track(c net.Conn, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on {
		p.conns[c] = true
	} else {
		delete(p.conns, c)
	}
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		p.track(client, true)
		p.track(server, true)
		p.wg.Add(1)
		go p.session(client, server)
	}
}

// session relays one connection: client to server message by message (so
// queries can be seen and cut), server to client likewise (so the answer
// to a query can be swallowed whole).
func (p *Proxy) session(client, server net.Conn) {
	defer p.wg.Done()
	var once sync.Once
	closeBoth := func() {
		once.Do(func() {
			client.Close()
			server.Close()
			p.track(client, false)
			p.track(server, false)
		})
	}
	defer closeBoth()
	swallow := make(chan struct{})
	var swallowOnce sync.Once
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer closeBoth()
		swallowing := false
		for {
			typ, msg, err := readMessage(server, true)
			if err != nil {
				return
			}
			if !swallowing {
				select {
				case <-swallow:
					swallowing = true
				default:
				}
			}
			if swallowing {
				if typ == 'Z' { // ReadyForQuery: the answer is complete
					return
				}
				continue
			}
			if _, err := client.Write(msg); err != nil {
				return
			}
		}
	}()
	// The startup message has no type byte.
	if _, msg, err := readMessage(client, false); err != nil {
		return
	} else if _, err := server.Write(msg); err != nil {
		return
	}
	prepared := map[string]string{} // statement name → text
	var txn []string
	untilSync := false // a pipeline is cut after the reply to its Sync
	for {
		typ, msg, err := readMessage(client, true)
		if err != nil {
			break
		}
		c := Pass
		switch typ {
		case 'P': // Parse: name, query, ...
			name, rest := cstring(msg[5:])
			query, _ := cstring(rest)
			prepared[name] = query
		case 'B': // Bind: portal, statement, ...
			_, rest := cstring(msg[5:])
			stmt, _ := cstring(rest)
			txn = append(txn, prepared[stmt])
			// The statements before it in the pipeline were forwarded
			// (and run); cut before it, the transaction dies with the
			// connection; cut after the reply, it committed.
			if q := prepared[stmt]; (Query{SQL: q}).IsCommit() {
				c = p.decide(q, txn)
			}
		case 'Q':
			q := string(bytes.TrimRight(msg[5:], "\x00"))
			if f := strings.Fields(strings.ToLower(q)); len(f) > 0 && (f[0] == "begin" || f[0] == "start") {
				txn = txn[:0]
			}
			txn = append(txn, q)
			c = p.decide(q, txn)
		}
		if c == CutBefore {
			break
		}
		if c == CutAfterReply {
			// The server side stops forwarding from here on and closes
			// both once the answer is in.
			swallowOnce.Do(func() { close(swallow) })
		}
		if _, err := server.Write(msg); err != nil {
			break
		}
		// A simple query is answered in full after it; a pipeline only
		// once its Sync went too.
		if c == CutAfterReply && typ == 'B' {
			untilSync = true
			continue
		}
		if c == CutAfterReply || (untilSync && typ == 'S') {
			<-done
			return
		}
	}
}

// cstring splits b at its first NUL.
func cstring(b []byte) (string, []byte) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return string(b), nil
	}
	return string(b[:i]), b[i+1:]
}

// readMessage reads one protocol message (type byte, when typed, then a
// big-endian int32 length that counts itself) and returns it whole.
func readMessage(r io.Reader, typed bool) (byte, []byte, error) {
	hdr := 4
	if typed {
		hdr = 5
	}
	buf := make([]byte, hdr, 512)
	if _, err := io.ReadFull(r, buf); err != nil {
		return 0, nil, err
	}
	n := int(binary.BigEndian.Uint32(buf[hdr-4:]))
	if n < 4 || n > 1<<30 {
		return 0, nil, fmt.Errorf("pgtest: proxy: bad message length %d", n)
	}
	var typ byte
	if typed {
		typ = buf[0]
	}
	buf = append(buf, make([]byte, n-4)...)
	if _, err := io.ReadFull(r, buf[hdr:]); err != nil {
		return 0, nil, err
	}
	return typ, buf, nil
}
