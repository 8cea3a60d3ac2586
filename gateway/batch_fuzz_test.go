package gateway

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/blobgw/blobgw/svcerr"
	"github.com/blobgw/blobgw/svcerr/svcerrtest"
)

// FuzzBatchBody: a Blob Batch body. It parses into 1 to 256 sub-requests
// of one operation, Delete Blob or Set Blob Tier, in the batch's account
// and container, or it is refused with a 4xx; never a panic or a 500.
func FuzzBatchBody(f *testing.F) {
	part := func(id, req string) string {
		return "--batch_f\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\nContent-ID: " + id + "\r\n\r\n" + req + "\r\n"
	}
	del := "DELETE /devstoreaccount1/cnt/blob HTTP/1.1\r\nx-ms-date: Thu, 14 Jun 2018 16:46:54 GMT\r\nAuthorization: SharedKey devstoreaccount1:AAAA\r\nContent-Length: 0\r\n\r\n"
	tier := "PUT /devstoreaccount1/cnt/b%20c?comp=tier HTTP/1.1\r\nx-ms-access-tier: Cool\r\n\r\n"
	for _, seed := range []string{
		part("0", del) + part("1", del) + "--batch_f--\r\n",
		part("0", tier) + "--batch_f--\r\n",
		part("0", del) + part("1", tier) + "--batch_f--\r\n",
		part("0", "GET /devstoreaccount1/cnt/blob HTTP/1.1\r\n\r\n") + "--batch_f--\r\n",
		part("0", "DELETE /other/cnt/blob HTTP/1.1\r\n\r\n") + "--batch_f--\r\n",
		part("0", "DELETE http://host/devstoreaccount1/cnt/x HTTP/1.1\r\n\r\n") + "--batch_f--\r\n",
		part("0", "DELETE /devstoreaccount1/cnt/x HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc") + "--batch_f--\r\n",
		part("", del) + "--batch_f--\r\n",
		part("0", del),
		"--batch_f--\r\n",
		"garbage",
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	s := &Server{}
	f.Fuzz(func(t *testing.T, body string, containerScope bool) {
		target := "/devstoreaccount1/?comp=batch"
		batch := &request{account: "devstoreaccount1"}
		if containerScope {
			target = "/devstoreaccount1/cnt?restype=container&comp=batch"
			batch.container = "cnt"
		}
		r := httptest.NewRequest("POST", target, strings.NewReader(body))
		subs, err := s.parseBatch(r, batch, "batch_f")
		if err != nil {
			svcerrtest.ClientError(t, "parseBatch", err)
			return
		}
		if len(subs) == 0 || len(subs) > maxBatchParts {
			t.Fatalf("%d sub-requests accepted", len(subs))
		}
		op := ""
		for _, sub := range subs {
			if sub.contentID == "" {
				t.Fatalf("a part without Content-ID accepted")
			}
			name, err := batchSubOperation(s, sub.r, batch)
			if err != nil {
				t.Fatalf("accepted sub-request refused on a second look: %v", err)
			}
			if name == "" {
				continue
			}
			if !batchOps[name] || op != "" && name != op {
				t.Fatalf("operation %q accepted after %q", name, op)
			}
			op = name
			if sub.r.ContentLength != 0 || sub.r.Host != r.Host {
				t.Fatalf("sub-request with a body or another host: %d %q", sub.r.ContentLength, sub.r.Host)
			}
		}
	})
}

// TestCapReader: a batch body up to the cap reads whole; one byte more is
// 413 RequestBodyTooLarge.
func TestCapReader(t *testing.T) {
	for _, tc := range []struct {
		n, cap int
		tooBig bool
	}{
		{0, 4, false}, {3, 4, false}, {4, 4, false}, {5, 4, true}, {100, 4, true},
	} {
		got, err := io.ReadAll(&capReader{r: strings.NewReader(strings.Repeat("x", tc.n)), left: int64(tc.cap)})
		switch {
		case tc.tooBig && !svcerr.HasCode(err, svcerr.RequestBodyTooLarge):
			t.Errorf("%d bytes, cap %d: %v, want RequestBodyTooLarge", tc.n, tc.cap, err)
		case !tc.tooBig && (err != nil || len(got) != tc.n):
			t.Errorf("%d bytes, cap %d: read %d, %v", tc.n, tc.cap, len(got), err)
		}
	}
}
