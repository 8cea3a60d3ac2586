package gateway

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"

	"github.com/blobgw/blobgw/backends"
	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
	"github.com/google/uuid"
)

// The copy family: Copy Blob (PUT with x-ms-copy-source and no
// x-ms-blob-type), Copy Blob From URL (the same with x-ms-requires-sync:
// true) and Abort Copy Blob live here; Put Blob From URL, Put Block From
// URL and Append Block From URL in from_url.go. All of them resolve and
// open their source through copy_source.go, stream it with copy_bytes.go,
// and fetch remote sources with the client of copy_dialer.go.
//
// Every copy is finished before the answer: Copy Blob answers 202 with
// x-ms-copy-status: success, never pending, so there is nothing to poll and
// nothing to abort. The source is read from this gateway's own backend
// when the URL names a blob it serves (the source authorized as Azure
// does: its SAS, a public container, or a Shared Key request of the same
// account), else fetched over HTTP(S), and the result is committed by the
// usual PutBlob / StageBlock / AppendBlock transaction with the
// destination's lease and conditions.
//
// A whole local source copied by Copy Blob shares its backend objects with
// the destination row (leasedb keeps a key until the last row referencing
// it lets go); ranges, remote sources, objects adopted from a bucket and
// the From URL operations stream the bytes into a NEW immutable object
// through s.stage. No copy buffers a whole blob in memory.

// copyOp says which copy operation a request is.
type copyOp int

const (
	opCopyBlob        copyOp = iota // Copy Blob (async on Azure)
	opCopyBlobSync                  // Copy Blob From URL
	opPutBlobFromURL                // Put Blob From URL
	opPutBlockFromURL               // Put Block From URL
	opAppendFromURL                 // Append Block From URL
	opPutPageFromURL                // Put Page From URL
	opIncrementalCopy               // Incremental Copy Blob (copy_incremental.go)
)

// fromURL reports whether the operation is one of the "From URL" family,
// whose source failures are all CannotVerifyCopySource (a missing source
// included); an async Copy Blob reports a missing source in this account as
// 404 BlobNotFound, as Azure does.
func (op copyOp) fromURL() bool { return op != opCopyBlob && op != opIncrementalCopy }

// anyAdopted reports whether one of the extents is an object adopted from
// the bucket (blobgw import s3): those back one blob name only (migration
// 0006), so a copy of them copies the bytes.
func (s *Server) anyAdopted(extents []leasedb.Extent) bool {
	a := backends.FeaturesOf(s.backend).AdoptedKeys
	if a == nil {
		return false
	}
	for _, e := range extents {
		if a.IsAdopted(e.Key) {
			return true
		}
	}
	return false
}

