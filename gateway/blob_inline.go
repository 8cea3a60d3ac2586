package gateway

import (
	"bytes"
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"

	"github.com/blobgw/blobgw/internal/crc64az"
	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

// Small blobs inline. A Put Blob of a block blob whose body is at most
// Options.InlineMaxBytes keeps the bytes in the metadata row (an inline
// extent, leasedb.Extent.Data) instead of a backend object: the durable
// write is one database commit, with no upload intent, no temporary file,
// no fsync of an object and, on S3, no PUT. Whatever copies the row
// (Snapshot Blob, versions, blob soft delete, Copy Blob sharing the
// source's extents, container soft delete) copies the bytes with it, so
// nothing of reference counting or collection applies to them.
//
// Put Blob (BlockBlob) and Append Block go inline: a Put Block's block
// would be one of up to 50,000 in a block list, so inline blocks could make
// one row unbounded; an append blob's row grows with each block, so its
// inline bytes together are bounded by InlineMaxBytes (appendInline); page
// blobs are written in place by Put Page. The From URL operations and a Copy Blob
// that copies bytes stage an object, as before. A Put Blob with Expect:
// 100-continue still goes inline: its pre-check runs first
// (precheckFirst), and the body, once the client sends it, is small.

// inlineBody reports whether Put Blob keeps a body of size bytes in the row.
func (s *Server) inlineBody(blobType string, size int64) bool {
	return blobType == "BlockBlob" && size > 0 && size <= s.opt.InlineMaxBytes
}

// readInline reads a body of exactly size bytes (a few KiB: size is at
// most Options.InlineMaxBytes) into memory, computing the digests asked
// for. It reads at most size+1 bytes, one more to tell a longer body, and
// answers a short, long or failing body as stage does.
func readInline(body io.Reader, size int64, md5Sum, crcSum bool) (leasedb.Extent, sums, error) {
	hr := &hashingReader{r: body, limit: size, d: newDigester(md5Sum, crcSum)}
	return readInlineInto(hr, make([]byte, size+1), size)
}

// readInlineInto is readInline's work, into buf (at least size+1 bytes)
// through hr, whose digester and limit are set.
func readInlineInto(hr *hashingReader, buf []byte, size int64) (leasedb.Extent, sums, error) {
	// ReadFull's own error says only that fewer than size+1 bytes came
	// (always so for a body of the right length); hr.err and n tell the rest.
	n, _ := io.ReadFull(hr, buf[:size+1])
	if e, ok := svcerr.As(hr.err); ok {
		return leasedb.Extent{}, sums{}, e // the body stalled (limits.go)
	}
	switch {
	case int64(n) > size:
		return leasedb.Extent{}, sums{}, svcerr.Newf(svcerr.InvalidInput, "The request body is longer than Content-Length.")
	case errors.Is(hr.err, io.ErrUnexpectedEOF) || int64(n) < size:
		// The client's body ended early (or it disconnected).
		return leasedb.Extent{}, sums{}, svcerr.Newf(svcerr.InvalidInput, "The request body is shorter than Content-Length.")
	case hr.err != nil:
		return leasedb.Extent{}, sums{}, fmt.Errorf("reading request body: %w", hr.err)
	}
	return leasedb.Extent{Size: size, Data: buf[:size:size]}, hr.d.sums(), nil
}

// inlineBuf is what reading one inline Put Blob body needs, kept in
// Server.inlineBufs between requests so that a small Put Blob allocates
// neither its body buffer (Options.InlineMaxBytes+1 bytes) nor its reader
// and MD5 state. Its bytes are lent to the request: the extent that
// carries them (leasedb.Extent.Data) must be unreachable from anything
// that outlives the request before putInlineBuf takes it back; the store
// encodes them into the row's text during the commit and keeps no slice.
type inlineBuf struct {
	buf []byte
	hr  hashingReader
	d   digester
	md5 hash.Hash
}

// getInlineBuf takes a buffer for a body of at most Options.InlineMaxBytes.
func (s *Server) getInlineBuf() *inlineBuf {
	if ib, ok := s.inlineBufs.Get().(*inlineBuf); ok && int64(len(ib.buf)) > s.opt.InlineMaxBytes {
		return ib
	}
	return &inlineBuf{buf: make([]byte, s.opt.InlineMaxBytes+1), md5: md5.New()}
}

// putInlineBuf gives ib back once nothing of the request holds its bytes.
// Tests poison what is given back (poisonInlineBufs), so that a read of a
// buffer after its return shows as wrong content.
func (s *Server) putInlineBuf(ib *inlineBuf) {
	if poisonInlineBufs {
		for i := range ib.buf {
			ib.buf[i] = 0xA5
		}
	}
	ib.hr, ib.d = hashingReader{}, digester{} // nothing of the request stays reachable from the pool
	s.inlineBufs.Put(ib)
}

// poisonInlineBufs is set by tests only (export_test.go).
var poisonInlineBufs = false

// readInlinePooled is readInline into ib: the extent's Data is ib's
// buffer, valid until putInlineBuf.
func readInlinePooled(ib *inlineBuf, body io.Reader, size int64, crcSum bool) (leasedb.Extent, sums, error) {
	ib.md5.Reset()
	ib.d = digester{md5: ib.md5}
	if crcSum {
		ib.d.crc = crc64az.New()
	}
	ib.hr = hashingReader{r: body, limit: size, d: &ib.d}
	return readInlineInto(&ib.hr, ib.buf, size)
}

// readExtent reads a body of size bytes: into memory as an inline extent
// (inline: Put Blob and Append Block of a small body), else staged as an
// object under a new key (stage); either computes the digests asked for.
func (s *Server) readExtent(ctx context.Context, body io.Reader, size int64, inline, md5Sum, crcSum bool) (leasedb.Extent, sums, error) {
	if inline {
		return readInline(body, size, md5Sum, crcSum)
	}
	return s.stage(ctx, body, size, md5Sum, crcSum)
}

// appendInline is Append Block of a body of at most Options.InlineMaxBytes:
// the body is read into memory (readBody, inline) and offered to the row as an
// inline extent. Whether it fits is decided by the store under the row
// lock (the blob's inline bytes after the append stay within
// InlineMaxBytes; a racing append may have changed them since any
// pre-check): when it does not, leasedb.ErrAppendStage says nothing was
// committed, and the buffered bytes are staged as an object and appended
// again, exactly as a larger block. The digests are those of readBody.
func (s *Server) appendInline(w http.ResponseWriter, r *http.Request, areq leasedb.AppendRequest, size int64) error {
	ext, got, err := s.readBody(r, size, true)
	if err != nil {
		return err
	}
	areq.InlineMax = s.opt.InlineMaxBytes
	err = s.commitAppend(r.Context(), w, areq, ext, got)
	if !errors.Is(err, leasedb.ErrAppendStage) {
		return err
	}
	staged, _, err := s.stage(r.Context(), bytes.NewReader(ext.Data), size, false, false)
	if err != nil {
		return err
	}
	areq.InlineMax = 0
	return s.commitAppend(r.Context(), w, areq, staged, got)
}
