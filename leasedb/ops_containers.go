package leasedb

import (
	"context"
	"errors"
	"time"

	"github.com/blobgw/blobgw/svcerr"
)

// CreateContainer creates a container; 409 ContainerAlreadyExists if taken.
func (d *DB) CreateContainer(ctx context.Context, account, name string, meta map[string]string, access string) (*Container, error) {
	var out *Container
	err := d.Store.Update(ctx, func(tx Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		etag, err := tx.NextETag(ctx)
		if err != nil {
			return err
		}
		c := &Container{Account: account, Name: name, ETag: etag, LastModified: now, Metadata: meta, PublicAccess: access}
		if err := tx.InsertContainer(ctx, c); err != nil {
			if errors.Is(err, ErrExists) {
				return svcerr.New(svcerr.ContainerAlreadyExists)
			}
			return err
		}
		out = c
		return nil
	})
	return out, err
}

// GetContainer reads a container; a lease id, when given, must match an
// active lease (Get Container Properties: x-ms-lease-id).
func (d *DB) GetContainer(ctx context.Context, account, name, leaseID string) (*Container, time.Time, error) {
	var out *Container
	var now time.Time
	err := d.Store.View(ctx, func(tx Tx) error {
		c, err := tx.Container(ctx, account, name, LockNone)
		if err != nil {
			return err
		}
		if c == nil {
			return svcerr.New(svcerr.ContainerNotFound)
		}
		if now, err = tx.Now(ctx); err != nil {
			return err
		}
		if err := CheckReadLease(c.Lease, leaseID, ContainerTarget, now); err != nil {
			return err
		}
		out = c
		return nil
	})
	return out, now, err
}

// SetContainerMetadata replaces the container's metadata (new ETag).
func (d *DB) SetContainerMetadata(ctx context.Context, account, name, leaseID string, cond Conditions, meta map[string]string) (*Container, error) {
	return d.mutateContainer(ctx, account, name, func(tx Tx, now time.Time, c *Container) error {
		if err := CheckReadLease(c.Lease, leaseID, ContainerTarget, now); err != nil {
			return err
		}
		if err := EvalWrite(cond, containerResource(c), UpdateWrite); err != nil {
			return err
		}
		etag, err := tx.NextETag(ctx)
		if err != nil {
			return err
		}
		c.Metadata, c.ETag, c.LastModified = meta, etag, now
		return tx.UpdateContainer(ctx, c)
	})
}

func (d *DB) mutateContainer(ctx context.Context, account, name string, fn func(tx Tx, now time.Time, c *Container) error) (*Container, error) {
	var out *Container
	err := d.Store.Update(ctx, func(tx Tx) error {
		c, err := tx.Container(ctx, account, name, LockExclusive)
		if err != nil {
			return err
		}
		if c == nil {
			return svcerr.New(svcerr.ContainerNotFound)
		}
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		if err := fn(tx, now, c); err != nil {
			return err
		}
		out = c
		return nil
	})
	return out, err
}

// DeleteContainer deletes the container and every blob in it; their backend
// objects are queued for collection after the grace period. A leased
// container needs its lease id (Delete Container: x-ms-lease-id); leased
// blobs inside do not block the delete.
func (d *DB) DeleteContainer(ctx context.Context, account, name, leaseID string, cond Conditions) error {
	return d.DeleteContainerRetained(ctx, account, name, leaseID, cond, 0)
}

// DeleteContainerRetained is DeleteContainer with the account's container
// soft delete retention: above 0 the container and everything in it are
// kept, hidden, for that long (ops_container_restore.go) and nothing is
// queued for collection; 0 deletes as DeleteContainer.
func (d *DB) DeleteContainerRetained(ctx context.Context, account, name, leaseID string, cond Conditions, retention time.Duration) error {
	return d.Store.Update(ctx, func(tx Tx) error {
		c, err := tx.Container(ctx, account, name, LockExclusive)
		if err != nil {
			return err
		}
		if c == nil {
			return svcerr.New(svcerr.ContainerNotFound)
		}
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		if _, err := CheckWriteLease(c.Lease, leaseID, ContainerTarget, now); err != nil {
			return err
		}
		if err := EvalWrite(cond, containerResource(c), UpdateWrite); err != nil {
			return err
		}
		if retention > 0 {
			return softDeleteContainer(ctx, tx, c, now, retention)
		}
		keys, err := tx.DeleteContainer(ctx, account, name)
		if err != nil {
			return err
		}
		return release(ctx, tx, keys, now.Add(d.Grace))
	})
}

// ListContainers lists one page; next is "" on the last page.
func (d *DB) ListContainers(ctx context.Context, account, prefix, marker string, max int) (out []*Container, next string, now time.Time, err error) {
	err = d.Store.View(ctx, func(tx Tx) error {
		if now, err = tx.Now(ctx); err != nil {
			return err
		}
		rows, err := tx.ListContainers(ctx, account, prefix, marker, max+1)
		if err != nil {
			return err
		}
		if len(rows) > max {
			rows = rows[:max]
			next = rows[max-1].Name
		}
		out = rows
		return nil
	})
	return out, next, now, err
}
