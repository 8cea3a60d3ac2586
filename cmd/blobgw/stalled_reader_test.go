package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/blobgw/blobgw/internal/config"
)

// TestStalledReaderCut: a client that asks for a large blob and then
// reads nothing holds its connection, a goroutine and an open backend
// reader only until its response waited body_idle_timeout: then the
// server cuts it. Otherwise max_connections such clients lock every other
// client out (503 ServerBusy) for as long as they like.
func TestStalledReaderCut(t *testing.T) {
	const limit = 4
	const idle = 2 * time.Second
	// idle_timeout 1s: the client's keep-alive connection goes before the
	// stalled readers take every slot.
	_, addr, client := startAbuseServe(t, "--max-connections", strconv.Itoa(limit), "--body-idle-timeout", idle.String(), "--idle-timeout", "1s")
	ctx := context.Background()
	if _, err := client.CreateContainer(ctx, "stall", nil); err != nil {
		t.Fatal(err)
	}
	// Far more than the socket buffers on both sides hold.
	if _, err := client.UploadBuffer(ctx, "stall", "big", bytes.Repeat([]byte("0123456789abcdef"), 4<<20), nil); err != nil {
		t.Fatal(err)
	}
	sasURL, err := url.Parse(devAccountSAS(t, "http://"+addr+"/"+config.DevAccountName+"/stall/big"))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	var stalled []*net.TCPConn
	for i := 0; i < limit; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		tc := c.(*net.TCPConn)
		tc.SetReadBuffer(4 << 10)
		defer tc.Close()
		if _, err := fmt.Fprintf(tc, "GET %s HTTP/1.1\r\nHost: %s\r\nx-ms-version: 2025-11-05\r\n\r\n", sasURL.RequestURI(), addr); err != nil {
			t.Fatal(err)
		}
		stalled = append(stalled, tc)
	}
	// Every slot is held; the server's writes block once the buffers are
	// full. After the idle time (and the cut) the slots are free again.
	time.Sleep(3 * idle)
	// Every slot is free again: limit new connections at once are all
	// served (one still held by a stalled reader would answer 503).
	for i := 0; i < limit; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := fmt.Fprintf(c, "HEAD %s HTTP/1.1\r\nHost: %s\r\nx-ms-version: 2025-11-05\r\n\r\n", sasURL.RequestURI(), addr); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodHead})
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("Get Blob Properties on new connection %d after %d stalled readers had %s to read: %d %s, want 200",
				i, len(stalled), 3*idle, resp.StatusCode, resp.Header.Get("x-ms-error-code"))
		}
	}
}
