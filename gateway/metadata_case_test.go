package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
	"github.com/blobgw/blobgw/gateway"
	"github.com/blobgw/blobgw/internal/config"
)

// Azure keeps the case of metadata names ("Setting and retrieving
// properties and metadata for Blob service resources"). The Go SDK sends
// them as given (generated code sets req.Raw().Header["x-ms-meta-"+k]) but
// cannot show what comes back: Go's client canonicalizes response header
// names, and the SDK lowercases the element names of <Metadata> in listings
// (internal/generated/zz_xml_helper.go). So these tests write with the SDK
// or raw and read the wire.

// wire is one keep-alive HTTP/1.1 connection to a gateway, read raw.
type wire struct {
	t    *testing.T
	b    *bundle
	addr string
	conn net.Conn
	br   *bufio.Reader
	raw  bytes.Buffer // the bytes of the last response
}

func dialWire(t *testing.T, b *bundle, addr string) *wire {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	w := &wire{t: t, b: b, addr: addr, conn: c}
	w.br = bufio.NewReader(io.TeeReader(c, &w.raw))
	return w
}

// do sends one request signed with the dev key; header names go on the
// wire as spelled in hdr. It returns the status, the raw response header
// block and the (de-chunked) body.
func (w *wire) do(method, path string, hdr [][2]string, body []byte) (int, string, []byte) {
	w.t.Helper()
	req, err := http.NewRequest(method, "http://"+w.addr+path, bytes.NewReader(body))
	if err != nil {
		w.t.Fatal(err)
	}
	for _, kv := range hdr {
		req.Header[kv[0]] = append(req.Header[kv[0]], kv[1])
	}
	w.b.sign(w.t, req)
	w.raw.Reset()
	if err := req.Write(w.conn); err != nil {
		w.t.Fatalf("%s %s: %v", method, path, err)
	}
	resp, err := http.ReadResponse(w.br, req)
	if err != nil {
		w.t.Fatalf("%s %s: %v", method, path, err)
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		w.t.Fatal(err)
	}
	head, _, _ := strings.Cut(w.raw.String(), "\r\n\r\n")
	return resp.StatusCode, head, data
}

// metaOf sends method to path and returns the x-ms-meta-* response headers
// as they are on the wire (name without the prefix → value).
func (w *wire) metaOf(method, path string) map[string]string {
	w.t.Helper()
	status, head, _ := w.do(method, path, nil, nil)
	if status != http.StatusOK {
		w.t.Fatalf("%s %s: %d", method, path, status)
	}
	out := map[string]string{}
	for _, ln := range strings.Split(head, "\r\n") {
		k, v, _ := strings.Cut(ln, ": ")
		if len(k) > len("x-ms-meta-") && strings.EqualFold(k[:len("x-ms-meta-")], "x-ms-meta-") {
			if !strings.HasPrefix(k, "x-ms-meta-") {
				w.t.Errorf("%s %s: prefix spelled %q", method, path, k)
			}
			out[k[len("x-ms-meta-"):]] = v
		}
	}
	return out
}

// put is a Put Blob of body with the given extra headers; it wants 201.
func (w *wire) put(path string, body []byte, hdr ...[2]string) {
	w.t.Helper()
	if status, _, resp := w.do("PUT", path, append([][2]string{{"x-ms-blob-type", "BlockBlob"}}, hdr...), body); status != http.StatusCreated {
		w.t.Fatalf("PUT %s: %d %s", path, status, resp)
	}
}

// xmlMeta is a <Metadata> element with its children's names as sent.
type xmlMeta struct {
	Items []struct {
		XMLName xml.Name
		Value   string `xml:",chardata"`
	} `xml:",any"`
}

func (m xmlMeta) Map() map[string]string {
	out := map[string]string{}
	for _, it := range m.Items {
		out[it.XMLName.Local] = it.Value
	}
	return out
}

