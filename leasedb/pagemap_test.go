package leasedb

import (
	"math"
	"math/rand"
	"reflect"
	"testing"

	"github.com/blobgw/blobgw/svcerr"
	"github.com/blobgw/blobgw/svcerr/svcerrtest"
)

func run(key string, at, size, off int64) Extent {
	return Extent{Key: key, At: at, Size: size, Off: off}
}

func TestPutRun(t *testing.T) {
	base := []Extent{run("a", 0, 1024, 0), run("b", 2048, 1024, 0)}
	tests := []struct {
		name string
		runs []Extent
		n    Extent
		want []Extent
	}{
		{"into an empty map", nil, run("n", 512, 512, 0), []Extent{run("n", 512, 512, 0)}},
		{"in a hole", base, run("n", 1024, 512, 0), []Extent{run("a", 0, 1024, 0), run("n", 1024, 512, 0), run("b", 2048, 1024, 0)}},
		{"over a whole run", base, run("n", 0, 1024, 0), []Extent{run("n", 0, 1024, 0), run("b", 2048, 1024, 0)}},
		{"inside a run splits it", base, run("n", 512, 256, 0), []Extent{run("a", 0, 512, 0), run("n", 512, 256, 0), run("a", 768, 256, 768), run("b", 2048, 1024, 0)}},
		{"over the end of one and the start of the next", base, run("n", 512, 2048, 0), []Extent{run("a", 0, 512, 0), run("n", 512, 2048, 0), run("b", 2560, 512, 512)}},
		{"over everything", base, run("n", 0, 4096, 0), []Extent{run("n", 0, 4096, 0)}},
		{"after the last run", base, run("n", 3072, 512, 0), []Extent{run("a", 0, 1024, 0), run("b", 2048, 1024, 0), run("n", 3072, 512, 0)}},
		{"trimmed run keeps its object offset", []Extent{run("a", 1024, 2048, 512)}, run("n", 1024, 512, 0), []Extent{run("n", 1024, 512, 0), run("a", 1536, 1536, 1024)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := append([]Extent(nil), tt.runs...)
			got := putRun(tt.runs, tt.n)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("putRun = %+v\nwant %+v", got, tt.want)
			}
			if !reflect.DeepEqual(before, tt.runs) && len(before) > 0 {
				t.Fatalf("putRun changed its input: %+v", tt.runs)
			}
		})
	}
}

