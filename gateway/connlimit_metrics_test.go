package gateway_test

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/blobgw/blobgw/gateway"
)

// TestLimitConnectionsCounted: the connection limiter's answers are in
// the Server's metrics. A connection over the cap answered 503 ServerBusy
// is a request of no operation in blobgw_requests_total{status="503"} and
// blobgw_unavailable_total; one closed unanswered (the TLS limiter) is in
// blobgw_connections_refused_total.
func TestLimitConnectionsCounted(t *testing.T) {
	b := setup(t, "sqlite+disk")
	gw := b.gws[0]
	ops := gw.OpsHandler(false)
	none := map[string]string{"operation": ""}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "served") })}
	go hs.Serve(gw.LimitConnections(ln, 1))
	t.Cleanup(func() { hs.Close() })
	held, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Minute}
	busy := 0
	for i := 0; i < 100 && busy < 2; i++ {
		resp, err := client.Get("http://" + ln.Addr().String() + "/")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			busy++
		} else {
			time.Sleep(20 * time.Millisecond) // the held connection not accepted yet
		}
	}
	if busy != 2 {
		t.Fatalf("%d busy answers, want 2", busy)
	}
	// The answer's counting runs after the client has read it.
	want := func(name string, labels map[string]string, n float64) {
		t.Helper()
		var got float64
		for i := 0; i < 200; i++ {
			if got = value(scrape(t, ops), name, labels); got == n {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("%s%v = %v, want %v", name, labels, got, n)
	}
	want("blobgw_requests_total", map[string]string{"operation": "", "status": "503"}, 2)
	want("blobgw_unavailable_total", none, 2)

	tln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	limited := gw.LimitTLSConnections(tln, 1)
	t.Cleanup(func() { limited.Close() })
	accepted := gateway.AcceptAll(limited)
	first, err := net.Dial("tcp", tln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	(<-accepted).Close()
	// The slot is given back on the accepted side's Close; wait for a
	// second connection to hold it, then a third is over the cap.
	second, err := net.Dial("tcp", tln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	hold := <-accepted
	defer hold.Close()
	over, err := net.Dial("tcp", tln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer over.Close()
	over.SetReadDeadline(time.Now().Add(time.Minute))
	if n, err := over.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("over the TLS cap: read %d bytes, %v", n, err)
	}
	want("blobgw_connections_refused_total", nil, 1)
	want("blobgw_unavailable_total", none, 2)
}
