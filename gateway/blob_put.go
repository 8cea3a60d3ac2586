package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/blobgw/blobgw/internal/failpoint"
	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

// Put Blob: PUT /<container>/<blob> with x-ms-blob-type → 201. The write
// path of docs/architecture.md: pre-check without locks, record the upload intent,
// stream the body to a new key while counting and hashing, then commit in
// one locked transaction; a refused commit deletes the staged object.
func (s *Server) putBlob(w http.ResponseWriter, r *http.Request, req *request) error {
	ctx := r.Context()
	blobType := hdrGet(r.Header, "x-ms-blob-type")
	switch blobType {
	case "BlockBlob", "AppendBlob", "PageBlob":
	case "":
		return svcerr.Header(svcerr.MissingRequiredHeader, "x-ms-blob-type", "")
	default:
		return svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-blob-type", blobType)
	}
	size := r.ContentLength
	if size < 0 {
		return svcerr.New(svcerr.MissingContentLengthHeader)
	}
	if size > s.opt.MaxPutBlobSize {
		return svcerr.New(svcerr.RequestBodyTooLarge)
	}
	if blobType != "BlockBlob" && size != 0 {
		// An append or page blob is created empty (a page blob's pages
		// read as zeros until Put Page writes them).
		return svcerr.Header(svcerr.InvalidHeaderValue, "Content-Length", fmt.Sprint(size))
	}
	want, err := transactionalSums(r.Header)
	if err != nil {
		return err
	}
	props, err := parseBlobProps(r.Header, true)
	if err != nil {
		return err
	}
	meta, err := parseMetadata(r.Header, req.metaNames)
	if err != nil {
		return err
	}
	cond, leaseID, err := blobConds(r)
	if err != nil {
		return err
	}
	preq := leasedb.PutBlobRequest{Ref: req.ref(), Type: blobType, BlobContent: leasedb.BlobContent{Props: props, Metadata: meta}, LeaseID: leaseID, Cond: cond}
	if preq.Tags, err = parseTagsHeader(r.Header); err != nil {
		return err
	}
	if preq.PutLease, err = parsePutLease(r, leaseID); err != nil {
		return err
	}
	preq.CreateOnly = req.createOnly
	if blobType == "PageBlob" {
		if preq.PageSize, preq.SequenceNumber, err = parsePageBlobCreate(r.Header); err != nil {
			return err
		}
	}
	// After the page blob length: a premium tier must hold it.
	if preq.AccessTier, err = parseTierHeader(r.Header, blobType, preq.PageSize); err != nil {
		return err
	}

	// Pre-check (its own read transaction): a request that will certainly
	// fail does so before any byte is read. It pays only where it saves
	// reading a large body or the client waits for our word before it
	// sends one (Expect: 100-continue); a small body is read first and the
	// commit decides. Where it was skipped and the request fails before
	// the commit, it runs then (late), so the answer is what it would have
	// been: its refusals come before those of the body.
	early := precheckFirst(r, size)
	if early {
		if err := s.db.Precheck(ctx, preq); err != nil {
			return err
		}
	}
	late := func(err error) error {
		if !early {
			// Only a refusal of the request counts: a failure of the
			// pre-check itself (the client gone, the database down)
			// leaves the body's error to answer.
			if perr := s.db.Precheck(ctx, preq); perr != nil {
				if _, ok := svcerr.As(perr); ok {
					return perr
				}
			}
		}
		return err
	}

	var got sums
	if size > 0 {
		// A small block blob is kept in the row (blob_inline.go): no
		// intent, no object.
		var ext leasedb.Extent
		var digests sums
		var err error
		if s.inlineBody(blobType, size) {
			// A pooled buffer, given back when putBlob returns: by then
			// the commit has encoded the bytes into the row's text, and
			// nothing of the request (preq, the committed row b) is
			// reachable any more.
			ib := s.getInlineBuf()
			defer s.putInlineBuf(ib)
			ext, digests, err = readInlinePooled(ib, r.Body, size, want.crc64 != nil)
		} else {
			ext, digests, err = s.stage(ctx, r.Body, size, true, want.crc64 != nil)
		}
		if err != nil {
			return late(err)
		}
		got = digests
		preq.Extents = []leasedb.Extent{ext}
		if err := want.mismatch(got); err != nil {
			s.discard(ext.Key)
			preq.Extents = nil
			return late(err)
		}
	} else {
		d := newDigester(true, want.crc64 != nil)
		got = d.sums()
		if err := want.mismatch(got); err != nil {
			return late(err)
		}
	}
	sum := got.md5
	if blobType == "BlockBlob" {
		// Put Blob of a block blob: x-ms-blob-content-md5 and Content-MD5
		// are interchangeable (Azure checks either against the body), so
		// the blob never carries an MD5 its bytes contradict.
		if m := preq.Props.ContentMD5; m != nil && !bytes.Equal(m, sum) {
			for _, e := range preq.Extents {
				s.discard(e.Key)
			}
			preq.Extents = nil
			return late(svcerr.New(svcerr.Md5Mismatch))
		}
		preq.Props.ContentMD5 = sum
	}
	b, leaseRes, err := commitBlob(ctx, s, preq.Extents, s.db.PutBlob, preq)
	if err != nil {
		return err
	}
	// Canonical names, each header set once (headerVals).
	h := req.headers(w)
	h.setETagLM(b.ETag, b.LastModified)
	if b.VersionID != "" {
		h.set("X-Ms-Version-Id", b.VersionID) // setVersionID
	}
	if blobType == "BlockBlob" {
		h.set("Content-Md5", b64(sum))
	}
	if got.crc64 != nil {
		h.set("X-Ms-Content-Crc64", b64(got.crc64))
	}
	h.set("X-Ms-Request-Server-Encrypted", "true")
	if preq.LeaseAction == leasedb.PutLeaseAcquire {
		h.set("X-Ms-Lease-Id", leaseRes.ID)
	}
	w.WriteHeader(http.StatusCreated)
	return nil
}

