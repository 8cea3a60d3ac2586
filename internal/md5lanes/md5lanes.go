// Package md5lanes computes the MD5 of large request bodies (the
// Content-MD5 that Put Blob answers and stores) in the SIMD lanes of
// github.com/minio/md5-simd, so that several concurrent uploads share one
// AVX-512 (16 lanes) or AVX2 (8 lanes) pass over their blocks instead of
// each running the scalar crypto/md5 on a core of its own. A body that
// would not share the lanes (a small one, one alone, a CPU without AVX2)
// keeps crypto/md5, which is the faster of the two for a single stream.
//
// The package never changes a digest: every Hash yields what crypto/md5
// yields for the same bytes. A Hash must be closed when the body is done,
// on every path; an unclosed one holds a lane server's client slot.
package md5lanes

import (
	"crypto/md5"
	"errors"
	"hash"
	"sync"
	"sync/atomic"

	md5simd "github.com/minio/md5-simd"
	"golang.org/x/sys/cpu"
)

// Rules of use, measured on the 2-core AVX-512 machine of the README's
// Performance section (crypto/md5 about 800 MB/s a core).
const (
	// MinBody is the body size from which lanes may pay: below it the
	// copy into the lane server's buffers and the hand-offs cost about
	// what the lanes save, and an inline or small body keeps crypto/md5.
	MinBody = 1 << 20
	// MinPeers is how many other large bodies must be hashing when a body
	// starts for it to take a lane. md5-simd hashes fewer than 3 filled
	// lanes with its scalar routine, so a body alone or with one other
	// would pay the copies and the hand-offs for no SIMD pass; from 3
	// streams on the lanes cost no more CPU than crypto/md5 (BenchmarkStreams).
	// Side by side with 64 MiB Put Blobs at 8 clients, lanes from the 6th
	// concurrent body cost 1.06x-1.30x the CPU per op of lanes from the 3rd.
	MinPeers = 2
	// serverHashers bounds the hashers one md5-simd server hands out
	// before a fresh server takes over. md5-simd v1.1.2 forgets to drop a
	// closed hasher from its client table (it deletes uid 0 instead of the
	// hasher's), so the table, and the scan it runs on every pass over
	// the lanes, grows with each hasher a server ever had. A retired
	// server is closed once its last hasher is, which frees the table.
	serverHashers = 64
)

// Lanes reports whether this CPU runs md5-simd's SIMD code (AVX2, and
// AVX-512 where present); without it every Hash is crypto/md5.
var Lanes = cpu.X86.HasAVX2

// Hash is the MD5 of one body. Close gives back its lane, if it took
// one; Sum is valid only before Close. Close is idempotent.
type Hash interface {
	hash.Hash
	Close()
}

// large counts the bodies of at least MinBody being hashed, by lanes or
// not: the concurrency the MinPeers rule reads.
var large atomic.Int64

// New returns the Hash of a body of size bytes (-1: unknown, which keeps
// crypto/md5): a lane when the body is at least MinBody and at least
// MinPeers other large bodies are being hashed, crypto/md5 otherwise.
func New(size int64) Hash {
	if size < MinBody {
		return &plain{Hash: md5.New()}
	}
	peers := large.Add(1) - 1
	if !Lanes || peers < MinPeers {
		return &plain{Hash: md5.New(), counted: true}
	}
	return pool.newLane()
}

// plain is crypto/md5 behind the Hash interface.
type plain struct {
	hash.Hash
	counted bool // a large body, counted in large until Close
	closed  bool
}

func (p *plain) Close() {
	if p.closed {
		return
	}
	p.closed = true
	if p.counted {
		large.Add(-1)
	}
}

// servers hands out hashers of the current md5-simd server and retires it
// after serverHashers of them (see serverHashers).
type servers struct {
	mu  sync.Mutex
	cur *server
	// live counts servers started and not yet closed, lanes the hashers
	// ever handed out (Stats).
	live  int
	lanes int64
}

type server struct {
	srv    md5simd.Server
	issued int // hashers handed out; under servers.mu
	open   int // hashers not yet closed; under servers.mu
}

var pool servers

// newLane returns a hasher of the current server, starting one if needed.
func (s *servers) newLane() *lane {
	s.mu.Lock()
	if s.cur == nil || s.cur.issued >= serverHashers {
		s.retire(s.cur)
		s.cur = &server{srv: md5simd.NewServer()}
		s.live++
	}
	sv := s.cur
	sv.issued++
	sv.open++
	s.lanes++
	s.mu.Unlock()
	// NewHash registers the hasher with the server's goroutine.
	return &lane{h: sv.srv.NewHash(), sv: sv}
}

// retire closes sv if none of its hashers is open; otherwise the last one
// to close does (lane.Close). Closing a server with an open hasher would
// stop the goroutine that hasher waits on. s.mu is held.
func (s *servers) retire(sv *server) {
	if sv != nil && sv.open == 0 {
		sv.srv.Close()
		s.live--
	}
}

// lane is a hasher of an md5-simd server. Its methods hold mu: md5-simd
// sends a Write on a channel that Close closes, and a body's reader can
// outlive the handler that closes it (a transport still draining a
// request body), so a late Write must find the lane closed, not panic.
type lane struct {
	mu sync.Mutex
	h  md5simd.Hasher
	sv *server // nil once closed
}

func (l *lane) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sv == nil {
		return 0, errClosed
	}
	return l.h.Write(p)
}

// Sum appends the digest to b; after Close it panics, as md5-simd does.
func (l *lane) Sum(b []byte) []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sv == nil {
		panic("md5lanes: Sum after Close")
	}
	return l.h.Sum(b)
}

// Reset starts the digest over; on a closed lane it does nothing.
func (l *lane) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sv != nil {
		l.h.Reset()
	}
}

func (l *lane) Size() int      { return md5.Size }
func (l *lane) BlockSize() int { return md5.BlockSize }

func (l *lane) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sv == nil {
		return
	}
	// The hasher first: its server reads the closed input and drops it.
	l.h.Close()
	large.Add(-1)
	pool.mu.Lock()
	l.sv.open--
	if l.sv != pool.cur {
		pool.retire(l.sv)
	}
	pool.mu.Unlock()
	l.sv = nil
}

var errClosed = errors.New("md5lanes: write after Close")

// Counters are the package's counters, for tests and figures.
type Counters struct {
	Large   int64 // bodies of at least MinBody being hashed, lanes or not
	Lanes   int64 // bodies given a lane since the process started
	Servers int   // md5-simd servers started and not yet closed
}

// Stats reads the counters.
func Stats() Counters {
	pool.mu.Lock()
	defer pool.mu.Unlock()
	return Counters{Large: large.Load(), Lanes: pool.lanes, Servers: pool.live}
}