// withoutSignature is a copy source URL as recorded on the destination
// (x-ms-copy-source): a SAS keeps its fields but loses its signature.
func withoutSignature(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	q := u.Query()
	for k := range q {
		if strings.EqualFold(k, "sig") {
			q.Del(k)
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Copy Blob: PUT with x-ms-copy-source → 202, x-ms-copy-status: success.
// With x-ms-requires-sync: true it is Copy Blob From URL, same path and
// answer. The destination takes the source's type, properties and (unless
// the request sends x-ms-meta-*) metadata; its own lease is checked as for
// a write and kept across the copy, as on Azure; tags come from x-ms-tags (or the source's with
// x-ms-copy-source-tag-option: COPY on the sync form). A whole blob (or
// snapshot) of this gateway is copied by sharing its backend objects (a
// key is collected when the last blob name referencing it lets go);
// ranges, external sources and adopted objects are streamed into new
// objects.
//
// The destination records the copy (id, source without its SAS signature,
// status success, progress, completion time): Get Blob / Get Blob
// Properties report it as x-ms-copy-* and List Blobs with include=copy,
// until a Put Blob, Put Block List or Set Blob Properties changes the blob.
func (s *Server) copyBlob(w http.ResponseWriter, r *http.Request, req *request) error {
	ctx := r.Context()
	op := opCopyBlob
	sync, _, err := boolHeader(r.Header, "x-ms-requires-sync")
	if err != nil {
		return err
	}
	if sync {
		op = opCopyBlobSync
	}
	// x-ms-seal-blob applies when the source turns out to be an append
	// blob; a value that is not a boolean is refused before any work.
	seal, sealSet, err := boolHeader(r.Header, "x-ms-seal-blob")
	if err != nil {
		return err
	}
	if err := rehydratePriority(r.Header); err != nil {
		return err
	}
	spec, err := parseCopySpec(r, op, math.MaxInt64)
	if err != nil {
		return err
	}
	meta, cond, leaseID, err := metaWriteConds(r, req)
	if err != nil {
		return err
	}
	preq := leasedb.PutBlobRequest{Ref: req.ref(), LeaseID: leaseID, Cond: cond, CreateOnly: req.createOnly,
		Copy: leasedb.CopyTarget{InfiniteLeaseOnly: op == opCopyBlob}}
	if preq.Tags, err = parseTagsHeader(r.Header); err != nil {
		return err
	}
	copyTags, err := copyTagOption(r.Header, op)
	if err != nil {
		return err
	}
	if preq.PutLease, err = parsePutLease(r, leaseID); err != nil {
		return err
	}
	if err := s.db.Precheck(ctx, preq); err != nil {
		return err
	}

	src, err := s.openSource(ctx, r, req, spec)
	if err != nil {
		return err
	}
	defer src.Close()
	preq.Type = src.typ
	switch preq.Type {
	case "":
		preq.Type = "BlockBlob" // a plain HTTP object
	case "BlockBlob":
	case "AppendBlob":
		// Copy Blob From URL: "The source ... can be any committed block
		// blob"; an append blob source is refused as a page blob is.
		if op != opCopyBlob {
			return cannotVerify(http.StatusConflict, "The copy source must be a block blob.")
		}
	case "PageBlob":
		// A page blob of this gateway is copied whole by Copy Blob,
		// sharing its runs: the copy keeps its page ranges, length and
		// sequence number. A remote page blob (read whole by Get Blob)
		// becomes one run of all its bytes, holes as zeros, with the
		// sequence number it reported. Copy Blob From URL takes block
		// blobs only: Azure answers a page blob source 409
		// CannotVerifyCopySource, "The copy source must be a block blob."
		if op != opCopyBlob {
			return cannotVerify(http.StatusConflict, "The copy source must be a block blob.")
		}
		if !src.remote && src.ref == (leasedb.BlobRef{}) {
			return svcerr.Newf(svcerr.InvalidBlobType, "Copying a range of a %s is not supported.", preq.Type)
		}
		preq.PageSize, preq.SequenceNumber = src.size, src.seq
	default:
		return svcerr.Newf(svcerr.InvalidBlobType, "Copying a %s is not supported by this gateway.", preq.Type)
	}
	preq.Copy.SameType = true
	if preq.AccessTier, err = parseTierHeader(r.Header, preq.Type, preq.PageSize); err != nil {
		return err
	}
	preq.Props = src.props
	preq.Metadata = meta
	if len(meta) == 0 {
		preq.Metadata = src.meta
	}
	if copyTags {
		if preq.Tags, err = sourceTags(src); err != nil {
			return err
		}
	}
	if preq.Type == "AppendBlob" {
		preq.Copy.BlockCount = src.blockCount
		// A sealed source makes a sealed copy, unless x-ms-seal-blob
		// says otherwise (it may also seal the copy of an open one).
		preq.Copy.Sealed = src.sealed
		if sealSet {
			preq.Copy.Sealed = seal
		}
	}
	// A whole source in this gateway shares its extents with the new row:
	// nothing is copied. When the source changes before the commit, the
	// bytes are copied after all.
	var b *leasedb.Blob
	var leaseRes leasedb.LeaseResult
	var sum []byte
	copyID := uuid.NewString()
	record := func(n int64) *leasedb.CopyInfo {
		return &leasedb.CopyInfo{ID: copyID, Source: withoutSignature(spec.raw), Status: "success",
			Progress: fmt.Sprintf("%d/%d", n, n)}
	}
	// (The sync form answers with the bytes' MD5, and x-ms-source-content-md5
	// is checked against it: both need the stored MD5, or a copy.)
	knownMD5 := src.props.ContentMD5 != nil || op == opCopyBlob && r.Header.Get("x-ms-source-content-md5") == ""
	if src.extents != nil && knownMD5 && !s.anyAdopted(src.extents) {
		shared := preq
		shared.Extents = src.extents
		shared.Copy.SharedExtents = true
		shared.Copy.Source = src.ref
		shared.Copy.Info = record(src.size)
		sum = src.props.ContentMD5
		if err := checkSourceMD5(r.Header, sum); err != nil {
			return err
		}
		var err error
		b, leaseRes, err = commitBlob(ctx, s, nil, s.db.PutBlob, shared)
		if err != nil && !errors.Is(err, leasedb.ErrSourceGone) {
			return err
		}
	}
	if b == nil {
		ext, digest, err := s.copyChecked(ctx, r, src, spec.max)
		if err != nil {
			return err
		}
		sum = digest
		preq.Extents = extentsOf(ext)
		if preq.Type == "PageBlob" {
			if ext.Size%leasedb.PageSize != 0 {
				// Not a page blob's length: the source is not what it says.
				s.discardAll(preq.Extents)
				return cannotVerify(http.StatusConflict, "The copy source's %d bytes are not a page blob's length (a multiple of 512).", ext.Size)
			}
			preq.PageSize = ext.Size
		}
		if preq.Type == "AppendBlob" && src.remote && ext.Size > 0 {
			preq.Copy.BlockCount = 1
		}
		preq.Copy.Info = record(ext.Size)
		b, leaseRes, err = commitBlob(ctx, s, preq.Extents, s.db.PutBlob, preq)
		if err != nil {
			return err
		}
	}
	h := w.Header()
	setETagLM(h, b.ETag, b.LastModified)
	setVersionID(h, b)
	h.Set("x-ms-copy-id", copyID)
	h.Set("x-ms-copy-status", "success")
	if op == opCopyBlobSync && sum != nil {
		h.Set("Content-MD5", b64(sum))
	}
	if preq.LeaseAction == leasedb.PutLeaseAcquire {
		h.Set("x-ms-lease-id", leaseRes.ID)
	}
	w.WriteHeader(http.StatusAccepted)
	return nil
}

// copyTagOption reads x-ms-copy-source-tag-option: REPLACE (default: tags
// from x-ms-tags) or COPY (the source's tags; sync forms only).
func copyTagOption(h http.Header, op copyOp) (bool, error) {
	v := h.Get("x-ms-copy-source-tag-option")
	switch {
	case v == "" || strings.EqualFold(v, "REPLACE"):
		return false, nil
	case strings.EqualFold(v, "COPY") && op != opCopyBlob:
		if h.Get("x-ms-tags") != "" {
			return false, svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-tags", h.Get("x-ms-tags"))
		}
		return true, nil
	}
	return false, svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-copy-source-tag-option", v)
}

// sourceTags is what x-ms-copy-source-tag-option: COPY gives the
// destination: the source's tags. A remote source's Get Blob reports how
// many tags it has (x-ms-tag-count) but not the tags, so a remote source
// with tags is refused rather than copied without them.
func sourceTags(src *copySource) (map[string]string, error) {
	if src.remoteTags > 0 {
		e := svcerr.Header(svcerr.NotImplemented, "x-ms-copy-source-tag-option", "COPY")
		e.Message = "Copying the tags of a copy source outside this gateway is not implemented."
		return nil, e
	}
	return src.tags, nil
}

// Abort Copy Blob: PUT ?comp=copy&copyid=<id> with x-ms-copy-action: abort.
// Copies finish before Copy Blob answers, so there is never a pending copy:
// an existing destination whose lease the request satisfies gets 409
// NoPendingCopyOperation.
func (s *Server) abortCopy(w http.ResponseWriter, r *http.Request, req *request) error {
	switch v := r.Header.Get("x-ms-copy-action"); {
	case v == "":
		return svcerr.Header(svcerr.MissingRequiredHeader, "x-ms-copy-action", "")
	case !strings.EqualFold(v, "abort"):
		return svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-copy-action", v)
	}
	if req.query["copyid"] == "" {
		return svcerr.Query(svcerr.InvalidQueryParameterValue, "copyid", "", "a copy id is required")
	}
	leaseID, err := leaseIDHeader(r.Header)
	if err != nil {
		return err
	}
	b, now, err := s.db.GetBlob(r.Context(), req.ref(), "", leasedb.Conditions{})
	if err != nil {
		return err
	}
	// Abort Copy Blob checks the destination's lease as a write does
	// (x-ms-lease-id required on a leased blob).
	if _, err := leasedb.CheckWriteLease(b.Lease, leaseID, leasedb.BlobTarget, now); err != nil {
		return err
	}
	return svcerr.New(svcerr.NoPendingCopyOperation)
}
