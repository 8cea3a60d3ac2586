package gateway

import (
	"context"
	"encoding/xml"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

// Page blobs: Put Blob with x-ms-blob-type: PageBlob creates one (every page
// zero), Put Page writes or clears 512-byte-aligned ranges, Get Page Ranges
// lists the written ones, Set Blob Properties resizes and sets the
// sequence number. Every Put Page stores its bytes as a new immutable
// object; the commit merges the run into the page map under the blob lock
// (leasedb/pagemap.go). Reads stream the runs and zeros for the holes.

// parsePageBlobCreate reads Put Blob's page blob headers:
// x-ms-blob-content-length (required, a multiple of 512, at most 8 TiB)
// and x-ms-blob-sequence-number (0 when absent).
func parsePageBlobCreate(h http.Header) (size, seq int64, err error) {
	v := h.Get("x-ms-blob-content-length")
	if v == "" {
		return 0, 0, svcerr.Header(svcerr.MissingRequiredHeader, "x-ms-blob-content-length", "")
	}
	if size, err = parsePageLength(v); err != nil {
		return 0, 0, err
	}
	if seq, err = int64Header(h, "x-ms-blob-sequence-number"); err != nil {
		return 0, 0, err
	}
	return size, max(seq, 0), nil
}

// parsePageLength reads a page blob length (x-ms-blob-content-length on
// Put Blob and Set Blob Properties).
func parsePageLength(v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n%leasedb.PageSize != 0 || n > leasedb.MaxPageBlobSize {
		return 0, svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-blob-content-length", v)
	}
	return n, nil
}

// parsePageRange reads the range of Put Page (x-ms-range, or Range when it
// is absent): "bytes=start-end", both ends inclusive and 512-aligned
// (start a multiple of 512, end one less than one). It returns the
// half-open [start, end). A missing range is 400 MissingRequiredHeader, a
// malformed one 400 InvalidHeaderValue, a misaligned one or one past the
// largest page blob 416 InvalidPageRange, the code Azure's error table
// gives for a page range.
func parsePageRange(h http.Header) (start, end int64, err error) {
	name := "x-ms-range"
	v := h.Get(name)
	if v == "" {
		name, v = "Range", h.Get("Range")
	}
	if v == "" {
		return 0, 0, svcerr.Header(svcerr.MissingRequiredHeader, "Range", "")
	}
	spec, ok := strings.CutPrefix(strings.TrimSpace(v), "bytes=")
	a, b, ok2 := strings.Cut(spec, "-")
	if !ok || !ok2 {
		return 0, 0, svcerr.Header(svcerr.InvalidHeaderValue, name, v)
	}
	start, err1 := strconv.ParseInt(a, 10, 64)
	last, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || start < 0 || last < start {
		return 0, 0, svcerr.Header(svcerr.InvalidHeaderValue, name, v)
	}
	// No page blob reaches past MaxPageBlobSize; compared before adding,
	// since last+1 overflows for the largest int64 (and would read as an
	// empty range a clear applies).
	if last >= leasedb.MaxPageBlobSize || start%leasedb.PageSize != 0 || (last+1)%leasedb.PageSize != 0 {
		return 0, 0, svcerr.New(svcerr.InvalidPageRange)
	}
	return start, last + 1, nil
}

// parseSeqConditions reads x-ms-if-sequence-number-le / -lt / -eq.
func parseSeqConditions(h http.Header) (leasedb.SeqConditions, error) {
	var c leasedb.SeqConditions
	var err error
	if c.LE, err = int64Header(h, "x-ms-if-sequence-number-le"); err != nil {
		return c, err
	}
	if c.LT, err = int64Header(h, "x-ms-if-sequence-number-lt"); err != nil {
		return c, err
	}
	if c.EQ, err = int64Header(h, "x-ms-if-sequence-number-eq"); err != nil {
		return c, err
	}
	return c, nil
}

// parsePageWrite reads what Put Page and Put Page From URL share: the
// range, the conditions (If-*, lease, sequence number) and the
// put-and-release extension.
func parsePageWrite(r *http.Request, req *request) (leasedb.PageWriteRequest, error) {
	preq := leasedb.PageWriteRequest{Ref: req.ref()}
	var err error
	if v := r.Header.Get("x-ms-access-tier"); v != "" {
		// Put Page and Put Page From URL carry no tier (Put Blob and
		// Set Blob Tier set a page blob's): refused, as Incremental
		// Copy Blob refuses it, rather than dropped.
		return preq, svcerr.Header(svcerr.UnsupportedHeader, "x-ms-access-tier", v)
	}
	if preq.Start, preq.End, err = parsePageRange(r.Header); err != nil {
		return preq, err
	}
	if preq.Cond, preq.LeaseID, err = blobConds(r); err != nil {
		return preq, err
	}
	if preq.Seq, err = parseSeqConditions(r.Header); err != nil {
		return preq, err
	}
	if preq.PutLease, err = parsePutLease(r, preq.LeaseID); err != nil {
		return preq, err
	}
	return preq, nil
}

// Put Page: PUT ?comp=page with x-ms-page-write: update (the body is the
// range's bytes, at most 4 MiB, Content-MD5 / x-ms-content-crc64 checked)
// or clear (no body) → 201.
func (s *Server) putPage(w http.ResponseWriter, r *http.Request, req *request) error {
	mode := r.Header.Get("x-ms-page-write")
	switch mode {
	case "update", "clear":
	case "":
		return svcerr.Header(svcerr.MissingRequiredHeader, "x-ms-page-write", "")
	default:
		return svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-page-write", mode)
	}
	preq, err := parsePageWrite(r, req)
	if err != nil {
		return err
	}
	size := r.ContentLength
	preq.Clear = mode == "clear"
	switch {
	case size < 0:
		return svcerr.New(svcerr.MissingContentLengthHeader)
	case preq.Clear && size != 0:
		return svcerr.Header(svcerr.InvalidHeaderValue, "Content-Length", strconv.FormatInt(size, 10))
	case !preq.Clear && preq.End-preq.Start > leasedb.MaxPageWrite:
		return svcerr.New(svcerr.RequestBodyTooLarge)
	case !preq.Clear && size != preq.End-preq.Start:
		// The body is the range's bytes, no more and no fewer.
		return svcerr.Header(svcerr.InvalidHeaderValue, "Content-Length", strconv.FormatInt(size, 10))
	}
	ctx := r.Context()
	if err := s.db.PrecheckPages(ctx, preq); err != nil {
		return err
	}
	var staged []leasedb.Extent
	var got sums
	if !preq.Clear {
		want, err := transactionalSums(r.Header)
		if err != nil {
			return err
		}
		ext, digests, err := s.stage(ctx, r.Body, size, true, want.crc64 != nil)
		if err != nil {
			return err
		}
		if err := want.mismatch(digests); err != nil {
			s.discard(ext.Key)
			return err
		}
		preq.Extent, staged, got = ext, []leasedb.Extent{ext}, digests
	}
	return s.commitPages(ctx, w, preq, staged, got)
}

// Put Page From URL: PUT ?comp=page with x-ms-copy-source,
// x-ms-page-write: update, the destination range (x-ms-range or Range) and
// x-ms-source-range of the same length → 201. The source is read as by
// Put Block From URL (copy_source.go); its bytes become the run's object.
func (s *Server) putPageFromURL(w http.ResponseWriter, r *http.Request, req *request) error {
	ctx := r.Context()
	switch mode := r.Header.Get("x-ms-page-write"); mode {
	case "update":
	case "":
		return svcerr.Header(svcerr.MissingRequiredHeader, "x-ms-page-write", "")
	default:
		// Only an update takes a source.
		return svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-page-write", mode)
	}
	if err := zeroBody(r); err != nil {
		return err
	}
	preq, err := parsePageWrite(r, req)
	if err != nil {
		return err
	}
	n := preq.End - preq.Start
	if n > leasedb.MaxPageWrite {
		return svcerr.New(svcerr.RequestBodyTooLarge)
	}
	spec, err := parseCopySpec(r, opPutPageFromURL, n)
	if err != nil {
		return err
	}
	if !spec.ranged {
		return svcerr.Header(svcerr.MissingRequiredHeader, "x-ms-source-range", "")
	}
	if spec.rangeLen() != n {
		return svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-source-range", r.Header.Get("x-ms-source-range"))
	}
	if err := s.db.PrecheckPages(ctx, preq); err != nil {
		return err
	}
	src, err := s.openSource(ctx, r, req, spec)
	if err != nil {
		return err
	}
	defer src.Close()
	if src.size >= 0 && src.size != n {
		return cannotVerify(http.StatusRequestedRangeNotSatisfiable, "The source range has %d bytes, not the %d of the page range.", src.size, n)
	}
	ext, got, err := s.copyDigested(ctx, src, n, false, spec.want.crc64 != nil)
	if err != nil {
		return err
	}
	if ext.Size != n {
		s.discard(ext.Key)
		return cannotVerify(http.StatusRequestedRangeNotSatisfiable, "The source range has %d bytes, not the %d of the page range.", ext.Size, n)
	}
	if err := spec.want.mismatch(got); err != nil {
		s.discard(ext.Key)
		return err
	}
	preq.Extent = ext
	return s.commitPages(ctx, w, preq, []leasedb.Extent{ext}, got)
}

// commitPages commits a page write whose bytes (if any) are staged, and
// answers it.
func (s *Server) commitPages(ctx context.Context, w http.ResponseWriter, preq leasedb.PageWriteRequest, staged []leasedb.Extent, got sums) error {
	b, leaseRes, err := commitBlob(ctx, s, staged, s.db.WritePages, preq)
	if err != nil {
		return err
	}
	h := w.Header()
	setETagLM(h, b.ETag, b.LastModified)
	setSumHeaders(h, got)
	h.Set("x-ms-blob-sequence-number", strconv.FormatInt(b.SequenceNumber, 10))
	if !preq.Clear {
		h.Set("x-ms-request-server-encrypted", "true")
	}
	if preq.LeaseAction == leasedb.PutLeaseAcquire {
		h.Set("x-ms-lease-id", leaseRes.ID)
	}
	w.WriteHeader(http.StatusCreated)
	s.maybeCompact(preq.Ref, len(b.Extents))
	return nil
}

// parsePageProps reads the page blob part of Set Blob Properties.
// x-ms-sequence-number-action max and update need x-ms-blob-sequence-number
// (400 MissingRequiredHeader); increment takes none (400
// InvalidHeaderValue when sent).
func parsePageProps(h http.Header) (leasedb.PageProps, error) {
	p := leasedb.PageProps{Resize: -1}
	if v := h.Get("x-ms-blob-content-length"); v != "" {
		n, err := parsePageLength(v)
		if err != nil {
			return p, err
		}
		p.Resize = n
	}
	seq, err := int64Header(h, "x-ms-blob-sequence-number")
	if err != nil {
		return p, err
	}
	switch a := h.Get("x-ms-sequence-number-action"); a {
	case "":
		if seq >= 0 {
			return p, svcerr.Header(svcerr.MissingRequiredHeader, "x-ms-sequence-number-action", "")
		}
	case leasedb.SeqMax, leasedb.SeqUpdate:
		if seq < 0 {
			return p, svcerr.Header(svcerr.MissingRequiredHeader, "x-ms-blob-sequence-number", "")
		}
		p.SeqAction, p.Seq = a, seq
	case leasedb.SeqIncrement:
		if seq >= 0 {
			return p, svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-blob-sequence-number", h.Get("x-ms-blob-sequence-number"))
		}
		p.SeqAction = a
	default:
		return p, svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-sequence-number-action", a)
	}
	return p, nil
}

// sendsContentProps reports whether a Set Blob Properties request sends
// any of the x-ms-blob-content-* set: Azure replaces the set together
// when one of them is sent, and keeps it when none is (a resize or a
// sequence number update alone changes no content property).
func sendsContentProps(h http.Header) bool {
	for _, k := range []string{"x-ms-blob-content-type", "x-ms-blob-content-encoding", "x-ms-blob-content-language",
		"x-ms-blob-content-disposition", "x-ms-blob-cache-control", "x-ms-blob-content-md5"} {
		if _, ok := h[http.CanonicalHeaderKey(k)]; ok {
			return true
		}
	}
	return false
}

// setPageBlobProperties is Set Blob Properties with a resize or a sequence
// number action; it answers x-ms-blob-sequence-number.
func (s *Server) setPageBlobProperties(w http.ResponseWriter, r *http.Request, req *request, pp leasedb.PageProps) error {
	cond, leaseID, err := blobConds(r)
	if err != nil {
		return err
	}
	var props *leasedb.Props
	if sendsContentProps(r.Header) {
		p, err := parseBlobProps(r.Header, false)
		if err != nil {
			return err
		}
		props = &p
	}
	b, err := s.db.SetPageBlobProperties(r.Context(), req.ref(), leaseID, cond, props, pp)
	if err != nil {
		return err
	}
	h := w.Header()
	setETagLM(h, b.ETag, b.LastModified)
	h.Set("x-ms-blob-sequence-number", strconv.FormatInt(b.SequenceNumber, 10))
	w.WriteHeader(http.StatusOK)
	return nil
}

// xmlPageList is Get Page Ranges' body. Written and cleared ranges are
// elements of one sequence, in blob order.
type xmlPageList struct {
	XMLName    xml.Name `xml:"PageList"`
	Ranges     []xmlPageRange
	NextMarker *string `xml:"NextMarker,omitempty"`
}

type xmlPageRange struct {
	XMLName xml.Name
	Start   int64 `xml:"Start"`
	End     int64 `xml:"End"`
}

// Get Page Ranges: GET ?comp=pagelist [&snapshot=] [&prevsnapshot=] →
// 200, the written ranges (Range / x-ms-range narrows them; inclusive
// ends), or with prevsnapshot the ranges written (PageRange) and cleared
// (ClearRange) since that snapshot. marker / maxresults page through
// them: the marker is the blob offset to go on from.
func (s *Server) getPageRanges(w http.ResponseWriter, r *http.Request, req *request) error {
	prevURL, hasPrevURL, err := s.previousSnapshotURL(r, req)
	if err != nil {
		return err
	}
	ctx := r.Context()
	cond, leaseID, err := blobConds(r)
	if err != nil {
		return err
	}
	limit := 0
	if v, ok := req.query["maxresults"]; ok {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 {
			return svcerr.Query(svcerr.InvalidQueryParameterValue, "maxresults", v, "")
		}
	}
	var from int64
	if v := req.query["marker"]; v != "" {
		if from, err = strconv.ParseInt(v, 10, 64); err != nil || from < 0 {
			return svcerr.Query(svcerr.InvalidQueryParameterValue, "marker", v, "")
		}
	}
	var b *leasedb.Blob
	var snap string
	if v, ok := req.query["snapshot"]; ok {
		if snap, err = leasedb.ParseSnapshot(v); err != nil {
			return err
		}
		b, _, err = s.db.GetSnapshot(ctx, req.ref(), snap, cond)
	} else {
		b, _, err = s.db.GetBlob(ctx, req.ref(), leaseID, cond)
	}
	if leasedb.IsNotModified(err) {
		setETagLM(w.Header(), b.ETag, b.LastModified)
	}
	if err != nil {
		return err
	}
	if b.Type != "PageBlob" {
		return svcerr.New(svcerr.InvalidBlobType)
	}
	if b.Snapshot == "" && b.IsIncrementalCopy() {
		// Read through its snapshots, as Get Blob.
		return svcerr.New(svcerr.OperationNotAllowedOnIncrementalCopyBlob)
	}
	start, end, _, err := parseRange(r.Header, b.Size)
	if err != nil {
		return err
	}
	start = max(start, from)
	var ranges []leasedb.PageRange
	v, ok := req.query["prevsnapshot"]
	if hasPrevURL {
		v, ok = prevURL, true
	}
	if ok {
		prev, err := leasedb.ParseSnapshot(v)
		if err != nil {
			return svcerr.Query(svcerr.InvalidQueryParameterValue, "prevsnapshot", v, "")
		}
		if snap != "" && prev >= snap {
			// Snapshot ids of one name sort by time in byte order.
			return svcerr.New(svcerr.PreviousSnapshotCannotBeNewer)
		}
		pb, _, err := s.db.GetSnapshot(ctx, req.ref(), prev, leasedb.Conditions{})
		if svcerr.HasCode(err, svcerr.BlobNotFound) {
			return svcerr.New(svcerr.PreviousSnapshotNotFound)
		}
		if err != nil {
			return err
		}
		ranges = leasedb.DiffPageRanges(pb.Extents, b.Extents, start, end)
	} else {
		ranges = leasedb.PageRanges(b.Extents, start, end)
	}
	out := xmlPageList{Ranges: make([]xmlPageRange, 0, len(ranges))}
	for i, pr := range ranges {
		if limit > 0 && i == limit {
			next := strconv.FormatInt(pr.Start, 10)
			out.NextMarker = &next
			break
		}
		name := "PageRange"
		if pr.Clear {
			name = "ClearRange"
		}
		out.Ranges = append(out.Ranges, xmlPageRange{XMLName: xml.Name{Local: name}, Start: pr.Start, End: pr.End - 1})
	}
	h := w.Header()
	setETagLM(h, b.ETag, b.LastModified)
	h.Set("x-ms-blob-content-length", strconv.FormatInt(b.Size, 10))
	return writeXML(w, r, http.StatusOK, out)
}

// previousSnapshotURL reads Get Page Ranges' x-ms-previous-snapshot-url,
// the managed disks form of prevsnapshot: the URL of an older snapshot.
// Azure accepts it on managed disk accounts only (a standard account
// answers 400 UnsupportedHeaderForNonManagedDisksAccount). A URL naming a
// snapshot of the same blob in this gateway means what prevsnapshot means,
// so it is answered as that (the snapshot id is returned); any other URL
// (another blob, a base blob, another endpoint) gets the standard
// account's answer, since a diff between two names is what only managed
// disks compute.
func (s *Server) previousSnapshotURL(r *http.Request, req *request) (snap string, ok bool, err error) {
	const name = "x-ms-previous-snapshot-url"
	raw := r.Header.Get(name)
	if raw == "" {
		return "", false, nil
	}
	refuse := svcerr.Header(svcerr.UnsupportedHeaderForNonManagedDisksAccount, name, redactURL(raw))
	refuse.Details = refuse.Details[:1] // Azure names the header only
	if _, both := req.query["prevsnapshot"]; both {
		// One previous snapshot or the other, as the SDKs send them.
		return "", false, svcerr.Header(svcerr.InvalidHeaderValue, name, redactURL(raw))
	}
	u, perr := url.Parse(raw)
	if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", false, svcerr.Header(svcerr.InvalidHeaderValue, name, redactURL(raw))
	}
	ref, local := s.localSource(r, req.peer.https, u)
	v := u.Query().Get("snapshot")
	if !local || ref != req.ref() || v == "" {
		return "", false, refuse
	}
	return v, true, nil
}
