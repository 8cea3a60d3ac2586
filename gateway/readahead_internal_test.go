package gateway

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// chunkConn is a socket that hands out data in the chunks given (one per
// Read at most, cut to the caller's buffer), then err, counting Reads.
type chunkConn struct {
	net.Conn
	chunks [][]byte
	err    error
	reads  int
}

func (c *chunkConn) Read(p []byte) (int, error) {
	c.reads++
	if len(c.chunks) == 0 {
		return 0, c.err
	}
	n := copy(p, c.chunks[0])
	if c.chunks[0] = c.chunks[0][n:]; len(c.chunks[0]) == 0 {
		c.chunks = c.chunks[1:]
	}
	return n, nil
}

// TestReadAheadStream: whatever the callers' buffer sizes, the bytes come
// out of a recording connection in order and whole, the socket's error
// after the last of them, and a caller's large buffer is filled from the
// socket directly.
func TestReadAheadStream(t *testing.T) {
	data := randBytesInternal(3*readAheadSize+77, 3)
	sizes := []int{1, 7, 4096, 100, readAheadSize, 3 * readAheadSize, 5}
	for _, chunk := range []int{1, 500, 4491, readAheadSize, 2*readAheadSize + 9} {
		var chunks [][]byte
		for rest := data; len(rest) > 0; {
			n := min(chunk, len(rest))
			chunks = append(chunks, rest[:n])
			rest = rest[n:]
		}
		sock := &chunkConn{chunks: chunks, err: io.ErrUnexpectedEOF}
		c := &recordingConn{Conn: sock, on: true}
		var got []byte
		var err error
		for i := 0; err == nil; i++ {
			p := make([]byte, sizes[i%len(sizes)])
			var n int
			n, err = c.Read(p)
			got = append(got, p[:n]...)
		}
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("chunks of %d: error %v, want the socket's", chunk, err)
		}
		if !bytes.Equal(got, data) {
			t.Errorf("chunks of %d: %d bytes read, not the %d sent in order", chunk, len(got), len(data))
		}
		if c.ahead != nil {
			t.Errorf("chunks of %d: a read-ahead buffer held after the last byte", chunk)
		}
	}
	// A read as large as the read-ahead goes to the socket itself: one
	// Read, no copy kept.
	sock := &chunkConn{chunks: [][]byte{data}}
	c := &recordingConn{Conn: sock}
	if n, _ := c.Read(make([]byte, 2*readAheadSize)); n != 2*readAheadSize || c.ahead != nil {
		t.Errorf("large read: %d bytes, read-ahead held %v", n, c.ahead != nil)
	}
}

func randBytesInternal(n int, seed byte) []byte {
	b := make([]byte, n)
	x := uint32(seed) + 1
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = byte(x >> 24)
	}
	return b
}

// wrapListener hands each accepted connection through wrap.
type wrapListener struct {
	net.Listener
	wrap func(net.Conn) (net.Conn, error)
}

func (l wrapListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return l.wrap(c)
}

// countingListener counts the Reads of its connections that returned
// bytes.
func countingListener(l net.Listener, reads *atomic.Int64) net.Listener {
	return wrapListener{l, func(c net.Conn) (net.Conn, error) { return countingConn{c, reads}, nil }}
}

type countingConn struct {
	net.Conn
	reads *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.reads.Add(1)
	}
	return n, err
}

// TestSmallPutOneSocketRead: a 4 KiB Put Blob sent in one write reaches
// its handler's end of body after one read of the connection (Go's server
// alone reads its 4 KiB buffer twice for the header and the body), and
// the body and the next request on the connection arrive whole. The
// connection under the recording one is not a bare socket here, so it
// is read through its Read.
func TestSmallPutOneSocketRead(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var reads atomic.Int64
	oneReadPerPut(t, PreserveHeaderCase(countingListener(inner, &reads)), &reads, 2)
}

// oneReadPerPut sends n small Put Blobs on one connection to ln, a
// listener serving recording connections whose reads of the connection
// below are counted in reads, and checks that each body arrived whole
// after one such read. (The server's background read between requests
// finds nothing.) It stops the server, closing ln, before it returns.
func oneReadPerPut(t *testing.T, ln net.Listener, reads *atomic.Int64, n int) {
	t.Helper()
	srv, body, readsAtEOF, bodiesOK := smallPutServer(ln, reads)
	defer srv.Close()
	smallPuts(t, ln.Addr().String(), body, n)
	got, ok := readsAtEOF(), bodiesOK()
	for i := range ok {
		if !ok[i] {
			t.Errorf("request %d: the handler read another body", i)
		}
		if i > 0 && got[i]-got[i-1] != 1 || i == 0 && got[0] != 1 {
			t.Errorf("reads up to the end of each body: %v, want 1 each", got)
			break
		}
	}
}

