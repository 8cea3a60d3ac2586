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
// BlobLocker reads the row's head locked (BlobHead: no extents), the
// container check and the clock in one statement, and one that offers
// BlobLeaseCommitter writes the lease and commits in one more. Stores without them (and wrappers that do not forward
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

// BlobHead is what a lease action (Lease Blob, the operator lease
// actions) reads of a blob row and returns: what the lease rules
// (ApplyLease; EvalWrite's conditions, x-ms-if-tags among them) and Lease
// Blob's response (ETag, Last-Modified) use. It has no extents and no
// inline bytes, and is not a Blob, so no caller can take it for a blob
// without bytes.
type BlobHead struct {
	Ref          BlobRef
	ETag         string // quoted form
	LastModified time.Time
	// Tags are the blob index tags (x-ms-if-tags); nil or empty when none.
	Tags  map[string]string
	Lease Lease
	// whole is the row as read where the transaction offers no
	// BlobLocker (the multi-statement path), for putBlobLease to store it
	// again where the transaction offers no BlobLeaseWriter either.
	whole *Blob
}

// Head is b's head, as BlobLocker reads it (nil for nil).
func (b *Blob) Head() *BlobHead {
	if b == nil {
		return nil
	}
	return &BlobHead{Ref: BlobRef{Account: b.Account, Container: b.Container, Name: b.Name},
		ETag: b.ETag, LastModified: b.LastModified, Tags: b.Tags, Lease: b.Lease}
}

// blobHead is b's head with b kept whole in it (nil for nil).
func blobHead(b *Blob) *BlobHead {
	h := b.Head()
	if h != nil {
		h.whole = b
	}
	return h
}

func (h *BlobHead) resource() Resource {
	if h == nil {
		return Resource{}
	}
	return Resource{Exists: true, ETag: h.ETag, LastModified: h.LastModified, Tags: h.Tags}
}

// BlobLocker is an optional Tx method.
type BlobLocker interface {
	// LockBlob reads, in one statement, the head of the blob row
	// (BlobHead: never its extents nor its inline bytes) with the row's
	// lock held for the rest of the transaction (nil when absent),
	// whether the container exists, and the database clock read after
	// the lock was granted (Tx.Now returns it from then on). Unlike Blob
	// with LockExclusive it takes no lock on an absent name and none on
	// the container: it serves only the lease actions, which change an
	// existing row and never create one, for which the row lock alone
	// serializes every writer of the name (each of them locks the row
	// before it changes it, and a Delete Container deletes it under its
	// lock).
	LockBlob(ctx context.Context, account, container, name string) (b *BlobHead, containerExists bool, now time.Time, err error)
}

// BlobLeaseCommitter is an optional Tx method, offered beside BlobLocker
// where a statement costs a round trip (Postgres).
type BlobLeaseCommitter interface {
	// CommitBlobLease is BlobLeaseWriter's write and COMMIT in one round
	// trip, of the row LockBlob locked in this transaction: the caller
	// must make no other call on the transaction and return nil from the
	// Update function at once. A refused write rolls the transaction
	// back; a failure whose outcome is unknown carries ErrCommitUnknown,
	// as a failed COMMIT of Update does.
	CommitBlobLease(ctx context.Context, ref BlobRef, l Lease) error
}

// withExistingBlob is withBlob for a lease action (see BlobLocker): fn
// gets the head of the locked row (nil when absent) and the clock, after
// ContainerNotFound is decided.
func withExistingBlob(ctx context.Context, tx Tx, ref BlobRef, fn func(tx Tx, now time.Time, b *BlobHead) error) error {
	return withHead(ctx, tx, ref, BlobLocker.LockBlob, blobHead, fn)
}

// withHead is withBlob for a write that decides on the row's head H
// alone: where tx offers the locker L, lock takes the locks and reads the
// head (nil when absent), the container check and the clock in one call;
// else the row is read whole the Tx way and head makes its H. fn gets the
// head and the clock after ContainerNotFound is decided.
func withHead[L, H any](ctx context.Context, tx Tx, ref BlobRef,
	lock func(L, context.Context, string, string, string) (*H, bool, time.Time, error),
	head func(*Blob) *H, fn func(tx Tx, now time.Time, h *H) error) error {
	l, ok := tx.(L)
	if !ok {
		return withBlob(ctx, tx, ref, LockShare, LockExclusive, func(tx Tx, now time.Time, b *Blob) error {
			return fn(tx, now, head(b))
		})
	}
	h, containerExists, now, err := lock(l, ctx, ref.Account, ref.Container, ref.Name)
	if err != nil {
		return err
	}
	// A blob row never outlives its container (foreign key).
	if h == nil && !containerExists {
		return svcerr.New(svcerr.ContainerNotFound)
	}
	return fn(tx, now, h)
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

// existingBlobTx is blobTx for a lease action (Lease Blob and the
// operator lease actions): the row lock alone, taken with the container
// check and the clock in one statement where the store's transaction
// offers BlobLocker; fn gets the row's head.
func (d *DB) existingBlobTx(ctx context.Context, ref BlobRef, fn func(tx Tx, now time.Time, b *BlobHead) error) error {
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
