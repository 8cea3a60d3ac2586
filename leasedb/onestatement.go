package leasedb

import (
	"context"
	"time"

	"github.com/blobgw/blobgw/svcerr"
)

// The one-statement paths. A read that needs only a blob row, whether its
// container exists and the clock (Get Blob, Get Blob Properties) needs no
// transaction of its own: one statement is one consistent snapshot, so a
// store that offers BlobReader answers it in one round trip instead of
// BEGIN, two or three SELECTs and ROLLBACK. A write that only changes
// columns of an existing row and never creates one (Lease Blob, the
// operator lease actions) needs only that row's lock: a store that offers
// BlobLocker reads the row locked, the container check and the clock in
// one statement. Stores without them (and wrappers that do not forward
// them) get the multi-statement View and Update paths, with the same
// outcomes.

// BlobReader is an optional Store method.
type BlobReader interface {
	// ReadBlob reads, in one statement outside any transaction (its own
	// consistent snapshot), the blob row (nil when absent), whether the
	// container exists, and the database clock read after the row
	// (truncated to microseconds).
	ReadBlob(ctx context.Context, account, container, name string) (b *Blob, containerExists bool, now time.Time, err error)
}

// BlobLocker is an optional Tx method.
type BlobLocker interface {
	// LockBlob reads, in one statement, the blob row with its row lock
	// held for the rest of the transaction (nil when absent), whether the
	// container exists, and the database clock read after the lock was
	// granted (Tx.Now returns it from then on). Unlike Blob with
	// LockExclusive it takes no lock on an absent name and none on the
	// container: it serves only operations that change an existing row
	// and never create one, for which the row lock alone serializes every
	// writer of the name (each of them locks the row before it changes
	// it, and a Delete Container deletes it under its lock).
	LockBlob(ctx context.Context, account, container, name string) (b *Blob, containerExists bool, now time.Time, err error)
}

// withExistingBlob is withBlob for a write that only changes an existing
// row (see BlobLocker): fn gets the locked row (nil when absent) and the
// clock, after ContainerNotFound is decided.
func withExistingBlob(ctx context.Context, tx Tx, ref BlobRef, fn func(tx Tx, now time.Time, b *Blob) error) error {
	l, ok := tx.(BlobLocker)
	if !ok {
		return withBlob(ctx, tx, ref, LockShare, LockExclusive, fn)
	}
	b, containerExists, now, err := l.LockBlob(ctx, ref.Account, ref.Container, ref.Name)
	if err != nil {
		return err
	}
	// A blob row never outlives its container (foreign key).
	if b == nil && !containerExists {
		return svcerr.New(svcerr.ContainerNotFound)
	}
	return fn(tx, now, b)
}

// readBlob reads what GetBlob decides on: the row (nil when absent),
// whether the container exists (true when the row does), and the clock
// (zero when there is no row), in one statement when the store offers
// BlobReader, else in one View.
func (d *DB) readBlob(ctx context.Context, ref BlobRef) (*Blob, bool, time.Time, error) {
	if r, ok := optional[BlobReader](d.Store); ok {
		b, containerExists, now, err := r.ReadBlob(ctx, ref.Account, ref.Container, ref.Name)
		return b, containerExists || b != nil, now, err
	}
	var (
		b               *Blob
		containerExists bool
		now             time.Time
	)
	err := d.Store.View(ctx, func(tx Tx) error {
		var err error
		if b, err = tx.Blob(ctx, ref.Account, ref.Container, ref.Name, LockNone); err != nil {
			return err
		}
		if b == nil {
			c, err := tx.Container(ctx, ref.Account, ref.Container, LockNone)
			containerExists = c != nil
			return err
		}
		containerExists = true
		now, err = tx.Now(ctx)
		return err
	})
	return b, containerExists, now, err
}

// existingBlobTx is blobTx for a write that only changes an existing row
// (Lease Blob and the operator lease actions): the row lock alone, taken
// with the container check and the clock in one statement where the
// store's transaction offers BlobLocker.
func (d *DB) existingBlobTx(ctx context.Context, ref BlobRef, fn func(tx Tx, now time.Time, b *Blob) error) error {
	return d.Store.Update(ctx, func(tx Tx) error { return withExistingBlob(ctx, tx, ref, fn) })
}

// ContainerReader is an optional Store method.
type ContainerReader interface {
	// ReadContainer reads, in one statement outside any transaction, the
	// container row (nil when absent) and the database clock read after
	// it (truncated to microseconds).
	ReadContainer(ctx context.Context, account, name string) (*Container, time.Time, error)
}

// readContainer reads what GetContainer decides on: the row (nil when
// absent) and the clock, in one statement when the store offers
// ContainerReader, else in one View.
func (d *DB) readContainer(ctx context.Context, account, name string) (*Container, time.Time, error) {
	if r, ok := optional[ContainerReader](d.Store); ok {
		return r.ReadContainer(ctx, account, name)
	}
	var (
		c   *Container
		now time.Time
	)
	err := d.Store.View(ctx, func(tx Tx) error {
		var err error
		if c, err = tx.Container(ctx, account, name, LockNone); err != nil || c == nil {
			return err
		}
		now, err = tx.Now(ctx)
		return err
	})
	return c, now, err
}

// Unwrapper is a Store that wraps another (the gateway's metrics wrapper
// times Update and View): the optional one-statement methods are looked
// up through it, so wrapping a store does not put its reads back on the
// multi-statement path.
type Unwrapper interface {
	Unwrap() Store
}

// optional returns s, or the first store s wraps, that implements T.
func optional[T any](s Store) (T, bool) {
	for {
		if t, ok := s.(T); ok {
			return t, true
		}
		u, ok := s.(Unwrapper)
		if !ok {
			var zero T
			return zero, false
		}
		s = u.Unwrap()
	}
}