func TestCutRuns(t *testing.T) {
	base := []Extent{run("a", 0, 1024, 0), run("b", 2048, 1024, 0)}
	tests := []struct {
		name       string
		start, end int64
		want       []Extent
	}{
		{"nothing there", 1024, 2048, base},
		{"a whole run", 2048, 3072, []Extent{run("a", 0, 1024, 0)}},
		{"the middle of a run", 256, 512, []Extent{run("a", 0, 256, 0), run("a", 512, 512, 512), run("b", 2048, 1024, 0)}},
		{"across two runs", 512, 2560, []Extent{run("a", 0, 512, 0), run("b", 2560, 512, 512)}},
		{"everything", 0, math.MaxInt64, []Extent{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cutRuns(base, tt.start, tt.end); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("cutRuns = %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestPageRanges(t *testing.T) {
	runs := []Extent{run("a", 0, 512, 0), run("b", 512, 512, 0), run("c", 2048, 1024, 0)}
	tests := []struct {
		name       string
		start, end int64
		want       []PageRange
	}{
		{"adjacent runs are one range", 0, 4096, []PageRange{{Start: 0, End: 1024}, {Start: 2048, End: 3072}}},
		{"clipped to the window", 512, 2560, []PageRange{{Start: 512, End: 1024}, {Start: 2048, End: 2560}}},
		{"a hole only", 1024, 2048, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PageRanges(runs, tt.start, tt.end); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("PageRanges = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestDiffPageRanges(t *testing.T) {
	prev := []Extent{run("a", 0, 2048, 0), run("b", 4096, 1024, 0)}
	tests := []struct {
		name string
		cur  []Extent
		want []PageRange
	}{
		{"unchanged", prev, nil},
		{"a trimmed run is the same bytes", cutRuns(prev, 512, 1024), []PageRange{{Start: 512, End: 1024, Clear: true}}},
		{"a rewrite", putRun(prev, run("n", 1024, 512, 0)), []PageRange{{Start: 1024, End: 1536}}},
		{"a write into a hole", putRun(prev, run("n", 2048, 1024, 0)), []PageRange{{Start: 2048, End: 3072}}},
		{"everything cleared", nil, []PageRange{{Start: 0, End: 2048, Clear: true}, {Start: 4096, End: 5120, Clear: true}}},
		{"write next to a clear", putRun(cutRuns(prev, 0, 1024), run("n", 1024, 512, 0)),
			[]PageRange{{Start: 0, End: 1024, Clear: true}, {Start: 1024, End: 1536}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DiffPageRanges(prev, tt.cur, 0, 8192); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("DiffPageRanges = %+v, want %+v", got, tt.want)
			}
		})
	}
	// The window clips.
	got := DiffPageRanges(nil, prev, 1024, 4608)
	want := []PageRange{{Start: 1024, End: 2048}, {Start: 4096, End: 4608}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("clipped diff = %+v, want %+v", got, want)
	}
}

func TestSegments(t *testing.T) {
	b := &Blob{Type: "PageBlob", Size: 4096, Extents: []Extent{run("a", 512, 512, 0), run("b", 1024, 512, 512), run("c", 3584, 1024, 0)}}
	want := []Extent{{Size: 512}, run("a", 512, 512, 0), run("b", 1024, 512, 512), {Size: 2048}, run("c", 3584, 512, 0)}
	if got := Segments(b); !reflect.DeepEqual(got, want) {
		t.Fatalf("Segments = %+v\nwant %+v", got, want)
	}
	empty := &Blob{Type: "PageBlob", Size: 1024}
	if got := Segments(empty); !reflect.DeepEqual(got, []Extent{{Size: 1024}}) {
		t.Fatalf("Segments of an unwritten blob = %+v", got)
	}
	block := &Blob{Type: "BlockBlob", Size: 3, Extents: []Extent{{Key: "x", Size: 3}}}
	if got := Segments(block); !reflect.DeepEqual(got, block.Extents) {
		t.Fatalf("Segments of a block blob = %+v", got)
	}
}

// TestPageMapModel writes and clears at random and compares the bytes the
// map reads (each object's byte i is its name and i, so a wrong object or
// offset shows) with a plain array.
func TestPageMapModel(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	const pages = 64
	type cell struct {
		key string
		off int64
	}
	model := make([]cell, pages*PageSize)
	var runs []Extent
	for i := 0; i < 2000; i++ {
		a := int64(rng.Intn(pages))
		n := int64(1 + rng.Intn(8))
		if a+n > pages {
			n = pages - a
		}
		start, end := a*PageSize, (a+n)*PageSize
		if rng.Intn(3) == 0 {
			runs = cutRuns(runs, start, end)
			for x := start; x < end; x++ {
				model[x] = cell{}
			}
		} else {
			key := string(rune('A'+i%26)) + string(rune('a'+i/26%26)) + string(rune('0'+i/676))
			runs = putRun(runs, Extent{Key: key, At: start, Size: end - start})
			for x := start; x < end; x++ {
				model[x] = cell{key, x - start}
			}
		}
		var pos int64
		for _, s := range Segments(&Blob{Type: "PageBlob", Size: pages * PageSize, Extents: runs}) {
			for x := int64(0); x < s.Size; x++ {
				want := model[pos+x]
				got := cell{}
				if s.Key != "" {
					got = cell{s.Key, s.Off + x}
				}
				if got != want {
					t.Fatalf("step %d: byte %d reads %+v, want %+v", i, pos+x, got, want)
				}
			}
			pos += s.Size
		}
		if pos != pages*PageSize {
			t.Fatalf("step %d: segments cover %d bytes", i, pos)
		}
		for j := 1; j < len(runs); j++ {
			if runs[j-1].At+runs[j-1].Size > runs[j].At || runs[j].Size <= 0 {
				t.Fatalf("step %d: runs out of order or empty: %+v", i, runs)
			}
		}
	}
}

func TestCheckPageWrite(t *testing.T) {
	page := &Blob{Type: "PageBlob", ETag: `"e1"`, Size: 4096, SequenceNumber: 5}
	leasedPage := &Blob{Type: "PageBlob", ETag: `"e1"`, Size: 4096, Lease: leasedFixed}
	req := func(end int64, f func(*PageWriteRequest)) PageWriteRequest {
		r := PageWriteRequest{End: end, Seq: NoSeqConditions}
		if f != nil {
			f(&r)
		}
		return r
	}
	seq := func(le, lt, eq int64) func(*PageWriteRequest) {
		return func(r *PageWriteRequest) { r.Seq = SeqConditions{LE: le, LT: lt, EQ: eq} }
	}
	tests := []struct {
		name      string
		b         *Blob
		req       PageWriteRequest
		want      svcerr.Code
		wantLease Lease
	}{
		{"missing", nil, req(512, nil), svcerr.BlobNotFound, Lease{}},
		{"missing, If-Match", nil, req(512, func(r *PageWriteRequest) { r.Cond = ifMatchE1 }), svcerr.ConditionNotMet, Lease{}},
		{"write", page, req(4096, nil), "", Lease{}},
		{"block blob", blockRow, req(512, nil), svcerr.InvalidBlobType, Lease{}},
		{"append blob", appendRow, req(512, nil), svcerr.InvalidBlobType, Lease{}},
		{"lease before type", leasedRow, req(512, nil), svcerr.LeaseIdMissing, Lease{}},
		{"leased, right id", leasedPage, req(512, func(r *PageWriteRequest) { r.LeaseID = idA }), "", leasedFixed},
		{"leased, wrong id", leasedPage, req(512, func(r *PageWriteRequest) { r.LeaseID = idB }), svcerr.LeaseIdMismatchWithBlobOperation, Lease{}},
		{"If-Match fails", page, req(512, func(r *PageWriteRequest) { r.Cond = ifMatchE2 }), svcerr.ConditionNotMet, Lease{}},
		{"past the end", page, req(4608, nil), svcerr.InvalidPageRange, Lease{}},
		{"le met", page, req(512, seq(5, -1, -1)), "", Lease{}},
		{"le not met", page, req(512, seq(4, -1, -1)), svcerr.SequenceNumberConditionNotMet, Lease{}},
		{"lt met", page, req(512, seq(-1, 6, -1)), "", Lease{}},
		{"lt not met", page, req(512, seq(-1, 5, -1)), svcerr.SequenceNumberConditionNotMet, Lease{}},
		{"eq met", page, req(512, seq(-1, -1, 5)), "", Lease{}},
		{"eq not met", page, req(512, seq(-1, -1, 0)), svcerr.SequenceNumberConditionNotMet, Lease{}},
		{"all three, one fails", page, req(512, seq(9, 9, 4)), svcerr.SequenceNumberConditionNotMet, Lease{}},
		{"sequence number before range", page, req(8192, seq(-1, -1, 0)), svcerr.SequenceNumberConditionNotMet, Lease{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := checkPageWrite(tt.b, tt.req, t0)
			checkRuleLease(t, got, err, tt.want, tt.wantLease)
		})
	}
}

func TestApplyPageProps(t *testing.T) {
	runs := []Extent{run("a", 0, 1024, 0), run("b", 2048, 1024, 0)}
	tests := []struct {
		name     string
		b        Blob
		p        PageProps
		want     svcerr.Code
		wantSize int64
		wantSeq  int64
		wantRuns []Extent
	}{
		{"nothing", Blob{Type: "BlockBlob", Size: 3}, PageProps{Resize: -1}, "", 3, 0, nil},
		{"block blob resize", Blob{Type: "BlockBlob"}, PageProps{Resize: 512}, svcerr.InvalidBlobType, 0, 0, nil},
		{"append blob sequence number", Blob{Type: "AppendBlob"}, PageProps{Resize: -1, SeqAction: SeqUpdate}, svcerr.InvalidBlobType, 0, 0, nil},
		{"grow", Blob{Type: "PageBlob", Size: 4096, Extents: runs}, PageProps{Resize: 8192}, "", 8192, 0, runs},
		{"shrink drops and trims runs", Blob{Type: "PageBlob", Size: 4096, Extents: runs}, PageProps{Resize: 512}, "", 512, 0, []Extent{run("a", 0, 512, 0)}},
		{"max raises", Blob{Type: "PageBlob", SequenceNumber: 3}, PageProps{Resize: -1, SeqAction: SeqMax, Seq: 7}, "", 0, 7, nil},
		{"max keeps a larger one", Blob{Type: "PageBlob", SequenceNumber: 9}, PageProps{Resize: -1, SeqAction: SeqMax, Seq: 7}, "", 0, 9, nil},
		{"update lowers", Blob{Type: "PageBlob", SequenceNumber: 9}, PageProps{Resize: -1, SeqAction: SeqUpdate, Seq: 2}, "", 0, 2, nil},
		{"increment", Blob{Type: "PageBlob", SequenceNumber: 9}, PageProps{Resize: -1, SeqAction: SeqIncrement}, "", 0, 10, nil},
		{"increment overflow", Blob{Type: "PageBlob", SequenceNumber: math.MaxInt64}, PageProps{Resize: -1, SeqAction: SeqIncrement}, svcerr.SequenceNumberIncrementTooLarge, 0, 0, nil},
		{"grow to a premium tier's limit", Blob{Type: "PageBlob", Size: 512, AccessTier: "P4"}, PageProps{Resize: 32 << 30}, "", 32 << 30, 0, nil},
		{"grow past a premium tier", Blob{Type: "PageBlob", Size: 512, AccessTier: "P4"}, PageProps{Resize: 32<<30 + 512}, svcerr.BlobTierInadequateForContentLength, 0, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.b
			err := applyPageProps(&b, tt.p)
			svcerrtest.Code(t, err, tt.want)
			if err != nil {
				return
			}
			if b.Size != tt.wantSize || b.SequenceNumber != tt.wantSeq || !reflect.DeepEqual(b.Extents, tt.wantRuns) {
				t.Fatalf("got size %d seq %d runs %+v; want %d %d %+v", b.Size, b.SequenceNumber, b.Extents, tt.wantSize, tt.wantSeq, tt.wantRuns)
			}
		})
	}
}

func TestCompactRuns(t *testing.T) {
	runs := []Extent{run("a", 0, 512, 0), run("b", 512, 1024, 512), run("c", 4096, 512, 1024)}
	got, total := CompactRuns(runs, "n")
	want := []Extent{run("n", 0, 1536, 0), run("n", 4096, 512, 1536)}
	if !reflect.DeepEqual(got, want) || total != 2048 {
		t.Fatalf("CompactRuns = %+v, %d; want %+v, 2048", got, total, want)
	}
	if got, total := CompactRuns(nil, "n"); got != nil || total != 0 {
		t.Fatalf("CompactRuns of no runs = %+v, %d", got, total)
	}
}
