package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"maps"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/blobgw/blobgw/gateway"
)

// headerBlock is a Put Blob header as a client sends it; date tells
// requests apart as x-ms-date does on the wire.
func headerBlock(uri, date string, lines ...string) string {
	return "PUT " + uri + " HTTP/1.1\r\nHost: gw\r\nx-ms-date: " + date + "\r\n" +
		strings.Join(lines, "\r\n") + "\r\nContent-Length: 0\r\n\r\n"
}

// TestFindMetaNames: the header-block finder of ServeHTTP against records
// as a connection holds them. The request is parsed from the real header by
// net/http, as the server parses it. A name the finder returns is only a
// spelling: names and values come from r.Header, so a miss lowercases a
// name and a wrong block can at worst respell one.
func TestFindMetaNames(t *testing.T) {
	const uri = "/devstoreaccount1/c/b?comp=metadata"
	base := headerBlock(uri, "D1", "x-ms-meta-MyKey: v", "x-ms-meta-lower: w", "X-MS-META-UPPER_1: x")
	baseNames := map[string]string{"x-ms-meta-mykey": "x-ms-meta-MyKey", "x-ms-meta-lower": "x-ms-meta-lower",
		"x-ms-meta-upper_1": "X-MS-META-UPPER_1"}
	// Same request line and metadata values, other spellings.
	sameButOtherCase := headerBlock(uri, "D1", "x-ms-meta-MYKEY: v", "x-ms-meta-LOWER: w", "x-ms-meta-upper_1: x")
	otherDate := headerBlock(uri, "D2", "x-ms-meta-MYKEY: v", "x-ms-meta-LOWER: w", "x-ms-meta-upper_1: x")
	tests := []struct {
		name   string
		header string // what the server parsed
		rec    string // what the connection recorded
		want   map[string]string
	}{
		{"alone", base, base, baseNames},
		{"after a binary body tail", base, "\x00\xffbody tail, no newline" + base, baseNames},
		{"after a body tail holding an older request's block", base, otherDate + "tail" + base, baseNames},
		{"body read ahead holds a look-alike block", base, base + otherDate, baseNames},
		{"look-alike with the same x-ms headers before: the later block wins", base, sameButOtherCase + base, baseNames},
		// The only way to be respelled: a block with r's request line and
		// exactly r's x-ms-* headers (date and metadata values) after it.
		{"look-alike with the same x-ms headers after: respelled, same names", base, base + sameButOtherCase,
			map[string]string{"x-ms-meta-mykey": "x-ms-meta-MYKEY", "x-ms-meta-lower": "x-ms-meta-LOWER", "x-ms-meta-upper_1": "x-ms-meta-upper_1"}},
		{"pipelined: the first of two", base, base + otherDate, baseNames},
		{"pipelined: the second of two", otherDate, base + otherDate,
			map[string]string{"x-ms-meta-mykey": "x-ms-meta-MYKEY", "x-ms-meta-lower": "x-ms-meta-LOWER", "x-ms-meta-upper_1": "x-ms-meta-upper_1"}},
		{"fake request lines that are no block", base, "PUT " + uri + " HTTP/1.1\r\n" + "PUT " + uri + " HTTP/1.1\n\n" + base +
			"PUT " + uri + " HTTP/1.1\r\nnot a header\r\n\r\n", baseNames},
		{"more look-alikes read ahead than are tried", base, base + strings.Repeat("PUT "+uri+" HTTP/1.1\r\n", 40), nil},
		{"cut before the blank line", base, base[:len(base)-2], nil},
		{"request line cut off", base, base[3:], nil},
		{"other request URI", base, strings.Replace(base, "comp=metadata", "comp=metadatX", 1), nil},
		{"other protocol version", base, strings.Replace(base, "HTTP/1.1", "HTTP/1.0", 1), nil},
		{"empty record", base, "", nil},
		{"odd case", headerBlock(uri, "D1", "x-Ms-MeTa-mYkEy: 1", "X-MS-META-a: 2"), headerBlock(uri, "D1", "x-Ms-MeTa-mYkEy: 1", "X-MS-META-a: 2"),
			map[string]string{"x-ms-meta-mykey": "x-Ms-MeTa-mYkEy", "x-ms-meta-a": "X-MS-META-a"}},
		{"LF line endings", strings.ReplaceAll(base, "\r\n", "\n"), "tail\n" + strings.ReplaceAll(base, "\r\n", "\n"), baseNames},
		{"whitespace around values", headerBlock(uri, "D1", "x-ms-meta-Pad:  \t v \t"), headerBlock(uri, "D1", "x-ms-meta-Pad:  \t v \t"),
			map[string]string{"x-ms-meta-pad": "x-ms-meta-Pad"}},
		{"folded value", headerBlock(uri, "D1", "x-ms-meta-Fold: part1", "   part2"), headerBlock(uri, "D1", "x-ms-meta-Fold: part1", "   part2"),
			map[string]string{"x-ms-meta-fold": "x-ms-meta-Fold"}},
		// Go folds the indented line into x-ms-client-request-id: it names
		// no header.
		{"folded line that looks like a header", headerBlock(uri, "D1", "x-ms-client-request-id: a", " x-ms-meta-Evil: b", "x-ms-meta-Real: c"),
			headerBlock(uri, "D1", "x-ms-client-request-id: a", " x-ms-meta-Evil: b", "x-ms-meta-Real: c"),
			map[string]string{"x-ms-meta-real": "x-ms-meta-Real"}},
		{"one name in two spellings: the first", headerBlock(uri, "D1", "x-ms-meta-a: 1", "x-ms-meta-A: 2"),
			headerBlock(uri, "D1", "x-ms-meta-a: 1", "x-ms-meta-A: 2"), map[string]string{"x-ms-meta-a": "x-ms-meta-a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(tt.header)))
			if err != nil {
				t.Fatal(err)
			}
			got := gateway.FindMetaNames([]byte(tt.rec), r)
			if !maps.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for lk, raw := range got {
				if !strings.EqualFold(lk, raw) || r.Header[http.CanonicalHeaderKey(raw)] == nil {
					t.Fatalf("%q → %q is not a header Go parsed", lk, raw)
				}
			}
		})
	}
}

