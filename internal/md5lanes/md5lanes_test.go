package md5lanes

import (
	"bytes"
	"crypto/md5"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"
)

// body is n deterministic pseudo-random bytes of seed.
func body(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// sumIn hashes b through h in writes of chunk bytes (0: one write), sums
// and closes h.
func sumIn(h Hash, b []byte, chunk int) []byte {
	defer h.Close()
	if chunk <= 0 {
		chunk = len(b) + 1
	}
	for p := b; len(p) > 0; {
		n := min(chunk, len(p))
		h.Write(p[:n])
		p = p[n:]
	}
	return h.Sum(nil)
}

// edgeLengths are the lengths where a digest can go wrong: every length to
// 300 (padding across one and two MD5 blocks), and a few either side of
// the MD5 block, md5-simd's 32 KiB internal block, a 512 KiB read buffer
// and MinBody.
func edgeLengths() []int {
	var ls []int
	for n := 0; n <= 300; n++ {
		ls = append(ls, n)
	}
	for _, e := range []int{64 * 8, 32 << 10, 64 << 10, 512 << 10, MinBody} {
		for d := -65; d <= 65; d += 13 {
			ls = append(ls, e+d)
		}
		ls = append(ls, e-1, e, e+1)
	}
	return ls
}

// TestLaneSumsMatchCryptoMD5: a lane yields crypto/md5's digest for every
// edge length, written whole and in awkward chunks.
func TestLaneSumsMatchCryptoMD5(t *testing.T) {
	if !Lanes {
		t.Log("no AVX2: lanes are crypto/md5 here")
	}
	for _, n := range edgeLengths() {
		b := body(uint64(n), n)
		want := md5.Sum(b)
		for _, chunk := range []int{0, 1, 63, 64, 65, 4096, 32<<10 + 3} {
			if chunk == 1 && n > 4096 {
				continue
			}
			if got := sumIn(newLane(), b, chunk); !bytes.Equal(got, want[:]) {
				t.Fatalf("len %d chunk %d: lane %x, crypto/md5 %x", n, chunk, got, want)
			}
			if got := sumIn(New(int64(n)), b, chunk); !bytes.Equal(got, want[:]) {
				t.Fatalf("len %d chunk %d: New %x, crypto/md5 %x", n, chunk, got, want)
			}
		}
	}
	wantIdle(t)
}

// TestLaneSumsConcurrent: many concurrent streams of different lengths,
// so the lane server fills its lanes with blocks of several bodies at
// once, each yields its own crypto/md5 digest.
func TestLaneSumsConcurrent(t *testing.T) {
	const streams = 40
	var wg sync.WaitGroup
	errs := make(chan error, streams)
	for i := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 1<<20 + i*4099
			if i%4 == 0 {
				n = i * 37 // a few small ones among them
			}
			b := body(uint64(i)+1000, n)
			want := md5.Sum(b)
			var h Hash
			if i%2 == 0 {
				h = newLane()
			} else {
				h = New(int64(n))
			}
			if got := sumIn(h, b, 17<<10+i); !bytes.Equal(got, want[:]) {
				errs <- fmt.Errorf("stream %d len %d: %x, want %x", i, n, got, want)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	wantIdle(t)
}

// TestNewRule: a small body, a body of unknown size and a large body
// hashed alone keep crypto/md5; a large body that starts while MinPeers
// others are hashing takes a lane; the count of large bodies follows
// their Close, which is idempotent.
func TestNewRule(t *testing.T) {
	for _, size := range []int64{-1, 0, 4096, MinBody - 1} {
		h := New(size)
		if _, ok := h.(*plain); !ok {
			t.Errorf("New(%d) = %T, want crypto/md5", size, h)
		}
		h.Close()
	}
	var open []Hash
	for i := range MinPeers + 1 {
		h := New(MinBody)
		_, isLane := h.(*lane)
		if want := i >= MinPeers && Lanes; isLane != want {
			t.Errorf("large body %d with %d peers: lane %v, want %v", i, i, isLane, want)
		}
		open = append(open, h)
	}
	if n := Stats().Large; n != int64(len(open)) {
		t.Errorf("%d large bodies counted, %d open", n, len(open))
	}
	for _, h := range open {
		h.Write([]byte("x"))
		h.Sum(nil)
		h.Close()
		h.Close()
	}
	wantIdle(t)
}

// TestServersRetired: past serverHashers hashers a fresh server takes
// over, and a retired one is closed when its last hasher closes, so the
// lane servers and their goroutines stay bounded whatever the number of
// bodies hashed (md5-simd v1.1.2 keeps every closed hasher in its table).
func TestServersRetired(t *testing.T) {
	if !Lanes {
		t.Skip("no AVX2: no lane servers")
	}
	// One hasher held open across a rotation keeps its server alive.
	held := newLane()
	held.Write(body(1, 1000))
	g0 := runtime.NumGoroutine() // with held's server running
	for i := range 5 * ServerHashers {
		h := newLane()
		h.Write(body(uint64(i), 100))
		h.Sum(nil)
		h.Close()
	}
	if live := Stats().Servers; live != 2 {
		t.Errorf("%d lane servers live with one hasher held on a retired one, want 2", live)
	}
	want := md5.Sum(body(1, 1000))
	if got := sumIn(held, nil, 0); !bytes.Equal(got, want[:]) {
		t.Errorf("held hasher across rotation: %x, want %x", got, want)
	}
	wantIdle(t)
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > g0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > g0 {
		t.Errorf("%d goroutines after %d hashers, %d before", g, 5*ServerHashers+1, g0)
	}
}

// wantIdle fails unless every large body was closed and at most the
// current server is live.
func wantIdle(t *testing.T) {
	t.Helper()
	if c := Stats(); c.Large != 0 || c.Servers > 1 {
		t.Errorf("after all hashers closed: %d large bodies counted, %d lane servers live", c.Large, c.Servers)
	}
}

// TestLateWrite: a Write after Close, or racing it (a transport still
// draining a body the handler is done with), fails instead of panicking
// on md5-simd's closed channel.
func TestLateWrite(t *testing.T) {
	h := newLane()
	h.Write([]byte("abc"))
	h.Close()
	if _, err := h.Write([]byte("d")); err == nil && Lanes {
		t.Error("Write after Close succeeded")
	}
	h.Reset() // a no-op once closed, where md5-simd would panic
	h.Close()
	for range 50 {
		h := newLane()
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range 100 {
				h.Write(make([]byte, 100))
			}
		}()
		h.Close()
		<-done
	}
	wantIdle(t)
}

// FuzzLaneSum: any bytes, split at any point, hash alike in a lane and
// in crypto/md5.
func FuzzLaneSum(f *testing.F) {
	f.Add([]byte{}, uint16(0))
	f.Add(bytes.Repeat([]byte("a"), 200), uint16(55))
	f.Add(body(3, 70000), uint16(32<<10))
	f.Fuzz(func(t *testing.T, b []byte, cut uint16) {
		want := md5.Sum(b)
		h := newLane()
		c := min(int(cut), len(b))
		h.Write(b[:c])
		h.Write(b[c:])
		got := h.Sum(nil)
		h.Close()
		if !bytes.Equal(got, want[:]) {
			t.Fatalf("len %d cut %d: %x, want %x", len(b), c, got, want)
		}
	})
}
