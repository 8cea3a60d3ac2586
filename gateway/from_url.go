package gateway

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

// zeroBody refuses a From URL request that carries a body (Content-Length
// must be 0: the bytes come from the source). A body sent chunked has no
// Content-Length to be 0, and is refused rather than ignored.
func zeroBody(r *http.Request) error {
	if r.ContentLength < 0 {
		return svcerr.New(svcerr.MissingContentLengthHeader)
	}
	if r.ContentLength > 0 {
		return svcerr.Header(svcerr.InvalidHeaderValue, "Content-Length", strconv.FormatInt(r.ContentLength, 10))
	}
	return nil
}

// targetCond renames a destination condition failure for the operations
// that report it as TargetConditionNotMet (Put Blob From URL).
func targetCond(err error) error {
	if svcerr.HasCode(err, svcerr.ConditionNotMet) {
		return svcerr.New(svcerr.TargetConditionNotMet)
	}
	return err
}

// Put Blob From URL: PUT with x-ms-blob-type: BlockBlob and
// x-ms-copy-source → 201. A Put Blob whose body is the source: the blob's
// properties are the source's (unless x-ms-copy-source-blob-properties:
// false), each overridden by an x-ms-blob-content-* header sent; metadata
// and tags are the request's (tags: the source's with
// x-ms-copy-source-tag-option: COPY). A destination condition that fails is
// 412 TargetConditionNotMet.
func (s *Server) putBlobFromURL(w http.ResponseWriter, r *http.Request, req *request) error {
	ctx := r.Context()
	if bt := r.Header.Get("x-ms-blob-type"); bt != "BlockBlob" {
		return svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-blob-type", bt)
	}
	if err := zeroBody(r); err != nil {
		return err
	}
	spec, err := parseCopySpec(r, opPutBlobFromURL, s.opt.MaxPutBlobSize)
	if err != nil {
		return err
	}
	reqProps, err := parseBlobProps(r.Header, false)
	if err != nil {
		return err
	}
	copyProps := !strings.EqualFold(r.Header.Get("x-ms-copy-source-blob-properties"), "false")
	meta, cond, leaseID, err := metaWriteConds(r, req)
	if err != nil {
		return err
	}
	preq := leasedb.PutBlobRequest{Ref: req.ref(), Type: "BlockBlob", BlobContent: leasedb.BlobContent{Metadata: meta}, LeaseID: leaseID, Cond: cond, CreateOnly: req.createOnly}
	if preq.Tags, err = parseTagsHeader(r.Header); err != nil {
		return err
	}
	copyTags, err := copyTagOption(r.Header, opPutBlobFromURL)
	if err != nil {
		return err
	}
	if preq.AccessTier, err = parseTierHeader(r.Header, "BlockBlob", 0); err != nil {
		return err
	}
	if preq.PutLease, err = parsePutLease(r, leaseID); err != nil {
		return err
	}
	if err := s.db.Precheck(ctx, preq); err != nil {
		return targetCond(err)
	}

	src, err := s.openSource(ctx, r, req, spec)
	if err != nil {
		return err
	}
	defer src.Close()
	if copyProps {
		preq.Props = src.props
	}
	overrideProps(&preq.Props, reqProps, r.Header)
	if copyTags {
		if preq.Tags, err = sourceTags(src); err != nil {
			return err
		}
	}
	ext, sum, err := s.copyChecked(ctx, r, src, spec.max)
	if err != nil {
		return err
	}
	preq.Extents = extentsOf(ext)
	if reqProps.ContentMD5 == nil {
		// The whole blob's MD5 is known: the bytes just went through.
		preq.Props.ContentMD5 = sum
	}
	b, leaseRes, err := commitBlob(ctx, s, preq.Extents, s.db.PutBlob, preq)
	if err != nil {
		return targetCond(err)
	}
	h := w.Header()
	setETagLM(h, b.ETag, b.LastModified)
	setVersionID(h, b)
	h.Set("Content-MD5", b64(sum))
	h.Set("x-ms-request-server-encrypted", "true")
	if preq.LeaseAction == leasedb.PutLeaseAcquire {
		h.Set("x-ms-lease-id", leaseRes.ID)
	}
	w.WriteHeader(http.StatusCreated)
	return nil
}

