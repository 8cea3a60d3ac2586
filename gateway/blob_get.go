package gateway

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/blobgw/blobgw/gateway/auth"
	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// Get Blob (GET → 200/206), Get Blob Properties (HEAD → 200) and Get Blob
// Metadata (comp=metadata → 200, headers only). The read path: read the row
// without locking, evaluate read conditions, stream the extents honouring
// Range. Replaced objects stay readable for the grace period, so a read
// that started before an overwrite finishes on the old bytes if it opens
// its last object within the grace (a later one is cut).
func (s *Server) getBlob(w http.ResponseWriter, r *http.Request, req *request) error {
	cond, leaseID, err := blobConds(r)
	if err != nil {
		return err
	}
	b, now, err := s.db.GetBlob(r.Context(), req.ref(), leaseID, cond)
	return s.respondBlob(w, r, req, b, now, err)
}

// respondBlob writes the answer of a blob read whose row (and read
// condition outcome err) is already known.
func (s *Server) respondBlob(w http.ResponseWriter, r *http.Request, req *request, b *leasedb.Blob, now time.Time, err error) error {
	if leasedb.IsNotModified(err) {
		setETagLM(w.Header(), b.ETag, b.LastModified)
	}
	if err != nil {
		return err
	}
	h := w.Header()
	if req.query["comp"] == "metadata" {
		setETagLM(h, b.ETag, b.LastModified)
		writeMetadata(h, b.Metadata)
		w.WriteHeader(http.StatusOK)
		return nil
	}
	if r.Method != http.MethodHead && b.AccessTier == leasedb.TierArchive {
		// Archived bytes are offline on Azure; blobgw reports the tier
		// and refuses the read the same way (no rehydration).
		return svcerr.New(svcerr.BlobArchived)
	}
	if r.Method != http.MethodHead && b.Snapshot == "" && b.IsIncrementalCopy() {
		// Incremental Copy Blob: the destination is read through its
		// snapshots (incremental.go in leasedb).
		return svcerr.New(svcerr.OperationNotAllowedOnIncrementalCopyBlob)
	}
	if r.Method == http.MethodHead {
		writeReadHeaders(h, r, req, b, now)
		h.Set("Content-Length", strconv.FormatInt(b.Size, 10))
		if b.Props.ContentMD5 != nil {
			h.Set("Content-Md5", b64(b.Props.ContentMD5))
		}
		w.WriteHeader(http.StatusOK)
		return nil
	}
	// The blob's headers go out only with its bytes: an error answer
	// (416, 400, a first object that cannot be opened) is XML that
	// neither the blob's Content-Encoding, Content-Disposition and cache
	// headers nor its ETag and metadata describe.
	var start int64
	end, ranged := b.Size, false
	if ifRangeHolds(r.Header, b) {
		start, end, ranged, err = parseRange(r.Header, b.Size)
	}
	if err != nil {
		// Get Blob: a 416 names the blob's size, "bytes */0" for an
		// empty one.
		h.Set("Content-Range", fmt.Sprintf("bytes */%d", b.Size))
		return err
	}
	rangeSums, err := s.rangeDigests(r, b, start, end, ranged)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if ranged {
		status = http.StatusPartialContent
	}
	sent := false
	err = s.streamExtents(r, w, leasedb.Segments(b), start, end, func() {
		sent = true
		writeReadHeaders(h, r, req, b, now)
		if ranged {
			h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, end-1, b.Size))
			if b.Props.ContentMD5 != nil {
				h.Set("X-Ms-Blob-Content-Md5", b64(b.Props.ContentMD5))
			}
			setSumHeaders(h, rangeSums)
		} else if b.Props.ContentMD5 != nil {
			h.Set("Content-Md5", b64(b.Props.ContentMD5))
		}
		h.Set("Content-Length", strconv.FormatInt(end-start, 10))
		w.WriteHeader(status)
	})
	if err != nil && !sent {
		// The first extent could not be opened: nothing is sent yet, so
		// the client gets an error answer (logged with the request id
		// as every 5xx), not a cut connection.
		return fmt.Errorf("read %s: %w", req.ref(), err)
	}
	if err != nil {
		// Headers are gone; the only honest signal left is a cut
		// connection, so the client sees a short body, not wrong bytes.
		s.log.Warn("read failed mid-stream", "request_id", req.id, "blob", req.ref().String(), "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}

// writeReadHeaders sets the headers of a blob read's answer: the blob's
// properties, then the response header overrides (rscc, rscd, rsce, rscl,
// rsct) of a verified service SAS.
func writeReadHeaders(h http.Header, r *http.Request, req *request, b *leasedb.Blob, now time.Time) {
	writeBlobHeaders(h, b, now)
	if req.sas {
		for k, v := range auth.ResponseOverrides(r.URL.Query()) {
			h.Set(k, v)
		}
	}
}

// maxRangeDigest is the largest range whose MD5 or CRC64 Get Blob computes
// (x-ms-range-get-content-md5 / -crc64).
const maxRangeDigest = 4 << 20

// rangeDigests computes the digests of [start, end) that the request asks
// for with x-ms-range-get-content-md5 or x-ms-range-get-content-crc64: a
// first pass over the range, before the headers go out (the range is at
// most 4 MiB; nothing is buffered). Either needs a Range of at most 4 MiB
// (400 InvalidHeaderValue), and not both at once (400
// BothCrc64AndMd5RangeHeaderPresent, as the service answers).
func (s *Server) rangeDigests(r *http.Request, b *leasedb.Blob, start, end int64, ranged bool) (sums, error) {
	md5v, crcv := r.Header.Get("X-Ms-Range-Get-Content-Md5"), r.Header.Get("X-Ms-Range-Get-Content-Crc64")
	if md5v == "" && crcv == "" {
		return sums{}, nil
	}
	// Each is "true" or "false" (any case); another value is 400
	// InvalidHeaderValue, never read as false.
	wantMD5, _, err := boolHeader(r.Header, "x-ms-range-get-content-md5")
	if err != nil {
		return sums{}, err
	}
	wantCRC, _, err := boolHeader(r.Header, "x-ms-range-get-content-crc64")
	if err != nil {
		return sums{}, err
	}
	if !wantMD5 && !wantCRC {
		return sums{}, nil
	}
	name, value := "x-ms-range-get-content-md5", md5v
	if !wantMD5 {
		name, value = "x-ms-range-get-content-crc64", crcv
	}
	if wantMD5 && wantCRC {
		return sums{}, svcerr.New(svcerr.BothCrc64AndMd5RangeHeaderPresent)
	}
	if !ranged || end-start > maxRangeDigest {
		return sums{}, svcerr.Header(svcerr.InvalidHeaderValue, name, value)
	}
	d := newDigester(wantMD5, wantCRC)
	if err := s.streamExtents(r, d, leasedb.Segments(b), start, end, nil); err != nil {
		return sums{}, fmt.Errorf("digest of range: %w", err)
	}
	return d.sums(), nil
}

// streamExtents copies bytes [start, end) of the blob formed by extents
// (leasedb.Segments: each read from its Off; an inline one from its Data;
// one without a Key or Data, a page blob's hole, is zeros). ready, when not nil, runs once before the first
// byte is written: after the first extent opened (or at the end when the
// range is empty), so a blob whose bytes cannot be read fails before
// anything was sent.
func (s *Server) streamExtents(r *http.Request, w io.Writer, extents []leasedb.Extent, start, end int64, ready func()) error {
	var off int64
	// The copy buffer is taken from a pool, and only when a copy needs
	// one: a disk extent to the socket goes by sendfile (io.WriterTo,
	// io.ReaderFrom), and a fresh 256 KiB per Get Blob was most of a small
	// read's allocation.
	var bp *[]byte
	defer func() {
		if bp != nil {
			streamBufPool.Put(bp)
		}
	}()
	buffer := func() []byte {
		if bp == nil {
			bp = streamBufPool.Get().(*[]byte)
		}
		return *bp
	}
	started := func() {
		if ready != nil {
			ready()
			ready = nil
		}
	}
	for _, e := range extents {
		eStart, eEnd := off, off+e.Size
		off = eEnd
		if eEnd <= start || eStart >= end {
			continue
		}
		from := max(start, eStart) - eStart
		to := min(end, eEnd) - eStart
		if e.Inline() {
			// A small blob's bytes, kept in its row (blob_inline.go).
			started()
			if _, err := w.Write(e.Data[from:to]); err != nil {
				return fmt.Errorf("copy inline extent: %w", err)
			}
			continue
		}
		if e.Key == "" {
			started()
			if err := writeZeros(w, to-from, buffer()); err != nil {
				return fmt.Errorf("copy zeros: %w", err)
			}
			continue
		}
		rc, err := s.backend.Open(r.Context(), e.Key, e.Off+from, to-from)
		if err != nil {
			return fmt.Errorf("open extent %s: %w", e.Key, err)
		}
		started()
		var buf []byte // nil: io.CopyBuffer's WriteTo or ReadFrom copies
		_, wt := rc.(io.WriterTo)
		_, rf := w.(io.ReaderFrom)
		if !wt && !rf {
			buf = buffer()
		}
		n, err := io.CopyBuffer(w, rc, buf)
		rc.Close()
		if err != nil {
			return fmt.Errorf("copy extent %s: %w", e.Key, err)
		}
		if n != to-from {
			return fmt.Errorf("extent %s: short read %d of %d", e.Key, n, to-from)
		}
	}
	started() // an empty range opens nothing
	return nil
}

// streamBufPool holds streamExtents' 256 KiB copy buffers.
var streamBufPool = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// writeZeros writes n zero bytes through buf (zeroed here: bounded memory
// whatever the size of a page blob's hole).
func writeZeros(w io.Writer, n int64, buf []byte) error {
	clear(buf)
	for n > 0 {
		k := min(n, int64(len(buf)))
		if _, err := w.Write(buf[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// ifRangeHolds evaluates If-Range (HTTP's, which a browser or download
// manager sends to resume a download): the Range is served only while its
// validator names b, an entity tag compared strongly (a weak W/ one never
// matches) or b's Last-Modified date exactly; otherwise the Range is
// ignored and the whole blob answers, so the client does not join the new
// blob's tail to the old one's head. Without If-Range it holds.
func ifRangeHolds(h http.Header, b *leasedb.Blob) bool {
	v := strings.TrimSpace(h.Get("If-Range"))
	switch {
	case v == "":
		return true
	case strings.HasPrefix(v, "W/"):
		return false
	case strings.HasPrefix(v, `"`):
		return v == b.ETag
	}
	t, err := http.ParseTime(v)
	return err == nil && t.Equal(b.LastModified.Truncate(time.Second))
}

// parseRange reads x-ms-range (preferred; when it is sent, Range is not
// looked at) or Range: "bytes=a-b", "bytes=a-" or the suffix form
// "bytes=-n" (the last n bytes). It returns the half-open window
// [start, end), the end clamped to the blob's size. A malformed header
// (another unit, several ranges, bad numbers) is ignored, as HTTP says; a
// start at or past the end of the blob, or a suffix of 0 bytes or of an
// empty blob, is 416 InvalidRange.
func parseRange(h http.Header, size int64) (start, end int64, ranged bool, err error) {
	v := h.Get("X-Ms-Range")
	if v == "" {
		v = h.Get("Range")
	}
	if v == "" {
		return 0, size, false, nil
	}
	spec, ok := strings.CutPrefix(strings.TrimSpace(v), "bytes=")
	if !ok || strings.Contains(spec, ",") {
		return 0, size, false, nil
	}
	a, b, ok := strings.Cut(spec, "-")
	if !ok {
		return 0, size, false, nil
	}
	if a == "" {
		// Suffix range "bytes=-n": the last n bytes.
		n, perr := strconv.ParseInt(b, 10, 64)
		if perr != nil || n < 0 {
			return 0, size, false, nil
		}
		if n == 0 || size == 0 {
			return 0, 0, false, svcerr.New(svcerr.InvalidRange)
		}
		return max(size-n, 0), size, true, nil
	}
	start, perr := strconv.ParseInt(a, 10, 64)
	if perr != nil || start < 0 {
		return 0, size, false, nil
	}
	end = size
	if b != "" {
		last, perr := strconv.ParseInt(b, 10, 64)
		if perr != nil || last < start {
			return 0, size, false, nil
		}
		// Compare before adding: "bytes=0-9223372036854775807" (an
		// open end written as the largest int64) would overflow last+1.
		if last < size {
			end = last + 1
		}
	}
	if start >= size {
		return 0, 0, false, svcerr.New(svcerr.InvalidRange)
	}
	return start, end, true, nil
}
