package leasedb

import (
	"context"
	"strings"
	"time"

	"github.com/blobgw/blobgw/svcerr"
)

// SetBlobTags replaces the blob's index tags (Set Blob Tags) and returns
// the blob's head with them. Tags are not part of the blob's content or
// properties: the ETag and Last-Modified stay, as on Azure. The lease is
// enforced as for writes (412 LeaseIdMissing when leased and no id is
// given); cond carries x-ms-if-tags and the x-ms-blob-if-* conditions,
// evaluated under the row lock. tags must already be valid
// (ValidateTags). Neither the extents nor a small blob's inline bytes are
// read or written where the store offers BlobTierLocker.
func (d *DB) SetBlobTags(ctx context.Context, ref BlobRef, leaseID string, cond Conditions, tags map[string]string) (*BlobHead, error) {
	if err := d.checkWrite(cond); err != nil {
		return nil, err
	}
	var out *BlobHead
	err := d.Store.Update(ctx, func(tx Tx) error {
		return withTierHead(ctx, tx, ref, func(tx Tx, now time.Time, h *BlobTierHead) error {
			lease, err := checkUpdateHead(h.head(), leaseID, cond, now)
			if err != nil {
				return err
			}
			h.Tags, h.Lease = tags, lease
			if err := putBlobTags(ctx, tx, h); err != nil {
				return err
			}
			out = &h.BlobHead
			return nil
		})
	})
	return out, err
}

// GetBlobTags reads a blob's head for Get Blob Tags: 404 when absent, the
// read lease check, then cond (x-ms-if-tags and x-ms-blob-if-*). Every
// failed condition is 412 ConditionNotMet: a tag read has no 304. It is
// one statement where the store offers BlobHeadReader.
func (d *DB) GetBlobTags(ctx context.Context, ref BlobRef, leaseID string, cond Conditions) (*BlobHead, error) {
	h, containerExists, now, err := d.readBlobHead(ctx, ref)
	switch {
	case err != nil:
		return nil, err
	case !containerExists:
		return nil, svcerr.New(svcerr.ContainerNotFound)
	case h == nil:
		return nil, svcerr.New(svcerr.BlobNotFound)
	}
	if err := checkReadLeaseUpdateHead(h, leaseID, cond, now); err != nil {
		return nil, err
	}
	return h, nil
}

// SetBlobTier sets a block blob's access tier, or a page blob's premium
// tier (P4 ... P80, canonical; CanonicalPremiumTier), (Set Blob Tier), and
// returns the blob's head. The tier is stored and reported; nothing moves
// and there is no rehydration: leaving Archive takes effect at once. The
// ETag and Last-Modified stay (the service's behaviour on Set Blob Tier
// is unverified; leaving them is what conditional clients tolerate best).
// The lease check is read-style: an id, when given, must match the active
// lease. cond carries x-ms-if-tags. Like SetBlobTags it reads and writes
// the row's head alone where the store offers BlobTierLocker.
func (d *DB) SetBlobTier(ctx context.Context, ref BlobRef, leaseID string, cond Conditions, tier string) (*BlobHead, error) {
	var out *BlobHead
	err := d.Store.Update(ctx, func(tx Tx) error {
		return withTierHead(ctx, tx, ref, func(tx Tx, now time.Time, h *BlobTierHead) error {
			if err := checkReadLeaseUpdateHead(h.head(), leaseID, cond, now); err != nil {
				return err
			}
			if err := tierRule(h.Type, h.Size, tier); err != nil {
				return err
			}
			h.AccessTier = tier
			if err := putBlobTier(ctx, tx, h); err != nil {
				return err
			}
			out = &h.BlobHead
			return nil
		})
	})
	return out, err
}

// applyTier is Set Blob Tier's rule (tierRule) for one version, and its
// change.
func applyTier(b *Blob, tier string) error {
	if err := tierRule(b.Type, b.Size, tier); err != nil {
		return err
	}
	b.AccessTier = tier
	return nil
}

// tierRule is Set Blob Tier's rule for a blob or version of type typ and
// size bytes: Hot, Cool, Cold and Archive apply to block blobs only; a
// premium tier sets a page blob's size class, so no other blob type takes
// it (it is not a tier there at all) and the blob must fit it.
func tierRule(typ string, size int64, tier string) error {
	if _, premium, tooSmall := PremiumTier(tier, size); premium {
		if typ != "PageBlob" {
			return svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-access-tier", tier)
		}
		if tooSmall != nil {
			return tooSmall
		}
	} else if typ != "BlockBlob" {
		return svcerr.Newf(svcerr.InvalidBlobType, "Access tiers apply to block blobs only.")
	}
	return nil
}

