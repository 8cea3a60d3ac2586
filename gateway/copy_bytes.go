package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

var errSourceTooLarge = errors.New("copy source exceeds the operation's size limit")

// sourceReader passes the source through to s.stage and remembers how the
// source failed, so a broken source is told apart from a broken backend.
type sourceReader struct {
	r    io.Reader
	size int64 // expected, -1 unknown
	max  int64
	n    int64
	err  error
}

func (sr *sourceReader) Read(p []byte) (int, error) {
	n, err := sr.r.Read(p)
	sr.n += int64(n)
	switch {
	case sr.n > sr.max:
		sr.err = errSourceTooLarge
		return n, sr.err
	case err == io.EOF && sr.size >= 0 && sr.n < sr.size:
		sr.err = io.ErrUnexpectedEOF
		return n, sr.err
	case err != nil && err != io.EOF:
		sr.err = err
	}
	return n, err
}

// copyBytes streams src into a new object (an upload intent first, as every
// write) and returns its extent and the MD5 of the bytes. With dropEmpty an
// empty source yields no object (Extent.Key ""). On failure nothing stays
// behind.
func (s *Server) copyBytes(ctx context.Context, src *copySource, max int64, dropEmpty bool) (leasedb.Extent, []byte, error) {
	ext, got, err := s.copyDigested(ctx, src, max, dropEmpty, false)
	return ext, got.md5, err
}

// copyDigested is copyBytes that also computes the CRC64 of the bytes
// when crc is set (x-ms-source-content-crc64).
func (s *Server) copyDigested(ctx context.Context, src *copySource, max int64, dropEmpty, crc bool) (leasedb.Extent, sums, error) {
	if src.size > max {
		return leasedb.Extent{}, sums{}, svcerr.New(svcerr.RequestBodyTooLarge)
	}
	if src.size == 0 && dropEmpty {
		return leasedb.Extent{}, newDigester(true, crc).sums(), nil
	}
	sr := &sourceReader{r: src.body, size: src.size, max: max}
	ext, sum, err := s.stage(ctx, sr, src.size, true, crc)
	if err != nil {
		if sr.err == nil {
			return leasedb.Extent{}, sums{}, err
		}
		switch {
		case errors.Is(sr.err, errSourceTooLarge):
			return leasedb.Extent{}, sums{}, svcerr.New(svcerr.RequestBodyTooLarge)
		case ctx.Err() != nil:
			return leasedb.Extent{}, sums{}, ctx.Err()
		case src.remote:
			return leasedb.Extent{}, sums{}, cannotVerify(http.StatusInternalServerError, "The copy source failed after %d bytes: %v", sr.n, sr.err)
		}
		return leasedb.Extent{}, sums{}, fmt.Errorf("reading copy source: %w", sr.err)
	}
	if ext.Size == 0 && dropEmpty {
		s.discard(ext.Key)
		return leasedb.Extent{}, sum, nil
	}
	return ext, sum, nil
}

// copyChecked is copyBytes of a whole source (an empty one yields no
// object) followed by the x-ms-source-content-md5 check, which discards the
// copy when it fails.
func (s *Server) copyChecked(ctx context.Context, r *http.Request, src *copySource, max int64) (leasedb.Extent, []byte, error) {
	ext, sum, err := s.copyBytes(ctx, src, max, true)
	if err != nil {
		return ext, nil, err
	}
	if err := checkSourceMD5(r.Header, sum); err != nil {
		s.discardAll(extentsOf(ext))
		return leasedb.Extent{}, nil, err
	}
	return ext, sum, nil
}

// extentsOf is the extent list of a blob made of ext: none when ext holds
// no object (an empty copy).
func extentsOf(ext leasedb.Extent) []leasedb.Extent {
	if ext.Key == "" {
		return nil
	}
	return []leasedb.Extent{ext}
}

// checkSourceMD5 compares x-ms-source-content-md5, when sent, with the MD5
// of the bytes copied.
func checkSourceMD5(h http.Header, sum []byte) error {
	v := h.Get("x-ms-source-content-md5")
	if v == "" {
		return nil
	}
	want, err := decodeMD5(v)
	if err != nil {
		return svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-source-content-md5", v)
	}
	if !bytes.Equal(want, sum) {
		return svcerr.New(svcerr.Md5Mismatch)
	}
	return nil
}
