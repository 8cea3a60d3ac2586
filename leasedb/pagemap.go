package leasedb

import (
	"math"
	"slices"
)

// A page blob's page map is its row's Extents: the written runs, ordered by
// blob offset (At), never overlapping, each naming the immutable object
// that holds its bytes and where in it they start (Off). Bytes no run
// covers read as zeros. Put Page stores its bytes as a new object and
// merges one run into the map (putRun); Clear Pages and a shrinking resize
// cut runs out (cutRuns); a cut keeps the untouched parts of a run by
// trimming it (a later Off or a smaller Size), so a run's object may hold
// bytes no run reads any more. An object leaves the blob name when no run
// of the blob or of its snapshots (which copy the map) names it.

// PageSize is the page blob unit: every page write and every page blob
// length is a multiple of it.
const PageSize = 512

// MaxPageBlobSize is the largest x-ms-blob-content-length (8 TiB).
const MaxPageBlobSize = 8 << 40

// MaxPageWrite is the most one Put Page or Put Page From URL writes
// (4 MiB).
const MaxPageWrite = 4 << 20

// PageRange is one range of Get Page Ranges: bytes [Start, End). In the
// diff form Clear marks a range cleared since the previous snapshot.
type PageRange struct {
	Start, End int64
	Clear      bool
}

// cutRuns returns runs without the bytes [start, end): runs inside it go,
// runs that straddle an end are trimmed. runs is not modified.
func cutRuns(runs []Extent, start, end int64) []Extent {
	out := make([]Extent, 0, len(runs)+1)
	for _, r := range runs {
		rEnd := r.At + r.Size
		if rEnd <= start || r.At >= end {
			out = append(out, r)
			continue
		}
		if r.At < start {
			left := r
			left.Size = start - r.At
			out = append(out, left)
		}
		if rEnd > end {
			right := r
			right.Off += end - r.At
			right.At = end
			right.Size = rEnd - end
			out = append(out, right)
		}
	}
	return out
}

// putRun returns runs with n written over whatever they held in n's range,
// in blob order. runs is not modified.
func putRun(runs []Extent, n Extent) []Extent {
	cut := cutRuns(runs, n.At, n.At+n.Size)
	i := 0
	for i < len(cut) && cut[i].At < n.At {
		i++
	}
	out := make([]Extent, 0, len(cut)+1)
	out = append(out, cut[:i]...)
	out = append(out, n)
	return append(out, cut[i:]...)
}

// PageRanges returns the written ranges of runs within [start, end),
// clipped to it, adjacent runs joined into one range (as Get Page Ranges
// reports them: a range says pages hold data, not which write put them
// there).
func PageRanges(runs []Extent, start, end int64) []PageRange {
	var out []PageRange
	for _, r := range runs {
		a, b := max(r.At, start), min(r.At+r.Size, end)
		if a >= b {
			continue
		}
		if n := len(out); n > 0 && out[n-1].End == a {
			out[n-1].End = b
			continue
		}
		out = append(out, PageRange{Start: a, End: b})
	}
	return out
}

// DiffPageRanges is the diff form of Get Page Ranges (prevsnapshot):
// within [start, end), the ranges of cur written since prev (a page whose
// run differs: another object, or none before) and, with Clear, those
// written in prev and cleared since. Runs are immutable objects, so "the
// same run" means the same object at the same place: a page rewritten
// with the bytes it held still counts as changed, as on Azure.
func DiffPageRanges(prev, cur []Extent, start, end int64) []PageRange {
	// Every boundary of either map splits [start, end) into spans where
	// each map is one run or a hole.
	cuts := []int64{start, end}
	for _, m := range [][]Extent{prev, cur} {
		for _, r := range m {
			for _, x := range []int64{r.At, r.At + r.Size} {
				if x > start && x < end {
					cuts = append(cuts, x)
				}
			}
		}
	}
	slices.Sort(cuts)
	at := func(m []Extent, i *int, x int64) *Extent {
		for *i < len(m) && m[*i].At+m[*i].Size <= x {
			*i++
		}
		if *i < len(m) && m[*i].At <= x {
			return &m[*i]
		}
		return nil
	}
	var out []PageRange
	var pi, ci int
	for k := 0; k+1 < len(cuts); k++ {
		a, b := cuts[k], cuts[k+1]
		if a == b {
			continue
		}
		p, c := at(prev, &pi, a), at(cur, &ci, a)
		var r PageRange
		switch {
		case c != nil && (p == nil || p.Key != c.Key || p.At-p.Off != c.At-c.Off):
			r = PageRange{Start: a, End: b}
		case c == nil && p != nil:
			r = PageRange{Start: a, End: b, Clear: true}
		default:
			continue
		}
		if n := len(out); n > 0 && out[n-1].End == a && out[n-1].Clear == r.Clear {
			out[n-1].End = b
			continue
		}
		out = append(out, r)
	}
	return out
}

// Segments returns the blob as extents that follow each other from byte 0
// to its end: a block or append blob's extents as they are; for a page
// blob its runs with the holes between them as extents with no Key (read
// as zeros). Readers stream Segments, reading each from its Off.
func Segments(b *Blob) []Extent {
	if b.Type != "PageBlob" {
		return b.Extents
	}
	out := make([]Extent, 0, 2*len(b.Extents)+1)
	var pos int64
	for _, r := range b.Extents {
		if r.At >= b.Size {
			break
		}
		if r.At > pos {
			out = append(out, Extent{Size: r.At - pos})
		}
		r.Size = min(r.Size, b.Size-r.At)
		out = append(out, r)
		pos = r.At + r.Size
	}
	if pos < b.Size {
		out = append(out, Extent{Size: b.Size - pos})
	}
	return out
}

// CompactRuns is the page map of runs rewritten into one object, key: one
// run per written range (adjacent runs joined), each reading the object
// where the bytes of the ranges before it end. total is the object's
// length: the ranges' bytes in blob order, holes left out.
func CompactRuns(runs []Extent, key string) (out []Extent, total int64) {
	for _, r := range PageRanges(runs, 0, math.MaxInt64) {
		out = append(out, Extent{Key: key, At: r.Start, Size: r.End - r.Start, Off: total})
		total += r.End - r.Start
	}
	return out, total
}