// FoundBlob is one Find Blobs by Tags result.
type FoundBlob struct {
	Container, Name string
	// Tags are the blob's tags that the expression names (what the service
	// returns), not necessarily all of them.
	Tags map[string]string
}

// FindResult is one page of Find Blobs by Tags.
type FindResult struct {
	Blobs []FoundBlob
	Next  string // opaque marker; "" on the last page
}

// findBatch is how many rows one query of Find Blobs by Tags reads.
const findBatch = 1000

// FindBlobsByTags returns up to max blobs whose tags satisfy where, in
// (container, name) order: the blobs of container, or of every container
// of the account when container is "". marker resumes after a previous
// page's last blob. It runs in one read transaction.
//
// The candidates come from the tag index (Tx.FindTagged) through the
// values of one key that every match has (TagExpr.Lookup): an equality
// reads only the blobs with that tag value, in order; a range reads and
// sorts the blobs whose value is in it, once per page. Each candidate is
// then checked against the whole expression. An expression without a tag
// key to look up (only @container) walks the blob rows in scope instead.
func (d *DB) FindBlobsByTags(ctx context.Context, account, container string, where *TagExpr, marker string, max int) (*FindResult, error) {
	after, err := DecodeMarker(marker)
	if err != nil {
		return nil, err
	}
	afterC, afterName, _ := strings.Cut(after, "/")
	if after != "" && container != "" && afterC != container {
		return nil, svcerr.Query(svcerr.InvalidQueryParameterValue, "marker", marker, "the marker belongs to another container")
	}
	res := &FindResult{}
	err = d.Store.View(ctx, func(tx Tx) error {
		res.Blobs, res.Next = nil, ""
		full := false
		// take adds a blob if it matches; it reports true when it is one
		// match more than fits (there is a next page), and the page ends.
		take := func(c, name string, tags map[string]string) bool {
			if !where.MatchIn(c, tags) {
				return false
			}
			if full {
				last := res.Blobs[len(res.Blobs)-1]
				res.Next = EncodeMarker(last.Container + "/" + last.Name)
				return true
			}
			res.Blobs = append(res.Blobs, FoundBlob{Container: c, Name: name, Tags: pickTags(tags, where.Keys())})
			full = len(res.Blobs) == max
			return false
		}
		if container != "" {
			_, err := containerOf(ctx, tx, account, container, LockNone)
			if err != nil {
				return err
			}
		}
		r, only, ok := where.Lookup()
		if ok {
			scope := container
			if scope == "" {
				scope = only // every match is in the @container named
			}
			ac, an := afterC, afterName
			for {
				rows, err := tx.FindTagged(ctx, account, scope, r, ac, an, findBatch)
				if err != nil {
					return err
				}
				for _, b := range rows {
					ac, an = b.Container, b.Name
					if take(b.Container, b.Name, b.Tags) {
						return nil
					}
				}
				if len(rows) < findBatch {
					return nil
				}
			}
		}
		// scan walks one container's blobs after name; it reports done
		// when the page ended.
		scan := func(c, name string) (bool, error) {
			for {
				rows, err := tx.ListBlobs(ctx, account, c, "", name, findBatch)
				if err != nil {
					return false, err
				}
				for _, b := range rows {
					name = b.Name
					if take(c, b.Name, b.Tags) {
						return true, nil
					}
				}
				if len(rows) < findBatch {
					return false, nil
				}
			}
		}
		if container != "" {
			_, err = scan(container, afterName)
			return err
		}
		if afterC != "" {
			if done, err := scan(afterC, afterName); err != nil || done {
				return err
			}
		}
		cursor := afterC
		for {
			cs, err := tx.ListContainers(ctx, account, "", cursor, findBatch)
			if err != nil {
				return err
			}
			for _, c := range cs {
				cursor = c.Name
				if done, err := scan(c.Name, ""); err != nil || done {
					return err
				}
			}
			if len(cs) < findBatch {
				return nil
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// pickTags returns the tags named in keys.
func pickTags(tags map[string]string, keys []string) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		if v, ok := tags[k]; ok {
			out[k] = v
		}
	}
	return out
}
