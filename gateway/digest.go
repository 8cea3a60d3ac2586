package gateway

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"hash/crc64"
	"net/http"
	"sync"

	md5simd "github.com/minio/md5-simd"

	"github.com/blobgw/blobgw/svcerr"
)

// crc64Table is Azure Storage's CRC64 (polynomial 0x9A6C9329AC4BC9B5, as
// the SDKs compute it for x-ms-content-crc64); the header carries the
// 64-bit value little-endian, base64-encoded.
var crc64Table = crc64.MakeTable(0x9A6C9329AC4BC9B5)

// sums are the digests of a request body: MD5 (Content-MD5) and CRC64
// (x-ms-content-crc64); nil when not computed or not sent.
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
	// lane is md5 when it is a lane of md5Lanes, to be given back (close).
	lane md5simd.Hasher
}

// bulkMD5Min is the body size from which a staged upload's MD5 runs on a
// lane of md5Lanes instead of crypto/md5: MD5 is most of the gateway's CPU
// on a large Put Blob (about three quarters of it for 16 MiB bodies, 8
// clients), and one stream cannot be parallelised, but several streams
// can share the SIMD registers (AVX2: 8 lanes, AVX-512: 16). Below it the
// hand-off to the lanes' goroutine costs more than it saves.
const bulkMD5Min = 1 << 20

// md5Lanes hashes the MD5 of concurrent large uploads side by side in SIMD
// lanes (MinIO's md5-simd; crypto/md5 on CPUs without AVX2). One server
// for the process, started on first use and never stopped.
var md5Lanes = sync.OnceValue(func() md5simd.Server { return md5simd.NewServer() })

// newBulkDigester is newDigester for a body of size bytes streamed to the
// backend (stage): from bulkMD5Min its MD5 runs on a lane of md5Lanes. The
// caller must close it.
func newBulkDigester(size int64, md5Sum, crcSum bool) *digester {
	if !md5Sum || size < bulkMD5Min {
		return newDigester(md5Sum, crcSum)
	}
	d := newDigester(false, crcSum)
	d.lane = md5Lanes().NewHash()
	d.md5 = d.lane
	return d
}

// close gives back the MD5 lane, if any; the digester is not used after.
func (d *digester) close() {
	if d.lane != nil {
		d.lane.Close()
		d.lane, d.md5 = nil, nil
	}
}

func newDigester(md5Sum, crcSum bool) *digester {
	d := &digester{}
	if md5Sum {
		d.md5 = md5.New()
	}
	if crcSum {
		d.crc = crc64.New(crc64Table)
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
