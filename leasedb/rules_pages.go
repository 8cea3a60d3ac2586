package leasedb

import (
	"math"
	"time"

	"github.com/blobgw/blobgw/svcerr"
)

// SeqConditions are Put Page's x-ms-if-sequence-number-le / -lt / -eq:
// each is -1 when absent (sequence numbers are never negative).
type SeqConditions struct {
	LE, LT, EQ int64
}

// NoSeqConditions is a request without sequence number conditions.
var NoSeqConditions = SeqConditions{LE: -1, LT: -1, EQ: -1}

func (c SeqConditions) met(n int64) bool {
	return (c.LE < 0 || n <= c.LE) && (c.LT < 0 || n < c.LT) && (c.EQ < 0 || n == c.EQ)
}

// checkPageWrite is the rule of Put Page (update or clear) and Put Page
// From URL over [start, end): the update rule (404, write lease, If-*),
// then the page blob's own: its type (409 InvalidBlobType), the sequence
// number conditions (412 SequenceNumberConditionNotMet), and a range
// inside the blob (416 InvalidPageRange).
func checkPageWrite(b *Blob, req PageWriteRequest, now time.Time) (Lease, error) {
	lease, err := checkUpdate(b, req.LeaseID, req.Cond, now)
	if err != nil {
		return Lease{}, err
	}
	switch {
	case b.Type != "PageBlob":
		return Lease{}, svcerr.New(svcerr.InvalidBlobType)
	case b.IsIncrementalCopy():
		return Lease{}, errIncrementalCopyBlob()
	case !req.Seq.met(b.SequenceNumber):
		return Lease{}, svcerr.New(svcerr.SequenceNumberConditionNotMet)
	case req.End > b.Size:
		return Lease{}, svcerr.New(svcerr.InvalidPageRange)
	}
	return lease, nil
}

// Sequence number actions of Set Blob Properties
// (x-ms-sequence-number-action).
const (
	SeqMax       = "max"
	SeqUpdate    = "update"
	SeqIncrement = "increment"
)

// PageProps is the page blob part of Set Blob Properties: a resize
// (x-ms-blob-content-length; Resize -1 when absent) and a sequence number
// action (x-ms-sequence-number-action, "" when absent, with
// x-ms-blob-sequence-number as Seq).
type PageProps struct {
	Resize    int64
	SeqAction string
	Seq       int64
}

// Any reports whether p changes anything.
func (p PageProps) Any() bool { return p.Resize >= 0 || p.SeqAction != "" }

// applyPageProps is the rule and the effect of PageProps on b: only a page
// blob has them (409 InvalidBlobType); an increment past the largest
// number is 409 SequenceNumberIncrementTooLarge. A shrink drops the runs
// past the new end, so bytes written there and grown back read as zeros.
func applyPageProps(b *Blob, p PageProps) error {
	if !p.Any() {
		return nil
	}
	if b.Type != "PageBlob" {
		return svcerr.New(svcerr.InvalidBlobType)
	}
	switch p.SeqAction {
	case SeqMax:
		b.SequenceNumber = max(b.SequenceNumber, p.Seq)
	case SeqUpdate:
		b.SequenceNumber = p.Seq
	case SeqIncrement:
		if b.SequenceNumber == math.MaxInt64 {
			return svcerr.New(svcerr.SequenceNumberIncrementTooLarge)
		}
		b.SequenceNumber++
	}
	if p.Resize >= 0 {
		// A premium page blob does not grow past its tier's size.
		if err := CheckPremiumTierSize(b.AccessTier, p.Resize); err != nil {
			return err
		}
		if p.Resize < b.Size {
			b.Extents = cutRuns(b.Extents, p.Resize, b.Size)
		}
		b.Size = p.Resize
	}
	return nil
}