// smallPutServer serves ln with a handler that reads each request's body
// and notes the reads counted so far; readsAtEOF and bodiesOK report
// them per request.
func smallPutServer(ln net.Listener, reads *atomic.Int64) (srv *http.Server, body []byte, readsAtEOF func() []int64, bodiesOK func() []bool) {
	body = randBytesInternal(4096, 9)
	var mu sync.Mutex
	var atEOF []int64
	var ok []bool
	srv = &http.Server{ConnContext: ConnContext, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, err := io.ReadAll(r.Body)
		mu.Lock()
		atEOF = append(atEOF, reads.Load())
		ok = append(ok, err == nil && bytes.Equal(got, body))
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	})}
	go srv.Serve(ln)
	return srv, body,
		func() []int64 { mu.Lock(); defer mu.Unlock(); return slices.Clone(atEOF) },
		func() []bool { mu.Lock(); defer mu.Unlock(); return slices.Clone(ok) }
}

// smallPuts sends n Put Blobs of body on one connection to addr, each
// request in one write, and waits for each answer.
func smallPuts(t *testing.T, addr string, body []byte, n int) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := []byte("PUT /devstoreaccount1/cnt/b1 HTTP/1.1\r\nHost: gw\r\nx-ms-version: 2025-11-05\r\n" +
		"x-ms-blob-type: BlockBlob\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n")
	req = append(req, body...)
	rd := newLineReader(c)
	for i := range n {
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
		if line := rd.statusLine(t); !strings.Contains(line, "201") {
			t.Fatalf("request %d: %q", i, line)
		}
	}
}

// lineReader reads HTTP responses' heads off a client connection.
type lineReader struct {
	c   net.Conn
	buf []byte
}

func newLineReader(c net.Conn) *lineReader { return &lineReader{c: c} }

// statusLine returns the next response's status line, its head consumed
// (the responses here have no body).
func (r *lineReader) statusLine(t *testing.T) string {
	t.Helper()
	for {
		if i := bytes.Index(r.buf, []byte("\r\n\r\n")); i >= 0 {
			head := string(r.buf[:i])
			r.buf = r.buf[i+4:]
			line, _, _ := strings.Cut(head, "\r\n")
			return line
		}
		p := make([]byte, 4096)
		n, err := r.c.Read(p)
		if err != nil {
			t.Fatal(err)
		}
		r.buf = append(r.buf, p[:n]...)
	}
}

// rawCountingListener accepts recording connections whose socket reads
// (the read-ahead's RawConn.Read calls that found data) are counted.
func rawCountingListener(l net.Listener, reads *atomic.Int64) net.Listener {
	return wrapListener{l, func(c net.Conn) (net.Conn, error) {
		rc := newRecordingConn(c)
		if rc.raw == nil {
			c.Close()
			return nil, errors.New("a TCP connection without its socket")
		}
		rc.raw = countingRaw{rc.raw, reads}
		return rc, nil
	}}
}

type countingRaw struct {
	syscall.RawConn
	reads *atomic.Int64
}

func (r countingRaw) Read(f func(uintptr) bool) error {
	return r.RawConn.Read(func(fd uintptr) bool {
		done := f(fd)
		if done {
			r.reads.Add(1)
		}
		return done
	})
}

// TestReadAheadSocket: over a TCP socket (the path blobgw serve takes)
// a small Put Blob is one read of the socket too, a read waiting for data
// holds no read-ahead buffer, and the read deadline and Close end a
// waiting Read as they end a socket's.
func TestReadAheadSocket(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var reads atomic.Int64
	oneReadPerPut(t, rawCountingListener(inner, &reads), &reads, 3)

	// A Read waiting for data: ended by the deadline (a timeout, as
	// idleBody expects), then by Close; no buffer held meanwhile.
	inner, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	a, err := net.Dial("tcp", inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := inner.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if socketOf(&limitedConn{Conn: b}) == nil {
		t.Error("a TCP connection under the connection limit is read through its Read, not its socket")
	}
	c := newRecordingConn(b)
	_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := c.Read(make([]byte, 100)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read past its deadline: %v, want os.ErrDeadlineExceeded", err)
	}
	if c.ahead != nil || c.rawBuf != nil {
		t.Error("a read that found nothing kept a buffer")
	}
	_ = c.SetReadDeadline(time.Time{})
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 100))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	c.Close()
	if err := <-done; !errors.Is(err, net.ErrClosed) {
		t.Errorf("read across Close: %v, want net.ErrClosed", err)
	}
	// The peer's close is io.EOF once the bytes before it are read.
	a2, _ := net.Dial("tcp", inner.Addr().String())
	b2, _ := inner.Accept()
	c2 := newRecordingConn(b2)
	defer c2.Close()
	a2.Write([]byte("hello"))
	a2.Close()
	var all []byte
	p := make([]byte, 2)
	for {
		n, err := c2.Read(p)
		all = append(all, p[:n]...)
		if err != nil {
			if err != io.EOF || string(all) != "hello" {
				t.Errorf("read %q then %v, want hello then io.EOF", all, err)
			}
			break
		}
	}
}
