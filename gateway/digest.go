package gateway

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"net/http"

	"github.com/blobgw/blobgw/internal/crc64az"
	"github.com/blobgw/blobgw/internal/md5lanes"
	"github.com/blobgw/blobgw/svcerr"
)

// sums are the digests of a request body: MD5 (Content-MD5) and CRC64
// (x-ms-content-crc64: Azure's CRC64, crc64az, its 64-bit value
// little-endian, base64-encoded in the header); nil when not computed or
// not sent.
type sums struct {
	md5, crc64 []byte
}

// transactionalSums reads the digests a request body must match.
func transactionalSums(h http.Header) (sums, error) {
	var want sums
	if h.Get("Content-Md5") != "" && h.Get("X-Ms-Content-Crc64") != "" {
		// One transactional digest per request: Azure refuses both
		// with its own code (Put Blob, Put Block, Append Block, Put
		// Page).
		return want, svcerr.New(svcerr.BothCrc64AndMd5HeaderPresent)
	}
	if v := h.Get("Content-Md5"); v != "" {
		b, err := decodeMD5(v)
		if err != nil {
			return want, svcerr.Header(svcerr.InvalidMd5, "Content-MD5", v)
		}
		want.md5 = b
	}
	if v := h.Get("X-Ms-Content-Crc64"); v != "" {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil || len(b) != 8 {
			return want, svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-content-crc64", v)
		}
		want.crc64 = b
	}
	return want, nil
}

// bodySums checks the transactional digests of a request body read whole
// (Put Block List, Set Blob Tags) as Put Block's are checked: Content-MD5
// or x-ms-content-crc64, one of them (transactionalSums), must match. It
// returns the body's MD5, and its CRC64 when the request sent one.
func bodySums(h http.Header, body []byte) (sums, error) {
	want, err := transactionalSums(h)
	if err != nil {
		return sums{}, err
	}
	sum := md5.Sum(body)
	got := sums{md5: sum[:]}
	if want.crc64 != nil {
		got.crc64 = binary.LittleEndian.AppendUint64(nil, crc64az.Checksum(body))
	}
	return got, want.mismatch(got)
}

// sourceSums reads the digests the source bytes of Put Block From URL,
// Append Block From URL and Put Page From URL must match:
// x-ms-source-content-md5 and x-ms-source-content-crc64. As with the
// transactional pair, one request carries one of them (400
// BothCrc64AndMd5HeaderPresent); a value that is not a digest is 400
// InvalidHeaderValue. Both are read before the source is.
func sourceSums(h http.Header) (sums, error) {
	var want sums
	md5v, crcv := h.Get("X-Ms-Source-Content-Md5"), h.Get("X-Ms-Source-Content-Crc64")
	if md5v != "" && crcv != "" {
		return want, svcerr.New(svcerr.BothCrc64AndMd5HeaderPresent)
	}
	if md5v != "" {
		b, err := decodeMD5(md5v)
		if err != nil {
			return want, svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-source-content-md5", md5v)
		}
		want.md5 = b
	}
	if crcv != "" {
		b, err := base64.StdEncoding.DecodeString(crcv)
		if err != nil || len(b) != 8 {
			return want, svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-source-content-crc64", crcv)
		}
		want.crc64 = b
	}
	return want, nil
}

// mismatch compares the digests sent with those computed.
func (want sums) mismatch(got sums) error {
	if want.md5 != nil && !bytes.Equal(want.md5, got.md5) {
		return svcerr.New(svcerr.Md5Mismatch)
	}
	if want.crc64 != nil && !bytes.Equal(want.crc64, got.crc64) {
		return svcerr.New(svcerr.Crc64Mismatch)
	}
	return nil
}

// digester computes the digests asked for over what passes through it.
type digester struct {
	md5 hash.Hash
	crc hash.Hash64
	// lanes is md5 when it is a large body's (newBodyDigester), given back
	// by close.
	lanes md5lanes.Hash
}

// newBodyDigester is newDigester for a staged body of size bytes (-1:
// unknown): the MD5 of a large one may run in the SIMD lanes it shares
// with other large bodies (internal/md5lanes decides), so the caller
// closes the digester when the body is done, on every path, after sums.
func newBodyDigester(size int64, md5Sum, crcSum bool) *digester {
	if !md5Sum || size < md5lanes.MinBody {
		return newDigester(md5Sum, crcSum)
	}
	d := newDigester(false, crcSum)
	d.lanes = md5lanes.New(size)
	d.md5 = d.lanes
	return d
}

// close gives back the MD5 lane newBodyDigester took, if any.
func (d *digester) close() {
	if d.lanes != nil {
		d.lanes.Close()
	}
}

func newDigester(md5Sum, crcSum bool) *digester {
	d := &digester{}
	if md5Sum {
		d.md5 = md5.New()
	}
	if crcSum {
		d.crc = crc64az.New()
	}
	return d
}

// Write implements io.Writer; it never fails.
func (d *digester) Write(p []byte) (int, error) {
	if d.md5 != nil {
		d.md5.Write(p)
	}
	if d.crc != nil {
		d.crc.Write(p)
	}
	return len(p), nil
}

func (d *digester) sums() sums {
	var s sums
	if d.md5 != nil {
		s.md5 = d.md5.Sum(nil)
	}
	if d.crc != nil {
		s.crc64 = binary.LittleEndian.AppendUint64(nil, d.crc.Sum64())
	}
	return s
}

// setSumHeaders answers with the digests computed for the request body.
func setSumHeaders(h http.Header, got sums) {
	if got.md5 != nil {
		h.Set("Content-Md5", b64(got.md5))
	}
	if got.crc64 != nil {
		h.Set("X-Ms-Content-Crc64", b64(got.crc64))
	}
}
