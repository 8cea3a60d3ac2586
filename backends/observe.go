package backends

import (
	"context"
	"io"
	"time"
)

// Observer is told of every call an observed backend makes: the operation
// ("Put", "Open", "Delete", "Stat", "List", "DeleteMany"), how long it
// took (for Open, until the reader was returned; the stream is the
// caller's) and its error.
type Observer func(op string, d time.Duration, err error)

// Observe wraps b so that fn sees every call (metrics). The wrapper has
// the abilities of b (FeaturesOf looks through it) and changes nothing
// else.
func Observe(b Backend, fn Observer) Backend { return &observed{b: b, fn: fn} }

type observed struct {
	b  Backend
	fn Observer
}

func (o *observed) done(op string, start time.Time, err error) { o.fn(op, time.Since(start), err) }

func (o *observed) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	start := time.Now()
	err := o.b.Put(ctx, key, r, size)
	o.done("Put", start, err)
	return err
}

func (o *observed) Open(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	start := time.Now()
	rc, err := o.b.Open(ctx, key, offset, length)
	o.done("Open", start, err)
	return rc, err
}

func (o *observed) Delete(ctx context.Context, key string) error {
	start := time.Now()
	err := o.b.Delete(ctx, key)
	o.done("Delete", start, err)
	return err
}

func (o *observed) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	start := time.Now()
	fi, err := o.b.Stat(ctx, key)
	o.done("Stat", start, err)
	return fi, err
}

func (o *observed) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	start := time.Now()
	err := o.b.List(ctx, prefix, fn)
	o.done("List", start, err)
	return err
}

// Features are the wrapped backend's, with batch deletes observed too.
func (o *observed) Features() Features {
	f := FeaturesOf(o.b)
	if bd := f.BatchDeleter; bd != nil {
		f.BatchDeleter = observedBatch{bd, o}
	}
	return f
}

type observedBatch struct {
	bd BatchDeleter
	o  *observed
}

func (x observedBatch) DeleteMany(ctx context.Context, keys []string) error {
	start := time.Now()
	err := x.bd.DeleteMany(ctx, keys)
	x.o.done("DeleteMany", start, err)
	return err
}
