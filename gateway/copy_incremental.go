package gateway

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
	"github.com/google/uuid"
)

// incrementalRefused are request headers Incremental Copy Blob does not
// take (Azure's request has the destination's If-* conditions and
// x-ms-copy-source only); they would otherwise be dropped.
var incrementalRefused = []string{"x-ms-access-tier", "x-ms-tags", "x-ms-requires-sync",
	"x-ms-source-if-modified-since", "x-ms-source-if-unmodified-since", "x-ms-source-if-match", "x-ms-source-if-none-match"}

// Incremental Copy Blob: PUT ?comp=incrementalcopy with x-ms-copy-source
// naming a SNAPSHOT of a page blob → 202, x-ms-copy-status: success. The
// destination becomes (or stays) an incremental copy blob of that source:
// its page map, length, sequence number, properties and metadata are the
// snapshot's, sharing its objects (no byte is copied), and the commit
// takes a snapshot of the destination, reported as
// x-ms-copy-destination-snapshot by Get Blob Properties. The destination
// is then read through its snapshots and takes only further incremental
// copies of newer snapshots of the same source (leasedb/incremental.go).
//
// The source must be in this gateway: a remote one is 409
// CannotVerifyCopySource, the code Azure gives a source it cannot read.
// It must be public or carry a SAS, as Azure requires, even within one
// account.
func (s *Server) incrementalCopy(w http.ResponseWriter, r *http.Request, req *request) error {
	ctx := r.Context()
	if r.Header.Get("x-ms-copy-source") == "" {
		return svcerr.Header(svcerr.MissingRequiredHeader, "x-ms-copy-source", "")
	}
	if err := zeroBody(r); err != nil {
		return err
	}
	if _, e := unsupportedHeader(r.Header, incrementalRefused); e != nil {
		return e
	}
	for k := range r.Header {
		if strings.HasPrefix(strings.ToLower(k), "x-ms-meta-") {
			// The destination takes the source snapshot's metadata.
			return svcerr.Header(svcerr.UnsupportedHeader, strings.ToLower(k), r.Header.Get(k))
		}
	}
	spec, err := parseCopySpec(r, opIncrementalCopy, math.MaxInt64)
	if err != nil {
		return err
	}
	if spec.ranged {
		return svcerr.Header(svcerr.UnsupportedHeader, "x-ms-source-range", r.Header.Get("x-ms-source-range"))
	}
	v := spec.u.Query().Get("snapshot")
	if v == "" {
		return svcerr.New(svcerr.IncrementalCopySourceMustBeSnapshot)
	}
	snap, err := leasedb.ParseSnapshot(v)
	if err != nil {
		return svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-copy-source", redactURL(spec.raw))
	}
	ref, local := s.localSource(r, req.peer.https, spec.u)
	if !local {
		return cannotVerify(http.StatusConflict, "Incremental Copy Blob from a source outside this gateway (%s) is not supported.", redactURL(spec.raw))
	}
	cond, leaseID, err := blobConds(r)
	if err != nil {
		return err
	}
	copyID := uuid.NewString()
	info := &leasedb.CopyInfo{ID: copyID, Source: withoutSignature(spec.raw), Status: "success",
		Incremental: true, SourceName: ref.Account + "/" + ref.Container + "/" + ref.Name, SourceSnapshot: snap}
	preq := leasedb.PutBlobRequest{Ref: req.ref(), LeaseID: leaseID, Cond: cond, Type: "PageBlob", CreateOnly: req.createOnly,
		Copy: leasedb.CopyTarget{Incremental: true, Info: info}}
	if err := s.db.Precheck(ctx, preq); err != nil {
		return err
	}
	src, err := s.openSource(ctx, r, req, spec)
	if err != nil {
		return err
	}
	src.Close() // the runs are shared, never read
	if src.typ != "PageBlob" {
		return svcerr.Newf(svcerr.InvalidBlobType, "The source of an incremental copy must be a page blob snapshot, not a %s.", src.typ)
	}
	info.Progress = fmt.Sprintf("%d/%d", src.size, src.size)
	preq.Extents = src.extents
	preq.Copy.SharedExtents = true
	preq.Copy.Source = src.ref
	preq.PageSize, preq.SequenceNumber = src.size, src.seq
	preq.Props, preq.Metadata = src.props, src.meta
	b, _, err := commitBlob(ctx, s, nil, s.db.PutBlob, preq)
	if errors.Is(err, leasedb.ErrSourceGone) {
		// The snapshot went between the read and the commit.
		return svcerr.New(svcerr.BlobNotFound)
	}
	if err != nil {
		return err
	}
	h := w.Header()
	setETagLM(h, b.ETag, b.LastModified)
	h.Set("x-ms-copy-id", copyID)
	h.Set("x-ms-copy-status", "success")
	w.WriteHeader(http.StatusAccepted)
	return nil
}