// listedBlobMeta lists cont raw (include=metadata,snapshots) and returns
// each entry's metadata by name ("name@snapshot" for snapshots).
func (w *wire) listedBlobMeta(cont string) map[string]map[string]string {
	w.t.Helper()
	status, _, body := w.do("GET", "/"+config.DevAccountName+"/"+cont+"?restype=container&comp=list&include=metadata,snapshots", nil, nil)
	if status != http.StatusOK {
		w.t.Fatalf("List Blobs: %d %s", status, body)
	}
	var res struct {
		Blobs []struct {
			Name     string  `xml:"Name"`
			Snapshot string  `xml:"Snapshot"`
			Metadata xmlMeta `xml:"Metadata"`
		} `xml:"Blobs>Blob"`
	}
	if err := xml.Unmarshal(body, &res); err != nil {
		w.t.Fatal(err)
	}
	out := map[string]map[string]string{}
	for _, bl := range res.Blobs {
		key := bl.Name
		if bl.Snapshot != "" {
			key += "@snapshot"
		}
		out[key] = bl.Metadata.Map()
	}
	return out
}

func (w *wire) listedContainerMeta(prefix string) map[string]map[string]string {
	w.t.Helper()
	status, _, body := w.do("GET", "/"+config.DevAccountName+"?comp=list&include=metadata&prefix="+prefix, nil, nil)
	if status != http.StatusOK {
		w.t.Fatalf("List Containers: %d %s", status, body)
	}
	var res struct {
		Containers []struct {
			Name     string  `xml:"Name"`
			Metadata xmlMeta `xml:"Metadata"`
		} `xml:"Containers>Container"`
	}
	if err := xml.Unmarshal(body, &res); err != nil {
		w.t.Fatal(err)
	}
	out := map[string]map[string]string{}
	for _, c := range res.Containers {
		out[c.Name] = c.Metadata.Map()
	}
	return out
}

func ptrs(m map[string]string) map[string]*string {
	out := map[string]*string{}
	for k, v := range m {
		out[k] = to.Ptr(v)
	}
	return out
}

func lowerKeys(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[strings.ToLower(k)] = v
	}
	return out
}

