package gateway

import "sync"

// A body of at least asyncDigestMin bytes is hashed on a goroutine of its
// own (asyncDigester) while the request's goroutine goes on reading the
// socket and writing the backend: a Put Blob's MD5 (Azure computes and
// stores one for every Put Blob, so it cannot be skipped) costs about
// three quarters of the gateway's CPU for a large body, and done inline
// it adds to the time of every read and write instead of running beside
// them on the other core. Below it a body is a chunk or two and the
// hand-off would cost more than it overlaps.
const asyncDigestMin = 1 << 20

// overlapDigest reports whether a body of size bytes (-1: unknown) is
// hashed on a goroutine of its own while uploads bodies (this one
// included) are in flight on procs processors. Only with a processor to
// spare: once every processor has a body to read, hash and write, the
// bodies already run side by side, and a hasher goroutine per body would
// add its copy and hand-offs to CPU that is spent out.
func overlapDigest(size int64, uploads, procs int) bool {
	return (size < 0 || size >= asyncDigestMin) && uploads < procs
}

// asyncChunk is what the request's goroutine copies the body into before
// handing it to the hasher, and asyncChunks how many such chunks one body
// may have in flight: at most 1 MiB a stream, so a hasher that falls
// behind holds the reader back (backpressure) instead of buffering the
// body.
const (
	asyncChunk  = 256 << 10
	asyncChunks = 4
)

var asyncChunkPool = sync.Pool{New: func() any {
	b := make([]byte, 0, asyncChunk)
	return &b
}}

// digestWriter is what hashingReader feeds: a digester, or an
// asyncDigester in front of one.
type digestWriter interface {
	Write(p []byte) (int, error)
	// sums returns the digests of everything written; nothing may be
	// written after it.
	sums() sums
}

// asyncDigester copies what is written into pooled chunks and feeds them,
// in order, to d on its own goroutine. Write never fails and returns as
// soon as p is copied (it waits only when asyncChunks are in flight).
// sums, or stop when the body failed, must be called once the body is
// done: both end the goroutine and give the chunks back.
type asyncDigester struct {
	d     *digester
	cur   *[]byte      // the chunk being filled, nil when none
	work  chan *[]byte // full chunks, for the hasher
	free  chan *[]byte // chunks the hasher is done with
	taken int          // chunks taken from the pool (≤ asyncChunks)
	done  chan struct{}
	ended bool
}

func newAsyncDigester(d *digester) *asyncDigester {
	a := &asyncDigester{
		d:    d,
		work: make(chan *[]byte, asyncChunks),
		free: make(chan *[]byte, asyncChunks),
		done: make(chan struct{}),
	}
	go a.hash()
	return a
}

// hash is the hasher goroutine: it digests the chunks in the order they
// were written and passes each back for reuse.
func (a *asyncDigester) hash() {
	defer close(a.done)
	for c := range a.work {
		a.d.Write(*c)
		a.free <- c // never blocks: free holds every chunk there is
	}
}

// chunk returns an empty chunk: a free one, a new one from the pool while
// fewer than asyncChunks are taken, else the next the hasher frees.
func (a *asyncDigester) chunk() *[]byte {
	var c *[]byte
	select {
	case c = <-a.free:
	default:
		if a.taken < asyncChunks {
			a.taken++
			c = asyncChunkPool.Get().(*[]byte)
		} else {
			c = <-a.free
		}
	}
	*c = (*c)[:0]
	return c
}

func (a *asyncDigester) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if a.cur == nil {
			a.cur = a.chunk()
		}
		c := *a.cur
		k := copy(c[len(c):cap(c)], p)
		*a.cur = c[:len(c)+k]
		p = p[k:]
		if len(*a.cur) == cap(*a.cur) {
			a.work <- a.cur
			a.cur = nil
		}
	}
	return n, nil
}

// end hands over the last partial chunk (when flush), waits for the hasher
// to finish and returns every chunk to the pool.
func (a *asyncDigester) end(flush bool) {
	if a.ended {
		return
	}
	a.ended = true
	if a.cur != nil {
		if flush && len(*a.cur) > 0 {
			a.work <- a.cur
		} else {
			a.free <- a.cur
		}
		a.cur = nil
	}
	close(a.work)
	<-a.done
	for range a.taken {
		asyncChunkPool.Put(<-a.free)
	}
	a.taken = 0
}

func (a *asyncDigester) sums() sums {
	a.end(true)
	return a.d.sums()
}

// stop ends the hasher of a body that failed; its digests are not wanted.
func (a *asyncDigester) stop() { a.end(false) }
