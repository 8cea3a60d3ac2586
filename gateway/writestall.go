package gateway

import (
	"io"
	"net"
	"time"
)

// writeStallChunk is how much of a response one write deadline covers,
// so that a long response that keeps moving is never cut for its length.
const writeStallChunk = 256 << 10

// LimitWriteStalls bounds how long a write to one of l's connections may
// wait for the client: each write (a response's headers and body, by Write
// or by sendfile, in chunks of writeStallChunk) that finds no room in the
// socket for idle fails, and the server closes the connection. Without it
// a client that asks for a large blob (Get Blob) and reads nothing holds
// its connection, its handler and an open backend reader for ever:
// net/http bounds the wait for a request, never for the client to read
// the response, and max_connections such clients lock everyone else out.
// (The kernel wakes a writer once a third of the send buffer is free, so
// a client must take about that much, at most a few MiB, per idle.)
// idle <= 0 leaves l as it is. Wrap it over LimitConnections, whose busy
// answers keep their own deadline.
func LimitWriteStalls(l net.Listener, idle time.Duration) net.Listener {
	if idle <= 0 {
		return l
	}
	return &stallListener{Listener: l, idle: idle}
}

type stallListener struct {
	net.Listener
	idle time.Duration
}

func (l *stallListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &stallConn{Conn: c, idle: l.idle}, nil
}

// stallConn moves the write deadline idle ahead before each chunk.
type stallConn struct {
	net.Conn
	idle time.Duration
	lr   io.LimitedReader // ReadFrom's chunk, kept here so it is not allocated per chunk
}

func (c *stallConn) Write(p []byte) (int, error) {
	var n int
	for len(p) > 0 {
		chunk := p[:min(len(p), writeStallChunk)]
		if err := c.Conn.SetWriteDeadline(time.Now().Add(c.idle)); err != nil {
			return n, err
		}
		k, err := c.Conn.Write(chunk)
		n += k
		if err != nil {
			return n, err
		}
		p = p[k:]
	}
	return n, nil
}

// ReadFrom keeps the socket's sendfile path (Get Blob from the disk
// backend) with a deadline per chunk: a *os.File, or an io.LimitedReader
// over one, is handed on as an io.LimitedReader over the file, which
// sendfile takes.
func (c *stallConn) ReadFrom(r io.Reader) (int64, error) {
	rf, ok := c.Conn.(io.ReaderFrom)
	if !ok {
		return io.Copy(writerOnly{c}, r)
	}
	src, left := r, int64(-1)
	outer, limited := r.(*io.LimitedReader)
	if limited {
		src, left = outer.R, outer.N
	}
	var total int64
	for left != 0 {
		n := int64(writeStallChunk)
		if left > 0 && left < n {
			n = left
		}
		c.lr = io.LimitedReader{R: src, N: n}
		if err := c.Conn.SetWriteDeadline(time.Now().Add(c.idle)); err != nil {
			return total, err
		}
		k, err := rf.ReadFrom(&c.lr)
		c.lr.R = nil
		total += k
		if limited {
			left -= k
			outer.N = left
		}
		if err != nil {
			return total, err
		}
		if k < n {
			break // src is at its end
		}
	}
	return total, nil
}

// CloseWrite keeps the server's lingering close working through the
// wrapper.
func (c *stallConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// writerOnly hides a ReadFrom, so that io.Copy uses Write.
type writerOnly struct{ io.Writer }
