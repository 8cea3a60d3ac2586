package leasedb

// Lease Blob and Lease Container (LeaseBlob, LeaseContainer), then the
// operator lease operations (the `blobgw lease` commands). Those run against
// the store directly, so they work while every gateway is down, and they
// take the same locks as Lease Blob and Lease Container: a break goes
// through ApplyLease inside the locked transaction exactly as a Lease Blob
// request does, so a break racing a renew has one outcome whichever commits
// first.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/blobgw/blobgw/svcerr"
)

// LeaseBlob runs one lease action on a blob under the row lock (Lease Blob:
// outcomes by lease state) and returns the blob's head with its new lease:
// a lease action reads no extents and no inline bytes. Lease actions never
// change the ETag or Last-Modified. newID is used when an acquire carries
// no proposed id.
func (d *DB) LeaseBlob(ctx context.Context, ref BlobRef, req LeaseRequest, cond Conditions, newID string) (*BlobHead, LeaseResult, error) {
	var out *BlobHead
	var res LeaseResult
	if err := d.checkWrite(cond); err != nil {
		return nil, res, err
	}
	err := d.existingBlobTx(ctx, ref, func(tx Tx, now time.Time, b *BlobHead) error {
		if b == nil {
			return cond.missingBlob()
		}
		if err := EvalWrite(cond, b.resource(), UpdateWrite); err != nil {
			return err
		}
		l, r, err := ApplyLease(b.Lease, req, newID, now)
		if err != nil {
			return err
		}
		b.Lease, res = l, r
		if err := putBlobLease(ctx, tx, b); err != nil {
			return err
		}
		out = b
		return nil
	})
	return out, res, err
}

// LeaseContainer runs one lease action on a container (Lease Container:
// the same outcomes as Lease Blob).
func (d *DB) LeaseContainer(ctx context.Context, account, name string, req LeaseRequest, cond Conditions, newID string) (*Container, LeaseResult, error) {
	var res LeaseResult
	c, err := d.mutateContainer(ctx, account, name, func(tx Tx, now time.Time, c *Container) error {
		if err := EvalWrite(cond, containerResource(c), UpdateWrite); err != nil {
			return err
		}
		l, r, err := ApplyLease(c.Lease, req, newID, now)
		if err != nil {
			return err
		}
		c.Lease, res = l, r
		return tx.UpdateContainer(ctx, c)
	})
	return c, res, err
}

// ErrLeaseChanged is returned by a forced release when the lease id found
// under the lock is not the one the operator confirmed.
var ErrLeaseChanged = errors.New("leasedb: the lease changed since it was read")

// LeaseOutcome is what an operator action did to one lease: the stored
// columns before and after, both read or written under the row lock, and the
// database clock of that transaction (for computing effective states).
type LeaseOutcome struct {
	Before, After Lease
	Now           time.Time
	// BreakTime is, for a break, the whole seconds until the lease is
	// broken (0 when broken now), as x-ms-lease-time reports it.
	BreakTime int
	// Changed is false when nothing was written (a release of a lease that
	// was already available).
	Changed bool
}

// ListLeases returns every container and blob whose stored lease is not
// available, filtered by f, and the database clock at which to evaluate
// them (Lease.Effective).
func (d *DB) ListLeases(ctx context.Context, f LeaseFilter) ([]LeaseRow, time.Time, error) {
	var rows []LeaseRow
	var now time.Time
	err := d.Store.View(ctx, func(tx Tx) error {
		var err error
		if rows, err = tx.ListLeases(ctx, f); err != nil {
			return err
		}
		now, err = tx.Now(ctx)
		return err
	})
	// The blobs of soft-deleted containers are no operator's business
	// until restored.
	kept := rows[:0]
	for _, r := range rows {
		if !IsDeletedAccount(r.Account) {
			kept = append(kept, r)
		}
	}
	return kept, now, err
}

// GetLease reads the lease of a blob, or of the container when ref.Name is
// "", and the database clock. A missing container is ContainerNotFound, a
// missing blob BlobNotFound.
func (d *DB) GetLease(ctx context.Context, ref BlobRef) (Lease, time.Time, error) {
	var l Lease
	var now time.Time
	err := d.Store.View(ctx, func(tx Tx) error {
		c, err := containerOf(ctx, tx, ref.Account, ref.Container, LockNone)
		if err != nil {
			return err
		}
		l = c.Lease
		if ref.Name != "" {
			b, err := tx.Blob(ctx, ref.Account, ref.Container, ref.Name, LockNone)
			if err != nil {
				return err
			}
			if b == nil {
				return svcerr.New(svcerr.BlobNotFound)
			}
			l = b.Lease
		}
		now, err = tx.Now(ctx)
		return err
	})
	return l, now, err
}

