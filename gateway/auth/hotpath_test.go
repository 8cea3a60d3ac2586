package auth

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// sdkPutRequest is a Put Blob as the azblob SDK sends it, signed.
func sdkPutRequest(tb testing.TB, key []byte) *http.Request {
	r := httptest.NewRequest(http.MethodPut, "http://127.0.0.1:10000/devstoreaccount1/cnt/b1", strings.NewReader(strings.Repeat("x", 4096)))
	r.ContentLength = 4096
	r.Header.Set("Content-Length", "4096")
	r.Header.Set("Content-Type", "application/octet-stream")
	r.Header.Set("If-Match", `"0x8DC1A2B3C4D5E6F"`)
	r.Header.Set("X-Ms-Blob-Type", "BlockBlob")
	r.Header.Set("X-Ms-Client-Request-Id", "0b4c6a0e-5d5e-4b8a-9e61-0d2c3f1f2a7b")
	r.Header.Set("X-Ms-Version", "2025-11-05")
	r.Header.Set("X-Ms-Date", time.Now().UTC().Format(http.TimeFormat))
	r.Header.Set("Authorization", "SharedKey devstoreaccount1:"+Sign(key, StringToSign(r, "devstoreaccount1")))
	return r
}

// TestCanonicalizedHeadersSame: the primary x-ms-* canonicalization
// without a lowercased copy or a map writes what the sorted one writes,
// spellings of one name merged in byte order, values trimmed.
func TestCanonicalizedHeadersSame(t *testing.T) {
	for _, h := range []http.Header{
		{},
		{"Content-Type": {"x"}},
		{"X-Ms-Date": {"d"}, "X-Ms-Version": {"v"}, "X-Ms-Blob-Type": {"BlockBlob"}},
		{"X-Ms-Meta-A": {" 1 ", "2"}, "x-ms-meta-a": {"3"}, "X-MS-META-A": {"4"}, "X-Ms-Meta-A_b": {"5"}, "X-Ms-Meta-A1": {"6"}},
		{"X-Ms-Meta-B": {}, "X-Ms-Meta-Ab": {"x"}, "X-Ms-Meta-A-B": {"y"}, "x-ms-meta-ä": {"z"}, "X-Ms-Meta-Ä": {"w"}},
		{"X-Ms-Z": {"1"}, "X-Ms-Y": {"2"}, "X-Ms-Yy": {"3"}, "X-Ms-Y-": {"4"}, "X-Ms-": {"5"}, "X-ms-z": {"6"}},
	} {
		var fast, sorted stsBuilder
		writeCanonicalizedHeaders(&fast, h, canon{})
		writeCanonicalizedHeadersSorted(&sorted, h, canon{})
		if fast.String() != sorted.String() {
			t.Errorf("%v:\n%q\nwant\n%q", h, fast.String(), sorted.String())
		}
	}
}

// TestVerifySharedKeyAllocs pins the allocations of verifying an SDK Put
// Blob: the string-to-sign is built once, without a map or lowercased
// name copies, into a pooled buffer (a string of it only on a mismatch),
// the signature decoded into an array, the HMAC's state is pooled and the
// server time is formatted only for an error (25 before, then 2).
func TestVerifySharedKeyAllocs(t *testing.T) {
	key := make([]byte, 64)
	accts := MapAccounts{"devstoreaccount1": &Account{Name: "devstoreaccount1", Keys: [][]byte{key}}}
	r := sdkPutRequest(t, key)
	now := time.Now()
	if _, err := VerifySharedKey(r, accts, "devstoreaccount1", now); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { VerifySharedKey(r, accts, "devstoreaccount1", now) }); n > 0 {
		t.Errorf("VerifySharedKey: %.0f allocations, want 0", n)
	}
}

func BenchmarkVerifySharedKey(b *testing.B) {
	key := make([]byte, 64)
	accts := MapAccounts{"devstoreaccount1": &Account{Name: "devstoreaccount1", Keys: [][]byte{key}}}
	r := sdkPutRequest(b, key)
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := VerifySharedKey(r, accts, "devstoreaccount1", now); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMacSum: the pooled HMAC-SHA256 is crypto/hmac's, for keys shorter
// than, equal to and longer than the block and strings around the staging
// buffer's size.
func TestMacSum(t *testing.T) {
	for _, kl := range []int{0, 1, 32, 64, 65, 200} {
		for _, ml := range []int{0, 1, 511, 512, 513, 1500} {
			key := []byte(strings.Repeat("k", kl))
			msg := strings.Repeat("m", ml)
			h := hmac.New(sha256.New, key)
			h.Write([]byte(msg))
			if got, want := macSum(key, msg), h.Sum(nil); !bytes.Equal(got[:], want) {
				t.Errorf("key %d, message %d bytes: %x, want %x", kl, ml, got, want)
			}
		}
	}
}
