package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/xml"
	"io"
	"net/http"
	"strconv"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

// Size limits for the current service versions (2019-12-12 and later):
// Put Block 4000 MiB, Append Block 100 MiB, and the largest Put Block List
// body accepted.
const (
	maxBlockSize       = 4000 << 20
	maxAppendBlockSize = 100 << 20
	maxBlockListBody   = 8 << 20
)

// readBody stages a request body of exactly size bytes under a new key for
// Put Block and Append Block. The digests the client sends (Content-MD5,
// x-ms-content-crc64) are computed, checked and returned; a request that
// sends neither gets the CRC64 of its bytes, as the service returns it
// since version 2019-02-02 (it echoes a block's Content-MD5 only when the
// request carried one). MD5 is never computed unasked: hashing every
// block costs a core's worth of throughput, CRC64 a fraction of it.
// With inline the body is read into memory as an inline extent instead
// (readExtent; Append Block of a small body, appendInline).
func (s *Server) readBody(r *http.Request, size int64, inline bool) (leasedb.Extent, sums, error) {
	want, err := transactionalSums(r.Header)
	if err != nil {
		return leasedb.Extent{}, sums{}, err
	}
	ext, got, err := s.readExtent(r.Context(), r.Body, size, inline, want.md5 != nil, want.crc64 != nil || want.md5 == nil)
	if err != nil {
		return ext, sums{}, err
	}
	if err := want.mismatch(got); err != nil {
		s.discard(ext.Key)
		return ext, sums{}, err
	}
	return ext, got, nil
}

// parseBlockID checks a Put Block blockid: base64, at most 64 bytes
// decoded. Either failure is 400 InvalidBlockId, the code of Azure's error
// table (Azurite answers InvalidQueryParameterValue / OutOfRangeInput).
func parseBlockID(req *request) (string, error) {
	id, ok := req.query["blockid"]
	if !ok || id == "" {
		return "", svcerr.Query(svcerr.InvalidQueryParameterValue, "blockid", id, "a block id is required")
	}
	raw, err := base64.StdEncoding.DecodeString(id)
	if err != nil || len(raw) == 0 || len(raw) > 64 {
		return "", svcerr.New(svcerr.InvalidBlockId)
	}
	return id, nil
}

// Put Block: PUT ?comp=block&blockid=<id> → 201. The block is its own
// immutable object, recorded as staged for the blob name.
func (s *Server) putBlock(w http.ResponseWriter, r *http.Request, req *request) error {
	id, err := parseBlockID(req)
	if err != nil {
		return err
	}
	size := r.ContentLength
	if size <= 0 {
		// Azure answers a Put Block of Content-Length: 0 as one without
		// the header: 411 MissingContentLengthHeader naming
		// Content-Length. A block is never empty.
		e := svcerr.New(svcerr.MissingContentLengthHeader)
		e.Details = [][2]string{{"HeaderName", "Content-Length"}}
		return e
	}
	if size > maxBlockSize {
		return svcerr.New(svcerr.RequestBodyTooLarge)
	}
	leaseID, err := leaseIDHeader(r.Header)
	if err != nil {
		return err
	}
	if _, err := noConditions.parseOnly(r.Header); err != nil {
		return err
	}
	// The pre-check (a read of its own) runs first only where
	// it pays, as Put Blob's does (precheckFirst): a small body is read
	// and staged first and the commit decides, with the pre-check's
	// rules and codes. A request whose body fails runs it late, so its
	// refusals still come before the body's.
	ctx := r.Context()
	early := precheckFirst(r, size)
	if early {
		if err := s.db.PrecheckBlock(ctx, req.ref(), leaseID); err != nil {
			return err
		}
	}
	ext, sum, err := s.readBody(r, size, false)
	if err != nil {
		if !early {
			// Only a refusal of the request counts: a failure of the
			// pre-check itself leaves the body's error to answer.
			if perr := s.db.PrecheckBlock(ctx, req.ref(), leaseID); perr != nil {
				if _, ok := svcerr.As(perr); ok {
					return perr
				}
			}
		}
		return err
	}
	return s.stageBlock(ctx, w, req, leaseID, id, ext, sum)
}

// stageBlock commits ext, written to the backend, as the staged block id
// of the blob req names (Put Block, Put Block From URL), and answers 201
// with the digests of the bytes.
func (s *Server) stageBlock(ctx context.Context, w http.ResponseWriter, req *request, leaseID, id string, ext leasedb.Extent, sum sums) error {
	err := s.commit(ctx, []leasedb.Extent{ext}, func(ctx context.Context) error {
		return s.db.StageBlock(ctx, leasedb.StageBlockRequest{
			Ref: req.ref(), LeaseID: leaseID,
			Block: leasedb.Block{ID: id, Key: ext.Key, Size: ext.Size},
		})
	})
	if err != nil {
		return err
	}
	h := w.Header()
	setSumHeaders(h, sum)
	h.Set("x-ms-request-server-encrypted", "true")
	w.WriteHeader(http.StatusCreated)
	return nil
}

