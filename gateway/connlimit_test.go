package gateway

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// LimitConnections: with its one slot held, Get and Head on a new
// connection are answered 503 ServerBusy (the service's error body for
// Get, none for Head) and the connection closed; once the slot is free a
// request reaches the handler again.
func TestLimitConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "served") })}
	go hs.Serve(LimitConnections(ln, 1))
	t.Cleanup(func() { hs.Close() })
	addr := "http://" + ln.Addr().String() + "/"
	held, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Minute}
	tests := []struct {
		method   string
		wantBody bool
	}{{http.MethodGet, true}, {http.MethodHead, false}, {http.MethodPut, true}}
	for _, tt := range tests {
		var resp *http.Response
		var body []byte
		// The held connection takes the slot once the server accepted it.
		for i := 0; i < 100; i++ {
			req, _ := http.NewRequest(tt.method, addr, strings.NewReader(strings.Repeat("x", 1000)))
			if resp, err = client.Do(req); err != nil {
				t.Fatal(err)
			}
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("x-ms-error-code") != "ServerBusy" ||
			resp.Header.Get("x-ms-request-id") == "" || !resp.Close {
			t.Fatalf("%s over the limit: %d %v", tt.method, resp.StatusCode, resp.Header)
		}
		if got := strings.Contains(string(body), "<Code>ServerBusy</Code>"); got != tt.wantBody {
			t.Fatalf("%s over the limit: body %q", tt.method, body)
		}
	}
	held.Close()
	for i := 0; ; i++ {
		resp, err := client.Get(addr)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK && string(b) == "served" {
			break
		}
		if i > 100 {
			t.Fatalf("after the held connection closed: %d %q", resp.StatusCode, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestLimitTLSConnections: over the cap, a connection that will speak TLS
// is closed at once, unanswered (a plain-HTTP 503 is no TLS record), and
// a connection under the cap is served.
func TestLimitTLSConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	limited := LimitTLSConnections(ln, 1)
	t.Cleanup(func() { limited.Close() })
	accepted := acceptAll(limited)
	held, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	first := <-accepted // the held connection has the slot
	over, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer over.Close()
	io.WriteString(over, "\x16\x03\x01\x00\x05hello") // the start of a ClientHello
	over.SetReadDeadline(time.Now().Add(time.Minute))
	if n, err := over.Read(make([]byte, 64)); n != 0 || err == nil {
		t.Fatalf("over the cap: read %d bytes, %v; want the connection closed unanswered", n, err)
	}
	first.Close() // frees the slot
	again, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	select {
	case c := <-accepted:
		c.Close()
	case <-time.After(time.Minute):
		t.Fatal("a connection under the cap was not accepted after the slot was freed")
	}
}

// acceptAll accepts l's connections until it is closed, handing each over
// on the channel it returns.
func acceptAll(l net.Listener) <-chan net.Conn {
	accepted := make(chan net.Conn, 1)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	return accepted
}