// TestMetadataCase: metadata written by the SDK through every operation
// that takes x-ms-meta-* (Create Container, Set Container Metadata, Put
// Blob, Set Blob Metadata, Snapshot Blob, Put Block List, Copy Blob with
// the source's or its own metadata, Copy Blob From URL, Put Blob From URL)
// comes back with the names as sent on Get Blob / Properties / Metadata,
// Get Container Properties, List Blobs and List Containers.
func TestMetadataCase(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		c := b.client
		mixed := map[string]string{"MyKey": "v", "lower": "w", "UPPER_1": "x"}
		acct := "/" + config.DevAccountName
		if _, err := c.CreateContainer(ctx, "casec-made", &azblob.CreateContainerOptions{Metadata: ptrs(mixed)}); err != nil {
			t.Fatal(err)
		}
		createContainers(t, c, "casec-set")
		cc := c.ServiceClient().NewContainerClient("casec-set")
		if _, err := cc.SetMetadata(ctx, &container.SetMetadataOptions{Metadata: ptrs(map[string]string{"CamelCase": "1"})}); err != nil {
			t.Fatal(err)
		}
		const cont = "casec-made"
		if _, err := c.UploadBuffer(ctx, cont, "blob", []byte("data"), &azblob.UploadBufferOptions{Metadata: ptrs(mixed)}); err != nil {
			t.Fatal(err)
		}
		src := blockClient(c, cont, "blob")
		if _, err := c.UploadBuffer(ctx, cont, "set", []byte("data"), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := blockClient(c, cont, "set").SetMetadata(ctx, ptrs(map[string]string{"SetKey": "s"}), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := src.CreateSnapshot(ctx, &blob.CreateSnapshotOptions{Metadata: ptrs(map[string]string{"SnapKey": "s"})}); err != nil {
			t.Fatal(err)
		}
		blocks := blockClient(c, cont, "blocks")
		if _, err := blocks.StageBlock(ctx, blockID(0), nopSeeker("data"), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := blocks.CommitBlockList(ctx, []string{blockID(0)}, &blockblob.CommitBlockListOptions{Metadata: ptrs(map[string]string{"BlockKey": "b"})}); err != nil {
			t.Fatal(err)
		}
		if _, err := blockClient(c, cont, "copied").StartCopyFromURL(ctx, src.URL(), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := blockClient(c, cont, "copied-own").StartCopyFromURL(ctx, src.URL(), &blob.StartCopyFromURLOptions{Metadata: ptrs(map[string]string{"OwnKey": "o"})}); err != nil {
			t.Fatal(err)
		}
		if _, err := blockClient(c, cont, "synced").CopyFromURL(ctx, src.URL(), &blob.CopyFromURLOptions{Metadata: ptrs(map[string]string{"CopyKey": "c"})}); err != nil {
			t.Fatal(err)
		}
		if _, err := blockClient(c, cont, "fromurl").UploadBlobFromURL(ctx, src.URL(), &blockblob.UploadBlobFromURLOptions{Metadata: ptrs(map[string]string{"UrlKey": "u"})}); err != nil {
			t.Fatal(err)
		}
		want := map[string]map[string]string{
			"blob":          mixed,
			"blob@snapshot": {"SnapKey": "s"},
			"set":           {"SetKey": "s"},
			"blocks":        {"BlockKey": "b"},
			"copied":        mixed,
			"copied-own":    {"OwnKey": "o"},
			"synced":        {"CopyKey": "c"},
			"fromurl":       {"UrlKey": "u"},
		}

		w := dialWire(t, b, b.servers[0].Listener.Addr().String())
		got := w.listedBlobMeta(cont)
		if !maps.EqualFunc(got, want, maps.Equal) {
			t.Errorf("List Blobs metadata\n got %v\nwant %v", got, want)
		}
		for name, m := range want {
			if strings.Contains(name, "@") {
				continue
			}
			for _, q := range []string{"", "?comp=metadata"} {
				for _, method := range []string{"HEAD", "GET"} {
					if got := w.metaOf(method, acct+"/"+cont+"/"+name+q); !maps.Equal(got, m) {
						t.Errorf("%s %s%s: metadata headers %v, want %v", method, name, q, got, m)
					}
				}
			}
		}
		wantCont := map[string]map[string]string{"casec-made": mixed, "casec-set": {"CamelCase": "1"}}
		if got := w.listedContainerMeta("casec-"); !maps.EqualFunc(got, wantCont, maps.Equal) {
			t.Errorf("List Containers metadata\n got %v\nwant %v", got, wantCont)
		}
		for name, m := range wantCont {
			for _, q := range []string{"?restype=container", "?restype=container&comp=metadata"} {
				if got := w.metaOf("HEAD", acct+"/"+name+q); !maps.Equal(got, m) {
					t.Errorf("HEAD %s%s: metadata headers %v, want %v", name, q, got, m)
				}
			}
		}

		// The SDK's own view: names compare equal ignoring case (it
		// lowercases listed names and canonicalizes header names).
		pager := c.NewListBlobsFlatPager(cont, &azblob.ListBlobsFlatOptions{Include: container.ListBlobsInclude{Metadata: true}})
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range page.Segment.BlobItems {
				if m := lowerMeta(it.Metadata); !maps.Equal(m, lowerKeys(want[*it.Name])) {
					t.Errorf("SDK List Blobs %s: %v", *it.Name, m)
				}
			}
		}
		cpager := c.NewListContainersPager(&service.ListContainersOptions{Prefix: to.Ptr("casec-"), Include: service.ListContainersInclude{Metadata: true}})
		for cpager.More() {
			page, err := cpager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range page.ContainerItems {
				if m := lowerMeta(it.Metadata); !maps.Equal(m, lowerKeys(wantCont[*it.Name])) {
					t.Errorf("SDK List Containers %s: %v", *it.Name, m)
				}
			}
		}
	})
}

// TestMetadataCaseKeepAlive: requests in sequence on one HTTP/1.1
// connection each keep their own spelling, including after a body the
// handler never read (the server discards it while the connection records,
// so the next request's record starts with that body's tail, here full of
// look-alikes of the next request).
func TestMetadataCaseKeepAlive(t *testing.T) {
	b := setup(t, "sqlite+disk")
	createContainers(t, b.client, "keepalive")
	p := "/" + config.DevAccountName + "/keepalive/"
	w := dialWire(t, b, b.servers[0].Listener.Addr().String())
	w.put(p+"one", []byte("1"), [2]string{"x-ms-meta-MyKey", "1"})
	w.put(p+"two", []byte("2"), [2]string{"x-ms-meta-MYKEY", "2"}, [2]string{"x-ms-meta-other_Name", "3"})
	if got := w.metaOf("HEAD", p+"one"); !maps.Equal(got, map[string]string{"MyKey": "1"}) {
		t.Errorf("one: %v", got)
	}
	if got := w.metaOf("HEAD", p+"two"); !maps.Equal(got, map[string]string{"MYKEY": "2", "other_Name": "3"}) {
		t.Errorf("two: %v", got)
	}

	// One name in two spellings: 400 InvalidMetadata, as Azure answers a
	// repeated name (TestMetadataNameTwice), and the metadata stays.
	if status, _, body := w.do("PUT", p+"one?comp=metadata", [][2]string{{"x-ms-meta-dUP", "b"}, {"x-ms-meta-Dup", "a"}}, nil); status != http.StatusBadRequest {
		t.Fatalf("Set Blob Metadata with a repeated name: %d %s", status, body)
	}
	if got := w.metaOf("HEAD", p+"one"); !maps.Equal(got, map[string]string{"MyKey": "1"}) {
		t.Errorf("one after a repeated name: %v", got)
	}

	fake := "PUT " + p + "later HTTP/1.1\r\nx-ms-blob-type: BlockBlob\r\nx-ms-meta-LATER: l\r\n\r\n"
	unread := bytes.Repeat([]byte(fake), (200<<10)/len(fake))
	status, _, _ := w.do("PUT", "/"+config.DevAccountName+"/missing/x", [][2]string{{"x-ms-blob-type", "BlockBlob"}, {"x-ms-meta-Gone", "g"}}, unread)
	if status != http.StatusNotFound {
		t.Fatalf("Put Blob into a missing container: %d", status)
	}
	w.put(p+"later", []byte("l"), [2]string{"x-ms-meta-Later", "l"})
	if got := w.metaOf("HEAD", p+"later"); !maps.Equal(got, map[string]string{"Later": "l"}) {
		t.Errorf("later: %v", got)
	}
}

// captureListener hands the connections it accepts to the test.
type captureListener struct {
	net.Listener
	conns chan net.Conn
}

func (l captureListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		select {
		case l.conns <- c:
		default:
		}
	}
	return c, err
}