// BreakLease breaks the lease of a blob, or of the container when ref.Name
// is "", with the same state machine and locks as Lease Blob / Lease
// Container action=break. period is the break period in seconds: -1 breaks
// naturally (an infinite lease at once, a fixed one at the end of its term),
// 0 at once, 1..60 after at most that long. A resource without a lease is
// 409 LeaseNotPresentWithLeaseOperation.
func (d *DB) BreakLease(ctx context.Context, ref BlobRef, period int) (LeaseOutcome, error) {
	if period < -1 || period > 60 {
		return LeaseOutcome{}, fmt.Errorf("leasedb: break period %d out of range (-1 or 0..60)", period)
	}
	req := LeaseRequest{Action: LeaseBreak, BreakPeriod: period}
	return d.operateLease(ctx, ref, func(now time.Time, l Lease) (LeaseOutcome, error) {
		nl, res, err := ApplyLease(l, req, "", now)
		if err != nil {
			return LeaseOutcome{}, err
		}
		return LeaseOutcome{Before: l, After: nl, Now: now, BreakTime: res.BreakTime, Changed: true}, nil
	})
}

// ForceReleaseLease clears the lease of a blob, or of the container when
// ref.Name is "", without its lease id: the stored lease becomes the zero
// Lease, as a write that clears a lapsed lease leaves it, so the holder's
// next renew fails with LeaseIdMismatchWithLeaseOperation and its next write
// with its id with LeaseNotPresentWithBlobOperation. When expectID is not
// "", the lease found under the lock must still carry that id (the one the
// operator confirmed), else ErrLeaseChanged and nothing is written. A lease
// that is already available is left alone (Changed false).
func (d *DB) ForceReleaseLease(ctx context.Context, ref BlobRef, expectID string) (LeaseOutcome, error) {
	return d.operateLease(ctx, ref, func(now time.Time, l Lease) (LeaseOutcome, error) {
		out := LeaseOutcome{Before: l, After: l, Now: now}
		if l.ID == "" && l.Effective(now) == LeaseAvailable {
			return out, nil
		}
		if expectID != "" && !sameLeaseID(expectID, l.ID) {
			return out, ErrLeaseChanged
		}
		out.After, out.Changed = Lease{}, true
		return out, nil
	})
}

// operateLease runs fn on the lease of a blob (ref.Name set) or a container
// inside the same locked transaction LeaseBlob / LeaseContainer use, and
// stores the lease fn returns when it reports a change. Lease actions never
// change the ETag or Last-Modified.
func (d *DB) operateLease(ctx context.Context, ref BlobRef, fn func(now time.Time, l Lease) (LeaseOutcome, error)) (LeaseOutcome, error) {
	var out LeaseOutcome
	if ref.Name == "" {
		_, err := d.mutateContainer(ctx, ref.Account, ref.Container, func(tx Tx, now time.Time, c *Container) error {
			o, err := fn(now, c.Lease)
			if err != nil {
				return err
			}
			out = o
			if !o.Changed {
				return nil
			}
			c.Lease = o.After
			return tx.UpdateContainer(ctx, c)
		})
		return out, err
	}
	err := d.existingBlobTx(ctx, ref, func(tx Tx, now time.Time, b *BlobHead) error {
		if b == nil {
			return svcerr.New(svcerr.BlobNotFound)
		}
		o, err := fn(now, b.Lease)
		if err != nil {
			return err
		}
		out = o
		if !o.Changed {
			return nil
		}
		b.Lease = o.After
		return putBlobLease(ctx, tx, b)
	})
	return out, err
}

// putBlobLease stores b's lease, which is all a lease action changes of
// the row, as the transaction's last call: with the lease columns and
// COMMIT in one round trip where tx offers BlobLeaseCommitter, with the
// lease columns alone where it offers BlobLeaseWriter, else the whole row
// (read whole where tx offers no BlobLocker).
func putBlobLease(ctx context.Context, tx Tx, b *BlobHead) error {
	if c, ok := tx.(BlobLeaseCommitter); ok {
		return c.CommitBlobLease(ctx, b.Ref, b.Lease)
	}
	if w, ok := tx.(BlobLeaseWriter); ok {
		return w.SetBlobLease(ctx, b.Ref, b.Lease)
	}
	if b.whole == nil {
		return fmt.Errorf("leasedb: lease of %s: the transaction writes no lease alone and the row was not read whole", b.Ref)
	}
	whole := *b.whole
	whole.Lease = b.Lease
	return tx.PutBlob(ctx, &whole)
}
