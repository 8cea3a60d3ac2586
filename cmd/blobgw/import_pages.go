package main

import (
	"bytes"
	"context"
	"crypto/md5"
	"fmt"
	"io"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/pageblob"
)

// pageChunk is the most one imported Put Page writes (the service's 4 MiB
// limit); one buffer of it per copy in flight.
const pageChunk = 4 << 20

// zeroPages feeds the MD5 of a page blob's holes.
var zeroPages = make([]byte, 64<<10)

// importPages copies a page blob as a page blob: Put Blob (PageBlob) of the
// source's length and sequence number, then, for each range the source's
// Get Page Ranges lists, the range's bytes in Put Page calls of at most
// 4 MiB, each with its MD5. Holes stay holes: unwritten pages are neither
// read nor written. Every read carries If-Match with the listed ETag, so a
// source that changes during the copy fails it. Content-MD5 is left for
// the caller (it marks a finished copy). It returns the MD5 of the blob as
// Get Blob serves it (zeros for the holes) and how many of its bytes were
// accounted for (j.size when complete). dcond is the condition of the
// destination's Put Blob.
func importPages(ctx context.Context, sb, db *pageblob.Client, j migJob, headers blob.HTTPHeaders, md map[string]*string, dcond *blob.AccessConditions, p *progress) ([]byte, int64, error) {
	headers.BlobContentMD5 = nil
	if _, err := db.Create(ctx, j.size, &pageblob.CreateOptions{HTTPHeaders: &headers, Metadata: md, Tags: j.tags,
		SequenceNumber: j.props.BlobSequenceNumber, AccessConditions: dcond}); err != nil {
		return nil, 0, fmt.Errorf("create page blob: %w", err)
	}
	etag := azcore.ETag(j.etag)
	cond := &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &etag}}
	h := md5.New()
	var pos int64 // bytes of the blob hashed so far
	zeros := func(to int64) {
		for pos < to {
			n := min(to-pos, int64(len(zeroPages)))
			h.Write(zeroPages[:n])
			pos += n
			p.bytes.Add(n)
		}
	}
	buf := make([]byte, pageChunk)
	pager := sb.NewGetPageRangesPager(&pageblob.GetPageRangesOptions{AccessConditions: cond})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, pos, fmt.Errorf("source page ranges: %w", err)
		}
		for _, r := range page.PageRange {
			if r.Start == nil || r.End == nil {
				continue
			}
			start, end := *r.Start, *r.End+1
			if start < pos || end > j.size || start >= end {
				return nil, pos, fmt.Errorf("source page ranges: %d-%d out of order or past the %d bytes", start, end-1, j.size)
			}
			zeros(start)
			for off := start; off < end; {
				n := min(end-off, int64(len(buf)))
				dl, err := sb.DownloadStream(ctx, &blob.DownloadStreamOptions{Range: blob.HTTPRange{Offset: off, Count: n}, AccessConditions: cond})
				if err != nil {
					return nil, pos, fmt.Errorf("download %d+%d: %w", off, n, err)
				}
				_, err = io.ReadFull(dl.Body, buf[:n])
				dl.Body.Close()
				if err != nil {
					return nil, pos, fmt.Errorf("download %d+%d: %w", off, n, err)
				}
				sum := md5.Sum(buf[:n])
				if _, err := db.UploadPages(ctx, streaming.NopCloser(bytes.NewReader(buf[:n])), blob.HTTPRange{Offset: off, Count: n},
					&pageblob.UploadPagesOptions{TransactionalValidation: blob.TransferValidationTypeMD5(sum[:])}); err != nil {
					return nil, pos, fmt.Errorf("put page %d+%d: %w", off, n, err)
				}
				h.Write(buf[:n])
				pos, off = pos+n, off+n
				p.bytes.Add(n)
				p.moved.Add(n)
			}
		}
	}
	zeros(j.size)
	return h.Sum(nil), pos, nil
}