// TestMetadataCaseLargeBody: an 8 MiB Put Blob, its body full of
// look-alikes of the next request, then a second request on the same
// connection: both keep their spelling, the body is never copied into the
// record (recording is off while a body is read) and the record never
// exceeds its bound.
func TestMetadataCaseLargeBody(t *testing.T) {
	b := setup(t, "sqlite+disk")
	createContainers(t, b.client, "big")
	srv := httptest.NewUnstartedServer(b.gws[0])
	conns := make(chan net.Conn, 1)
	srv.Listener = captureListener{Listener: gateway.PreserveHeaderCase(srv.Listener), conns: conns}
	srv.Config.ConnContext = gateway.ConnContext
	srv.Start()
	t.Cleanup(srv.Close)

	p := "/" + config.DevAccountName + "/big/"
	fake := "PUT " + p + "after HTTP/1.1\r\nx-ms-blob-type: BlockBlob\r\nx-ms-meta-AFTERBIG: a\r\n\r\n"
	data := bytes.Repeat([]byte(fake), (8<<20)/len(fake)+1)[:8<<20]
	w := dialWire(t, b, srv.Listener.Addr().String())
	w.put(p+"huge", data, [2]string{"x-ms-meta-BigOne", "b"})
	w.put(p+"after", []byte("a"), [2]string{"x-ms-meta-AfterBig", "a"})
	if got := w.metaOf("HEAD", p+"huge"); !maps.Equal(got, map[string]string{"BigOne": "b"}) {
		t.Errorf("huge: %v", got)
	}
	if got := w.metaOf("HEAD", p+"after"); !maps.Equal(got, map[string]string{"AfterBig": "a"}) {
		t.Errorf("after: %v", got)
	}
	if got := download(t, b.client, "big", "huge"); !bytes.Equal(got, data) {
		t.Error("8 MiB blob differs")
	}
	rec, peak, copied, ok := gateway.HeaderRecordStats(<-conns)
	if !ok {
		t.Fatal("server conn is not a recording conn")
	}
	if len(rec) > gateway.HeaderRecordMax || peak > gateway.HeaderRecordMax {
		t.Errorf("record %d bytes, peak %d: over the bound %d", len(rec), peak, gateway.HeaderRecordMax)
	}
	// Four headers and what the server read ahead with them: a few KiB.
	if copied > 64<<10 {
		t.Errorf("%d bytes copied into the record for an 8 MiB body: the body was recorded", copied)
	}
	t.Logf("record: %d bytes now, peak %d, %d copied in all", len(rec), peak, copied)
}
