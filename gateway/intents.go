package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

// keyPool hands out backend keys whose upload intents are already durable.
//
// Every write records an intent before its first byte reaches the backend
// (the no-leak invariant of docs/architecture.md). Committing one intent per request puts a
// database commit on the path of every Put Block; the pool records them in
// batches instead, one transaction per batch, and refills in the
// background before it runs dry, so a request usually finds a key waiting.
//
// A pooled key is an ordinary intent: its deadline is the time it was
// recorded plus the TTL, so a key is handed out only while at least
// TTL-maxAge of that deadline is left (an upload keeps nearly the whole TTL).
// Keys that age out are simply dropped: the collector forgets their entries
// after the deadline (there is no object to delete). Close forgets the keys
// still pooled so a stopping replica leaves no entries behind.
type keyPool struct {
	db     *leasedb.DB
	ttl    time.Duration
	maxAge time.Duration
	batch  int

	mu      sync.Mutex
	keys    []pooledKey
	filling chan struct{} // non-nil while a refill runs; closed when it ends
	fillErr error         // the last refill's error, for the callers that waited on it
	closed  bool          // after close: one intent per take, nothing pooled
}

type pooledKey struct {
	key  string
	made time.Time // local monotonic clock, when the batch was committed
}

// Pool sizes. A batch of 16 turns the intent commits of a 4-way SDK upload
// into one commit per 16 blocks.
const (
	poolBatch     = 16
	poolLowWater  = poolBatch / 4
	poolMaxAgeCap = 10 * time.Minute
)

func newKeyPool(db *leasedb.DB, ttl time.Duration) *keyPool {
	return &keyPool{db: db, ttl: ttl, maxAge: min(ttl/10, poolMaxAgeCap), batch: poolBatch}
}

// take returns a key with a durable intent, waiting for a refill when the
// pool is empty.
func (p *keyPool) take(ctx context.Context) (string, error) {
	for waited := false; ; waited = true {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			k := newKey()
			return k, p.db.AddIntent(ctx, k, p.ttl)
		}
		// Drop aged keys, except right after waiting for a refill: with a
		// TTL shorter than a refill takes, nothing would ever be fresh.
		cutoff := time.Now().Add(-p.maxAge)
		for !waited && len(p.keys) > 0 && p.keys[0].made.Before(cutoff) {
			p.keys = p.keys[1:]
		}
		if n := len(p.keys); n > 0 {
			k := p.keys[0].key
			p.keys = p.keys[1:]
			if n-1 <= poolLowWater && p.filling == nil {
				p.startFill()
			}
			p.mu.Unlock()
			return k, nil
		}
		if p.filling == nil {
			p.startFill()
		}
		done := p.filling
		p.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		p.mu.Lock()
		err := p.fillErr
		empty := len(p.keys) == 0
		p.mu.Unlock()
		if err != nil && empty {
			return "", err
		}
	}
}

// startFill runs one refill in the background; p.mu is held.
func (p *keyPool) startFill() {
	done := make(chan struct{})
	p.filling = done
	go func() {
		keys := make([]string, p.batch)
		for i := range keys {
			keys[i] = newKey()
		}
		// The refill serves many requests, so no single request's context
		// may cancel it; a stuck database still ends it.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := p.db.AddIntents(ctx, keys, p.ttl)
		cancel()
		made := time.Now()
		p.mu.Lock()
		if err == nil {
			for _, k := range keys {
				p.keys = append(p.keys, pooledKey{key: k, made: made})
			}
		}
		p.fillErr = err
		p.filling = nil
		p.mu.Unlock()
		close(done)
	}()
}

// pooled returns the keys waiting in the pool.
func (p *keyPool) pooled() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, len(p.keys))
	for i, k := range p.keys {
		out[i] = k.key
	}
	return out
}

// close waits for a running refill, then forgets the pooled keys' intents.
func (p *keyPool) close(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	done := p.filling
	p.mu.Unlock()
	if done != nil {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	p.mu.Lock()
	keys := make([]string, len(p.keys))
	for i, k := range p.keys {
		keys[i] = k.key
	}
	p.keys = nil
	p.mu.Unlock()
	if len(keys) == 0 {
		return nil
	}
	_, err := p.db.Store.Forget(ctx, keys)
	return err
}
