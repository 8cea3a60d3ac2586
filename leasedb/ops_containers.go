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
	c, now, err := d.readContainer(ctx, account, name)
	if err != nil {
		return nil, now, err
	}
	if c == nil {
		return nil, now, svcerr.New(svcerr.ContainerNotFound)
	}
	if err := CheckReadLease(c.Lease, leaseID, ContainerTarget, now); err != nil {
		return nil, now, err
	}
	return c, now, nil
}

// SetContainerMetadata replaces the container's metadata (new ETag).
func (d *DB) SetContainerMetadata(ctx context.Context, account, name, leaseID string, cond Conditions, meta map[string]string) (*Container, error) {
	return d.setContainer(ctx, account, name, leaseID, cond, func(c *Container) { c.Metadata = meta })
}

// setContainer is Set Container Metadata and Set Container ACL: a lease
// id, when given, must match the active lease (a leased container without
// one is still writable); then the write conditions; set changes the
// container, which gets a new ETag and Last-Modified.
func (d *DB) setContainer(ctx context.Context, account, name, leaseID string, cond Conditions, set func(c *Container)) (*Container, error) {
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
		set(c)
		c.ETag, c.LastModified = etag, now
		return tx.UpdateContainer(ctx, c)
	})
}

func (d *DB) mutateContainer(ctx context.Context, account, name string, fn func(tx Tx, now time.Time, c *Container) error) (*Container, error) {
	var out *Container
	err := d.Store.Update(ctx, func(tx Tx) error {
		c, err := containerOf(ctx, tx, account, name, LockExclusive)
		if err != nil {
			return err
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
	_, err := d.mutateContainer(ctx, account, name, func(tx Tx, now time.Time, c *Container) error {
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
	return err
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

// containerOf reads a container that must exist: a missing one is 404
// ContainerNotFound.
func containerOf(ctx context.Context, tx Tx, account, name string, lock LockMode) (*Container, error) {
	c, err := tx.Container(ctx, account, name, lock)
	if err == nil && c == nil {
		err = svcerr.New(svcerr.ContainerNotFound)
	}
	return c, err
}