// precheckBodyMin is the body size above which Put Blob and Put Block run
// their pre-check before they read the body: reading and staging up to
// 1 MiB that a refusal would discard costs about what the pre-check's own
// transaction costs every request, so below it the commit alone decides.
const precheckBodyMin = 1 << 20

// precheckFirst reports whether a Put Blob (or Put Block) of size bytes runs its
// pre-check before reading the body: a body over precheckBodyMin, or a
// client that sent Expect: 100-continue (it waits for our word before it
// sends the body, and a refusal then spares it sending the body at all).
func precheckFirst(r *http.Request, size int64) bool {
	if size > precheckBodyMin {
		return true
	}
	for _, v := range r.Header.Values("Expect") {
		if strings.Contains(strings.ToLower(v), "100-continue") {
			return true
		}
	}
	return false
}

// stage takes a new key whose upload intent is recorded (keyPool) and
// streams body into the backend under it, counting as it goes and
// computing the digests asked for (MD5, CRC64) of the bytes. size -1 (a
// copy source of unknown length) takes what the body yields. On failure
// nothing stays behind except an intent the collector will find.
func (s *Server) stage(ctx context.Context, body io.Reader, size int64, md5Sum, crcSum bool) (leasedb.Extent, sums, error) {
	key, err := s.keys.take(ctx)
	if err != nil {
		return leasedb.Extent{}, sums{}, err
	}
	hr := &hashingReader{r: body, limit: size, d: newBodyDigester(size, md5Sum, crcSum)}
	defer hr.d.close() // after the sums of the return below
	if err := s.backend.Put(ctx, key, hr, size); err != nil {
		s.discard(key)
		if e, ok := svcerr.As(hr.err); ok {
			return leasedb.Extent{}, sums{}, e // the body stalled (limits.go)
		}
		if hr.err != nil {
			// The client's body failed (disconnect, short body).
			if errors.Is(hr.err, io.ErrUnexpectedEOF) || hr.n < size {
				return leasedb.Extent{}, sums{}, svcerr.Newf(svcerr.InvalidInput, "The request body is shorter than Content-Length.")
			}
			return leasedb.Extent{}, sums{}, fmt.Errorf("reading request body: %w", hr.err)
		}
		if size >= 0 && hr.n > size {
			return leasedb.Extent{}, sums{}, svcerr.Newf(svcerr.InvalidInput, "The request body is longer than Content-Length.")
		}
		return leasedb.Extent{}, sums{}, fmt.Errorf("backend put: %w", err)
	}
	if size >= 0 && hr.n != size {
		s.discard(key)
		return leasedb.Extent{}, sums{}, svcerr.Newf(svcerr.InvalidInput, "The request body length does not match Content-Length.")
	}
	return leasedb.Extent{Key: key, Size: hr.n}, hr.d.sums(), nil
}

