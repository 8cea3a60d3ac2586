package gateway

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/blobgw/blobgw/svcerr"
	"github.com/google/uuid"
)

// Defaults of the connection settings (config max_connections,
// read_header_timeout, idle_timeout).
const (
	DefaultMaxConnections    = 4096
	DefaultReadHeaderTimeout = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
)

const (
	// busyAnswers bounds the connections over the limit that are being
	// answered 503 ServerBusy at once; beyond it a connection is closed
	// as soon as it is accepted (there is nothing left to answer with).
	busyAnswers = 256
	// busyDeadline bounds one such answer: reading the request line and
	// headers, writing the answer, the lingering close. A client that
	// sends nothing (an idle or slowloris connection) is cut at it.
	busyDeadline = 5 * time.Second
	// busyHeaderBytes bounds the request head a busy answer reads.
	busyHeaderBytes = 64 << 10
)

// LimitConnections caps the connections the HTTP server holds at once at
// max. Every connection costs a goroutine, buffers and a file descriptor
// for as long as the client keeps it (idle keep-alive connections,
// slowloris clients until the read header timeout cuts them), so without a
// cap a crowd of idle clients exhausts the replica's memory or
// descriptors and nothing is answered any more. A connection over the cap
// never reaches the server: it is answered 503 ServerBusy (which the Azure
// SDKs retry with backoff) after its request head is read, with
// "Connection: close", and closed; its body, if any, is never read, so
// nothing is stored. At most busyAnswers such answers run at once, each
// within busyDeadline; beyond that an excess connection is closed unread.
func LimitConnections(l net.Listener, max int) net.Listener {
	return &limitListener{Listener: l, slots: make(chan struct{}, max), busy: make(chan struct{}, busyAnswers)}
}

// LimitConnections is LimitConnections counted in s's metrics: each busy
// answer as a request of no operation answered 503 (blobgw_requests_total,
// blobgw_unavailable_total, its duration and bytes), and each connection
// over the cap closed unanswered in blobgw_connections_refused_total.
func (s *Server) LimitConnections(l net.Listener, max int) net.Listener {
	ll := LimitConnections(l, max).(*limitListener)
	ll.m = s.metrics
	return ll
}

// LimitTLSConnections is LimitTLSConnections counted in s's metrics (every
// connection over the cap is closed unanswered).
func (s *Server) LimitTLSConnections(l net.Listener, max int) net.Listener {
	ll := LimitTLSConnections(l, max).(*limitListener)
	ll.m = s.metrics
	return ll
}

// LimitTLSConnections is LimitConnections for a listener whose
// connections will speak TLS: a connection over the cap is closed at once.
// A plain-HTTP 503 written into it would reach the client as a failed
// handshake anyway, after holding a busy slot while its "request head"
// (a ClientHello) was read.
func LimitTLSConnections(l net.Listener, max int) net.Listener {
	return &limitListener{Listener: l, slots: make(chan struct{}, max), closeOnly: true}
}

type limitListener struct {
	net.Listener
	slots     chan struct{}
	busy      chan struct{}
	closeOnly bool
	m         *metrics // nil: not counted
}

// refused counts a connection over the cap closed unanswered.
func (l *limitListener) refused() {
	if l.m != nil {
		l.m.connsRefused.Inc()
	}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &limitedConn{Conn: c, release: func() { <-l.slots }}, nil
		default:
		}
		if l.closeOnly {
			c.Close()
			l.refused()
			continue
		}
		select {
		case l.busy <- struct{}{}:
			go func() {
				defer func() { <-l.busy }()
				start := time.Now()
				switch out, ok := answerBusy(c); {
				case !ok:
					l.refused()
				case l.m != nil:
					l.m.observeRequest("", http.StatusServiceUnavailable, string(svcerr.ServerBusy), time.Since(start), 0, out)
				}
			}()
		default:
			c.Close()
			l.refused()
		}
	}
}

// limitedConn gives its slot back once, on the first Close.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// ReadFrom and CloseWrite keep the server's sendfile path and its
// lingering close working through the wrapper.
func (c *limitedConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(c.Conn, r)
}

func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// answerBusy reads one request head from c and answers it 503 ServerBusy
// with the service's error body, then closes c. A connection that sends
// no complete head within busyDeadline is closed unanswered (ok false);
// out is the answer's body length.
func answerBusy(c net.Conn) (out int64, ok bool) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(busyDeadline))
	br := bufio.NewReaderSize(io.LimitReader(c, busyHeaderBytes), 4096)
	req, err := http.ReadRequest(br)
	if err != nil {
		return 0, false
	}
	id := uuid.NewString()
	e := svcerr.Newf(svcerr.ServerBusy, "The server is handling too many connections. Please retry your request.")
	h := http.Header{}
	h.Set("x-ms-request-id", id)
	h.Set("x-ms-error-code", string(e.Code))
	h.Set("Server", "blobgw")
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	h.Set("Connection", "close")
	if v := req.Header.Get("x-ms-version"); v != "" && validVersion(v) {
		h.Set("x-ms-version", v)
	} else {
		h.Set("x-ms-version", DefaultVersion)
	}
	var body []byte
	if req.Method != http.MethodHead {
		body = errorBody(e, id)
		h.Set("Content-Type", "application/xml")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	bw := bufio.NewWriter(c)
	bw.WriteString("HTTP/1.1 " + strconv.Itoa(e.Status()) + " " + http.StatusText(e.Status()) + "\r\n")
	h.Write(bw)
	bw.WriteString("\r\n")
	bw.Write(body)
	if bw.Flush() != nil {
		return 0, false
	}
	// A lingering close, as net/http does: closing with a request body
	// still unread would reset the connection, and the client could lose
	// the answer. Half-close, then drain what the client still sends
	// until it closes or the deadline passes.
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	io.Copy(io.Discard, io.LimitReader(c, 1<<20))
	return int64(len(body)), true
}