// TestHeaderRecordBound: a connection accepted through PreserveHeaderCase
// keeps the last HeaderRecordMax bytes it read, never more, and still
// offers the socket's sendfile and half-close to the HTTP server.
func TestHeaderRecordBound(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := gateway.PreserveHeaderCase(inner)
	defer ln.Close()
	data := randBytes(3*gateway.HeaderRecordMax+123, 7)
	go func() {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = c.Write(data)
	}()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got bytes.Buffer
	if _, err := io.Copy(&got, struct{ io.Reader }{c}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), data) {
		t.Fatal("the wrapper changed the bytes read")
	}
	rec, peak, copied, ok := gateway.HeaderRecordStats(c)
	if !ok {
		t.Fatal("accepted conn is not a recording conn")
	}
	if !bytes.Equal(rec, data[len(data)-gateway.HeaderRecordMax:]) || peak != gateway.HeaderRecordMax || copied != int64(len(data)) {
		t.Fatalf("record %d bytes (the last ones: %v), peak %d, copied %d", len(rec),
			bytes.Equal(rec, data[len(data)-len(rec):]), peak, copied)
	}
	if _, ok := c.(io.ReaderFrom); !ok {
		t.Error("recording conn hides io.ReaderFrom (sendfile)")
	}
	if _, ok := c.(interface{ CloseWrite() error }); !ok {
		t.Error("recording conn hides CloseWrite")
	}
	ctx := context.Background()
	if gateway.ConnContext(ctx, c) == ctx {
		t.Error("ConnContext ignored a recording conn")
	}
	plain, err := net.Dial("tcp", inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if gateway.ConnContext(ctx, plain) != ctx {
		t.Error("ConnContext changed the context of a plain conn")
	}
}
