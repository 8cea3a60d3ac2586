package gateway_test

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"

	"github.com/blobgw/blobgw/internal/config"
)

// TestShortXMLBody: a request whose XML body ends before its
// Content-Length (the client half-closes after part of it) is 400
// InvalidInput on Put Block List, Set Container ACL, Set Blob Tags and Set
// Blob Service Properties, as a short Put Blob or Put Block body is, not
// 500 InternalError: the body's failure is the client's. Nothing changes.
func TestShortXMLBody(t *testing.T) {
	b := setup(t, "sqlite+disk")
	b.fillEdge(t)
	before := b.accountState(t)
	p := "/" + config.DevAccountName + "/"
	for _, c := range []struct{ name, path, doc string }{
		{"Put Block List", p + "edge/keep?comp=blocklist", "<BlockList><Latest>" + blockID(0) + "</Latest></BlockList>"},
		{"Set Container ACL", p + "edge?restype=container&comp=acl", "<SignedIdentifiers></SignedIdentifiers>"},
		{"Set Blob Tags", p + "edge/keep?comp=tags", "<Tags><TagSet></TagSet></Tags>"},
		{"Set Blob Service Properties", p + "?restype=service&comp=properties", "<StorageServiceProperties></StorageServiceProperties>"},
	} {
		conn, err := net.Dial("tcp", b.servers[0].Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequest("PUT", "http://"+conn.RemoteAddr().String()+c.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = int64(len(c.doc)) + 100
		b.sign(t, req)
		var head bytes.Buffer
		req.Header.Write(&head)
		if _, err := conn.Write([]byte("PUT " + c.path + " HTTP/1.1\r\nHost: " + req.Host + "\r\nContent-Length: " +
			strconv.FormatInt(req.ContentLength, 10) + "\r\n" + head.String() + "\r\n" + c.doc)); err != nil {
			t.Fatal(err)
		}
		conn.(*net.TCPConn).CloseWrite()
		resp, err := http.ReadResponse(bufio.NewReader(conn), req)
		if err != nil {
			t.Fatalf("%s: reading the answer: %v", c.name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		conn.Close()
		if resp.StatusCode != 400 || resp.Header.Get("x-ms-error-code") != "InvalidInput" {
			t.Errorf("%s with a short body: %d %s\n%s", c.name, resp.StatusCode, resp.Header.Get("x-ms-error-code"), body)
		}
	}
	if after := b.accountState(t); after != before {
		t.Fatalf("a short body changed something:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}
