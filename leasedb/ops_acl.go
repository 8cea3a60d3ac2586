package leasedb

import (
	"context"

	"github.com/blobgw/blobgw/svcerr"
)

// SetContainerACL sets the public access level and the stored access
// policies together (Set Container ACL; new ETag). A lease id, when given,
// must match the active lease; a leased container without one is still
// writable, as for Azure's Set Container ACL.
func (d *DB) SetContainerACL(ctx context.Context, account, name, leaseID string, cond Conditions, access string, acl []SignedIdentifier) (*Container, error) {
	if len(acl) > MaxSignedIdentifiers {
		return nil, svcerr.Newf(svcerr.InvalidXmlDocument, "A container may hold at most %d signed identifiers.", MaxSignedIdentifiers)
	}
	return d.setContainer(ctx, account, name, leaseID, cond, func(c *Container) {
		c.PublicAccess, c.ACL = access, acl
		if len(c.ACL) == 0 {
			c.ACL = nil
		}
	})
}

// ContainerPolicy looks up one stored access policy of a container for SAS
// verification (one read). ok is false when the container or the
// identifier does not exist.
func (d *DB) ContainerPolicy(ctx context.Context, account, name, id string) (si SignedIdentifier, ok bool, err error) {
	err = d.Store.View(ctx, func(tx Tx) error {
		c, err := tx.Container(ctx, account, name, LockNone)
		if err != nil || c == nil {
			return err
		}
		for _, p := range c.ACL {
			if p.ID == id {
				si, ok = p, true
				return nil
			}
		}
		return nil
	})
	return si, ok, err
}

// ServiceProperties returns the account's stored Blob service properties
// document ("" when never set).
func (d *DB) ServiceProperties(ctx context.Context, account string) (string, error) {
	var doc string
	err := d.Store.View(ctx, func(tx Tx) error {
		var err error
		doc, err = tx.ServiceProperties(ctx, account)
		return err
	})
	return doc, err
}

// MergeServiceProperties is Set Blob Service Properties: it replaces the
// account's stored document ("" when none) by merge's result in one
// transaction that holds the document's lock from its read to its write,
// so two at once on any replicas each keep the other's elements. With
// days >= 0 (a DeleteRetentionPolicy in the request; 0 when it is off) the
// blob delete retention goes into the account's settings in the same
// transaction, as SetServicePropertiesRetention does; the document and
// what deletes act on never disagree. merge may run more than once.
func (d *DB) MergeServiceProperties(ctx context.Context, account string, merge func(old string) (string, error), days int) error {
	if days > MaxRetentionDays {
		return svcerr.New(svcerr.InvalidXmlDocument)
	}
	return d.Store.Update(ctx, func(tx Tx) error {
		old, err := tx.LockServiceProperties(ctx, account)
		if err != nil {
			return err
		}
		doc, err := merge(old)
		if err != nil {
			return err
		}
		if err := tx.PutServiceProperties(ctx, account, doc); err != nil {
			return err
		}
		if days < 0 {
			return nil
		}
		return putRetentionDays(ctx, tx, account, days)
	})
}