// commitTimeout bounds a commit that the client can no longer cancel
// (a variable for tests only).
var commitTimeout = time.Minute

// commit runs fn, the transaction that commits the staged extents, detached
// from the client's context (a client that goes away never aborts a commit
// half-way) and bounded by commitTimeout. When fn fails, the staged objects
// are deleted only if the transaction certainly did not commit. When its
// outcome is unknown (leasedb.MayHaveCommitted: the connection was lost
// after COMMIT was sent), a row may point at them: they are left to their
// upload intents, which a commit removes in its own transaction, so the
// collector deletes them after the intent's deadline exactly when the
// commit did not happen.
//
// A commit still running at commitTimeout (a lock held that long, a
// database too slow) is the metadata store's overload, not the request's
// fault nor a bug: leasedb.ErrUnavailable, 503 ServerBusy, which clients
// retry. The stores send COMMIT detached from the context, each bounded
// on its own, so the deadline ends only statements before COMMIT and the
// transaction certainly did not commit: the staged objects are deleted.
// A COMMIT cut by its own bound carries leasedb.ErrCommitUnknown and keeps
// them.
func (s *Server) commit(ctx context.Context, staged []leasedb.Extent, fn func(ctx context.Context) error) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer cancel()
	// Crash tests: the bytes are in the backend, the commit not begun.
	failpoint.Inject("after-stage")
	err := fn(cctx)
	if err == nil {
		return nil
	}
	if errors.Is(cctx.Err(), context.DeadlineExceeded) && !errors.Is(err, leasedb.ErrUnavailable) {
		err = fmt.Errorf("%w: commit still running after %v: %w", leasedb.ErrUnavailable, commitTimeout, err)
	}
	if leasedb.MayHaveCommitted(err) {
		keys := make([]string, 0, len(staged))
		for _, e := range staged {
			if e.Key != "" {
				keys = append(keys, e.Key)
			}
		}
		s.log.Warn("commit outcome unknown: staged objects left to their upload intents", "keys", keys, "err", err)
		return err
	}
	s.discardAll(staged)
	return err
}

// commitBlob is Server.commit around a store write that answers with the
// blob row and the lease outcome: PutBlob (Put Blob, the copies, Put Blob
// From URL) and WritePages (Put Page, its clear and From URL forms).
func commitBlob[R any](ctx context.Context, s *Server, staged []leasedb.Extent,
	write func(context.Context, R) (*leasedb.Blob, leasedb.LeaseResult, error), req R) (*leasedb.Blob, leasedb.LeaseResult, error) {
	var b *leasedb.Blob
	var leaseRes leasedb.LeaseResult
	err := s.commit(ctx, staged, func(ctx context.Context) (err error) {
		b, leaseRes, err = write(ctx, req)
		return err
	})
	return b, leaseRes, err
}

// discard deletes a staged object that will never be committed and drops
// its intent. It runs detached from the request context: the client may be
// gone, but the cleanup must still happen (if it fails, the intent's
// deadline lets the collector finish the job).
func (s *Server) discard(key string) {
	if key == "" {
		return // an inline extent: no object, no intent
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.backend.Delete(ctx, key); err != nil {
		s.log.Warn("discard staged object", "key", key, "err", err)
		return
	}
	if _, err := s.db.Store.Forget(ctx, []string{key}); err != nil {
		s.log.Warn("forget intent", "key", key, "err", err)
	}
}

// discardAll discards the staged objects of extents.
func (s *Server) discardAll(extents []leasedb.Extent) {
	for _, e := range extents {
		s.discard(e.Key)
	}
}

// hashingReader counts and digests what it passes through and remembers the
// source's error so the handler can tell a client failure from a backend
// failure.
type hashingReader struct {
	r     io.Reader
	d     *digester
	n     int64
	limit int64
	err   error
}

func (hr *hashingReader) Read(p []byte) (int, error) {
	n, err := hr.r.Read(p)
	if n > 0 {
		hr.d.Write(p[:n])
		hr.n += int64(n)
	}
	if err != nil && err != io.EOF {
		hr.err = err
	}
	if err == io.EOF && hr.n < hr.limit {
		hr.err = io.ErrUnexpectedEOF
	}
	return n, err
}
