package gateway

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// stallPair is a connection accepted through LimitWriteStalls and its
// peer.
func stallPair(t *testing.T, idle time.Duration) (server, peer net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	sl := LimitWriteStalls(l, idle)
	peer, err = net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = sl.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close(); peer.Close() })
	return server, peer
}

// TestWriteStallsCopies: through the wrapper, Write and ReadFrom (from a
// file, from an io.LimitedReader over one, as Get Blob's sendfile path
// hands it, and from any reader) send exactly their bytes, several chunks'
// worth, and leave a LimitedReader's N as a direct read would.
func TestWriteStallsCopies(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 5*writeStallChunk/16+7)
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		want []byte
		send func(c net.Conn) (int64, error)
		left *io.LimitedReader
	}{
		{"write", data, func(c net.Conn) (int64, error) { n, err := c.Write(data); return int64(n), err }, nil},
		{"readfrom reader", data, func(c net.Conn) (int64, error) { return c.(io.ReaderFrom).ReadFrom(bytes.NewReader(data)) }, nil},
		{"readfrom file", data, func(c net.Conn) (int64, error) {
			f, err := os.Open(path)
			if err != nil {
				return 0, err
			}
			defer f.Close()
			return c.(io.ReaderFrom).ReadFrom(f)
		}, nil},
		{"readfrom limited file", data[:3*writeStallChunk+5], func(c net.Conn) (int64, error) {
			f, err := os.Open(path)
			if err != nil {
				return 0, err
			}
			defer f.Close()
			lr := &io.LimitedReader{R: f, N: 3*writeStallChunk + 5}
			n, err := c.(io.ReaderFrom).ReadFrom(lr)
			if err == nil && lr.N != 0 {
				err = errors.New("LimitedReader's N not used up")
			}
			return n, err
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server, peer := stallPair(t, 5*time.Second)
			got := make(chan []byte, 1)
			go func() {
				b, _ := io.ReadAll(peer)
				got <- b
			}()
			n, err := tc.send(server)
			if err != nil || n != int64(len(tc.want)) {
				t.Fatalf("sent %d, %v; want %d", n, err, len(tc.want))
			}
			server.Close()
			if b := <-got; !bytes.Equal(b, tc.want) {
				t.Fatalf("peer got %d bytes, not the %d sent", len(b), len(tc.want))
			}
		})
	}
}

// TestWriteStallsCut: a write to a peer that reads nothing fails once it
// waited the idle time, Write and ReadFrom alike; a peer that reads
// slowly but steadily is not cut.
func TestWriteStallsCut(t *testing.T) {
	const idle = 300 * time.Millisecond
	big := make([]byte, 64<<20)
	for _, name := range []string{"write", "readfrom"} {
		t.Run(name, func(t *testing.T) {
			server, _ := stallPair(t, idle)
			start := time.Now()
			var err error
			if name == "write" {
				_, err = server.Write(big)
			} else {
				_, err = server.(io.ReaderFrom).ReadFrom(bytes.NewReader(big))
			}
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("write to a peer reading nothing: %v, want a deadline error", err)
			}
			if d := time.Since(start); d > 20*idle {
				t.Fatalf("cut after %s, idle %s", d, idle)
			}
		})
	}
	t.Run("slow reader", func(t *testing.T) {
		const idle = time.Second
		server, peer := stallPair(t, idle)
		done := make(chan error, 1)
		go func() {
			buf := make([]byte, 64<<10)
			for {
				time.Sleep(10 * time.Millisecond)
				if _, err := peer.Read(buf); err != nil {
					done <- nil
					return
				}
			}
		}()
		// More than the socket buffers hold, taken at most 64 KiB every
		// 10 ms: a third of the largest send buffer well within idle.
		if _, err := server.Write(make([]byte, 8<<20)); err != nil {
			t.Fatalf("a steady reader was cut: %v", err)
		}
		server.Close()
		<-done
	})
}