// parseBlockList reads a Put Block List body keeping the element order,
// which is the blob's byte order.
func parseBlockList(body []byte) ([]leasedb.BlockRef, error) {
	dec := xml.NewDecoder(bytes.NewReader(body))
	var out []leasedb.BlockRef
	depth := 0
	sawRoot := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, svcerr.New(svcerr.InvalidXmlDocument)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			if depth == 1 {
				if sawRoot {
					// A second root: not one XML document.
					return nil, svcerr.New(svcerr.InvalidXmlDocument)
				}
				if t.Name.Local != "BlockList" {
					return nil, svcerr.New(svcerr.InvalidXmlDocument)
				}
				sawRoot = true
				continue
			}
			if depth != 2 {
				return nil, svcerr.New(svcerr.InvalidXmlDocument)
			}
			var kind leasedb.BlockListKind
			switch t.Name.Local {
			case "Committed":
				kind = leasedb.BlockCommitted
			case "Uncommitted":
				kind = leasedb.BlockUncommitted
			case "Latest":
				kind = leasedb.BlockLatest
			default:
				return nil, svcerr.New(svcerr.InvalidXmlDocument)
			}
			var id string
			if err := dec.DecodeElement(&id, &t); err != nil {
				return nil, svcerr.New(svcerr.InvalidXmlDocument)
			}
			depth--
			if _, err := base64.StdEncoding.DecodeString(id); err != nil || id == "" {
				return nil, svcerr.New(svcerr.InvalidBlockList)
			}
			out = append(out, leasedb.BlockRef{Kind: kind, ID: id})
		case xml.EndElement:
			depth--
		case xml.CharData:
			if len(bytes.TrimSpace(t)) != 0 {
				// Text outside the root element, or in it between the
				// block elements: not the BlockList document.
				return nil, svcerr.New(svcerr.InvalidXmlDocument)
			}
		}
	}
	if !sawRoot {
		return nil, svcerr.New(svcerr.InvalidXmlDocument)
	}
	// One id, one element kind: Put Block List refuses an id listed under
	// two different kinds (say Committed and Latest) as InvalidBlockList.
	kinds := map[string]leasedb.BlockListKind{}
	for _, b := range out {
		if k, ok := kinds[b.ID]; ok && k != b.Kind {
			return nil, svcerr.New(svcerr.InvalidBlockList)
		}
		kinds[b.ID] = b.Kind
	}
	return out, nil
}

// Put Block List: PUT ?comp=blocklist → 201.
func (s *Server) putBlockList(w http.ResponseWriter, r *http.Request, req *request) error {
	body, err := readSmallBody(r, maxBlockListBody)
	if err != nil {
		return err
	}
	got, err := bodySums(r.Header, body)
	if err != nil {
		return err
	}
	blocks, err := parseBlockList(body)
	if err != nil {
		return err
	}
	props, err := parseBlobProps(r.Header, false)
	if err != nil {
		return err
	}
	meta, cond, leaseID, err := metaWriteConds(r, req)
	if err != nil {
		return err
	}
	creq := leasedb.CommitBlocksRequest{Ref: req.ref(), Blocks: blocks, BlobContent: leasedb.BlobContent{Props: props, Metadata: meta},
		LeaseID: leaseID, Cond: cond, CreateOnly: req.createOnly}
	if creq.PutLease, err = parsePutLease(r, leaseID); err != nil {
		return err
	}
	if creq.Tags, err = parseTagsHeader(r.Header); err != nil {
		return err
	}
	if creq.AccessTier, err = parseTierHeader(r.Header, "BlockBlob", 0); err != nil {
		return err
	}
	b, leaseRes, err := s.db.CommitBlocks(r.Context(), creq)
	if err != nil {
		return err
	}
	h := w.Header()
	setETagLM(h, b.ETag, b.LastModified)
	setVersionID(h, b)
	setSumHeaders(h, got)
	h.Set("x-ms-request-server-encrypted", "true")
	if creq.LeaseAction == leasedb.PutLeaseAcquire {
		h.Set("x-ms-lease-id", leaseRes.ID)
	}
	w.WriteHeader(http.StatusCreated)
	return nil
}

type xmlBlock struct {
	Name string `xml:"Name"`
	Size int64  `xml:"Size"`
}

type xmlBlockList struct {
	XMLName     xml.Name   `xml:"BlockList"`
	Committed   []xmlBlock `xml:"CommittedBlocks>Block"`
	Uncommitted []xmlBlock `xml:"UncommittedBlocks>Block"`
}

// blockListType reads Get Block List's blocklisttype (committed when
// absent).
func blockListType(req *request) (string, error) {
	switch typ := req.query["blocklisttype"]; typ {
	case "":
		return "committed", nil
	case "committed", "uncommitted", "all":
		return typ, nil
	default:
		return "", svcerr.Query(svcerr.InvalidQueryParameterValue, "blocklisttype", typ, "")
	}
}