// overrideProps lays the x-ms-blob-content-* headers the request sent over
// the source's properties.
func overrideProps(p *leasedb.Props, req leasedb.Props, h http.Header) {
	sent := func(name string) bool { _, ok := h[http.CanonicalHeaderKey(name)]; return ok }
	if sent("x-ms-blob-content-type") {
		p.ContentType = req.ContentType
	}
	if sent("x-ms-blob-content-encoding") {
		p.ContentEncoding = req.ContentEncoding
	}
	if sent("x-ms-blob-content-language") {
		p.ContentLanguage = req.ContentLanguage
	}
	if sent("x-ms-blob-content-disposition") {
		p.ContentDisposition = req.ContentDisposition
	}
	if sent("x-ms-blob-cache-control") {
		p.CacheControl = req.CacheControl
	}
	if req.ContentMD5 != nil {
		p.ContentMD5 = req.ContentMD5
	}
}

// parseBlockSource parses a write whose block is its source (Put Block From
// URL, Append Block From URL): no body of its own, the source
// (parseCopySpec) and, when x-ms-source-range names one, a block of at
// most max bytes (413 RequestBodyTooLarge, as a body that long would be).
func parseBlockSource(r *http.Request, op copyOp, max int64) (*copySpec, error) {
	if err := zeroBody(r); err != nil {
		return nil, err
	}
	spec, err := parseCopySpec(r, op, max)
	if err != nil {
		return nil, err
	}
	if n := spec.rangeLen(); n > max {
		return nil, svcerr.New(svcerr.RequestBodyTooLarge)
	}
	return spec, nil
}

// Put Block From URL: PUT ?comp=block&blockid=<id> with x-ms-copy-source →
// 201. The block is the source (or its x-ms-source-range), staged as its
// own object like any block.
func (s *Server) putBlockFromURL(w http.ResponseWriter, r *http.Request, req *request) error {
	ctx := r.Context()
	id, err := parseBlockID(req)
	if err != nil {
		return err
	}
	spec, err := parseBlockSource(r, opPutBlockFromURL, maxBlockSize)
	if err != nil {
		return err
	}
	leaseID, err := leaseIDHeader(r.Header)
	if err != nil {
		return err
	}
	if _, err := noConditions.parseOnly(r.Header); err != nil {
		return err
	}
	if err := s.db.PrecheckBlock(ctx, req.ref(), leaseID); err != nil {
		return err
	}
	src, err := s.openSource(ctx, r, req, spec)
	if err != nil {
		return err
	}
	defer src.Close()
	ext, got, err := s.copyVerified(ctx, src, spec)
	if err != nil {
		return err
	}
	return s.stageBlock(ctx, w, req, leaseID, id, ext, got)
}

// copyVerified copies a block's source (at most spec.max bytes) to a new
// object and checks it against the x-ms-source-content-md5 or
// x-ms-source-content-crc64 sent (Put Block From URL, Append Block From
// URL); a mismatch discards the object.
func (s *Server) copyVerified(ctx context.Context, src *copySource, spec *copySpec) (leasedb.Extent, sums, error) {
	ext, got, err := s.copyDigested(ctx, src, spec.max, false, spec.want.crc64 != nil)
	if err != nil {
		return ext, got, err
	}
	if err := spec.want.mismatch(got); err != nil {
		s.discard(ext.Key)
		return leasedb.Extent{}, sums{}, err
	}
	return ext, got, nil
}

// Append Block From URL: PUT ?comp=appendblock with x-ms-copy-source → 201.
// Append Block whose block is the source or its x-ms-source-range,
// at most 100 MiB.
func (s *Server) appendBlockFromURL(w http.ResponseWriter, r *http.Request, req *request) error {
	ctx := r.Context()
	spec, err := parseBlockSource(r, opAppendFromURL, maxAppendBlockSize)
	if err != nil {
		return err
	}
	areq, err := parseAppendRequest(r, req)
	if err != nil {
		return err
	}
	if err := s.db.PrecheckAppend(ctx, areq, max(spec.rangeLen(), 0)); err != nil {
		return err
	}
	src, err := s.openSource(ctx, r, req, spec)
	if err != nil {
		return err
	}
	defer src.Close()
	if src.size == 0 {
		return svcerr.Newf(svcerr.InvalidInput, "The copy source range is empty; an appended block must have at least one byte.")
	}
	ext, got, err := s.copyVerified(ctx, src, spec)
	if err != nil {
		return err
	}
	if ext.Size == 0 {
		s.discard(ext.Key)
		return svcerr.Newf(svcerr.InvalidInput, "The copy source range is empty; an appended block must have at least one byte.")
	}
	return s.commitAppend(ctx, w, areq, ext, got)
}