// Get Block List: GET ?comp=blocklist[&blocklisttype=...] → 200.
func (s *Server) getBlockList(w http.ResponseWriter, r *http.Request, req *request) error {
	typ, err := blockListType(req)
	if err != nil {
		return err
	}
	leaseID, err := leaseIDHeader(r.Header)
	if err != nil {
		return err
	}
	tagCond, err := ifTagsOnly.parse(r.Header)
	if err != nil {
		return err
	}
	bl, err := s.db.GetBlockList(r.Context(), req.ref(), leaseID, tagCond.IfTags)
	if err != nil {
		return err
	}
	var out xmlBlockList
	var size int64
	if bl.Blob != nil {
		setETagLM(w.Header(), bl.Blob.ETag, bl.Blob.LastModified)
		size = bl.Blob.Size
	}
	if typ != "uncommitted" {
		out.Committed = []xmlBlock{}
		for _, e := range bl.Committed {
			out.Committed = append(out.Committed, xmlBlock{Name: e.BlockID, Size: e.Size})
		}
	}
	if typ != "committed" {
		out.Uncommitted = []xmlBlock{}
		for _, b := range bl.Uncommitted {
			out.Uncommitted = append(out.Uncommitted, xmlBlock{Name: b.ID, Size: b.Size})
		}
	}
	w.Header().Set("x-ms-blob-content-length", strconv.FormatInt(size, 10))
	return writeXML(w, r, http.StatusOK, out)
}

func int64Header(h http.Header, name string) (int64, error) {
	v := h.Get(name)
	if v == "" {
		return -1, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, svcerr.Header(svcerr.InvalidHeaderValue, name, v)
	}
	return n, nil
}

// parseAppendRequest reads what Append Block and Append Block From URL share:
// conditions, lease id, append position and size conditions, and the
// put-and-release extension.
func parseAppendRequest(r *http.Request, req *request) (leasedb.AppendRequest, error) {
	cond, leaseID, err := blobConds(r)
	if err != nil {
		return leasedb.AppendRequest{}, err
	}
	areq := leasedb.AppendRequest{Ref: req.ref(), LeaseID: leaseID, Cond: cond}
	if areq.AppendPos, err = int64Header(r.Header, "x-ms-blob-condition-appendpos"); err != nil {
		return areq, err
	}
	if areq.MaxSize, err = int64Header(r.Header, "x-ms-blob-condition-maxsize"); err != nil {
		return areq, err
	}
	if areq.PutLease, err = parsePutLease(r, leaseID); err != nil {
		return areq, err
	}
	return areq, nil
}

// Append Block: PUT ?comp=appendblock → 201.
func (s *Server) appendBlock(w http.ResponseWriter, r *http.Request, req *request) error {
	size := r.ContentLength
	switch {
	case size < 0:
		return svcerr.New(svcerr.MissingContentLengthHeader)
	case size == 0:
		return svcerr.Header(svcerr.InvalidHeaderValue, "Content-Length", "0")
	case size > maxAppendBlockSize:
		return svcerr.New(svcerr.RequestBodyTooLarge)
	}
	areq, err := parseAppendRequest(r, req)
	if err != nil {
		return err
	}
	if err := s.db.PrecheckAppend(r.Context(), areq, size); err != nil {
		return err
	}
	if size <= s.opt.InlineMaxBytes {
		return s.appendInline(w, r, areq, size)
	}
	ext, sum, err := s.readBody(r, size, false)
	if err != nil {
		return err
	}
	return s.commitAppend(r.Context(), w, areq, ext, sum)
}

// commitAppend commits a staged append block (Append Block and Append Block
// From URL) and writes the 201 answer; a refused commit discards the object
// (Server.commit).
func (s *Server) commitAppend(ctx context.Context, w http.ResponseWriter, areq leasedb.AppendRequest, ext leasedb.Extent, sum sums) error {
	areq.Extent = ext
	var b *leasedb.Blob
	var offset int64
	var leaseRes leasedb.LeaseResult
	err := s.commit(ctx, []leasedb.Extent{ext}, func(ctx context.Context) (err error) {
		b, offset, leaseRes, err = s.db.AppendBlock(ctx, areq)
		return err
	})
	if err != nil {
		return err
	}
	h := w.Header()
	setETagLM(h, b.ETag, b.LastModified)
	setSumHeaders(h, sum)
	h.Set("x-ms-blob-append-offset", strconv.FormatInt(offset, 10))
	h.Set("x-ms-blob-committed-block-count", strconv.Itoa(b.BlockCount))
	if areq.LeaseAction == leasedb.PutLeaseAcquire {
		h.Set("x-ms-lease-id", leaseRes.ID)
	}
	h.Set("x-ms-request-server-encrypted", "true")
	w.WriteHeader(http.StatusCreated)
	return nil
}
