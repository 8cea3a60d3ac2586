package leasedb

import (
	"context"
	"time"

	"github.com/blobgw/blobgw/svcerr"
)

// AccountSettings are an account's settings kept in the metadata store,
// shared by every replica.
type AccountSettings struct {
	// Versioning: every write that creates or replaces a blob (Put Blob,
	// Put Block List, Copy Blob, the From-URL puts, Set Blob Metadata)
	// and every Delete Blob of the base blob keeps the previous blob as a
	// version.
	Versioning bool
	// DeleteRetentionDays is the blob delete retention of the account's
	// DeleteRetentionPolicy (ops_softdelete.go); 0 when it is off.
	DeleteRetentionDays int
}

// GetAccountSettings reads an account's settings (the defaults when none
// were ever stored).
func (d *DB) GetAccountSettings(ctx context.Context, account string) (AccountSettings, error) {
	var out AccountSettings
	err := d.Store.View(ctx, func(tx Tx) error {
		var err error
		out, err = tx.AccountSettings(ctx, account)
		return err
	})
	return out, err
}

// SetVersioning turns blob versioning of an account on or off. Writes read
// the setting in their commit transaction, so the change applies to the
// next commit on every replica. Turning it off keeps every version.
func (d *DB) SetVersioning(ctx context.Context, account string, on bool) error {
	return d.Store.Update(ctx, func(tx Tx) error {
		// Locked before the read: a concurrent change of the retention
		// days is kept, not written back over.
		s, err := tx.LockAccountSettings(ctx, account)
		if err != nil {
			return err
		}
		s.Versioning = on
		return tx.PutAccountSettings(ctx, account, s)
	})
}

// ParseVersionID validates a versionid query value (the snapshot id form).
func ParseVersionID(v string) (string, error) {
	t, err := time.Parse(SnapshotFormat, v)
	if err != nil {
		return "", svcerr.Query(svcerr.InvalidQueryParameterValue, "versionid", v, "not a version id")
	}
	return t.UTC().Format(SnapshotFormat), nil
}

// nextVersionID is a version id from the database clock that is later
// than last (the name's latest version id, "" for none): ids of one name
// are unique and strictly increasing even when the clock repeats a tick
// or steps back.
func nextVersionID(now time.Time, last string) string {
	at := now.UTC().Truncate(100 * time.Nanosecond)
	if last != "" {
		if l, err := time.Parse(SnapshotFormat, last); err == nil && !at.After(l) {
			at = l.Add(100 * time.Nanosecond)
		}
	}
	return at.Format(SnapshotFormat)
}

// latestVersionID is the latest version id of the name: the current
// blob's, else the newest previous version's, soft-deleted ones included
// (Undelete Blob brings those back, so a new id must not take theirs; the
// caller holds the name lock).
func latestVersionID(ctx context.Context, tx Tx, ref BlobRef, cur *Blob) (string, error) {
	if cur != nil && cur.VersionID != "" {
		return cur.VersionID, nil
	}
	vs, err := tx.Versions(ctx, ref.Account, ref.Container, ref.Name)
	if err != nil {
		return "", err
	}
	last := ""
	if len(vs) > 0 {
		last = vs[len(vs)-1].VersionID
	}
	del, err := tx.DeletedBlobs(ctx, ref.Account, ref.Container, ref.Name)
	if err != nil {
		return "", err
	}
	for _, r := range del {
		if r.NonCurrent && r.VersionID > last {
			last = r.VersionID
		}
	}
	return last, nil
}

// keepVersion is the versioning step of a write that replaces the current
// blob old (nil when there is none) of ref, under the name lock, before
// the write's own bookkeeping (so that the version row counts as a
// reference to old's extents). With versioning on, old becomes a previous
// version sharing its extents (a blob written before versioning was turned
// on gets its version id now) and the returned id is the new blob's. With
// versioning off the new blob has no version id (""); an old blob that has
// one is a version and is kept as one, so turning versioning off never
// loses a version.
func keepVersion(ctx context.Context, tx Tx, ref BlobRef, now time.Time, old *Blob) (string, error) {
	s, err := tx.AccountSettings(ctx, ref.Account)
	if err != nil {
		return "", err
	}
	if !s.Versioning && (old == nil || old.VersionID == "") {
		return "", nil
	}
	last, err := latestVersionID(ctx, tx, ref, old)
	if err != nil {
		return "", err
	}
	if old != nil {
		v := *old
		if v.VersionID == "" {
			v.VersionID = nextVersionID(now, last)
			last = v.VersionID
		}
		v.Lease, v.Snapshot, v.NonCurrent = Lease{}, "", true
		if err := tx.PutVersion(ctx, &v); err != nil {
			return "", err
		}
	}
	if !s.Versioning {
		return "", nil
	}
	return nextVersionID(now, last), nil
}

// nameRows reads the rows of ref other than its current blob that may
// share its extents: snapshots and previous versions.
func nameRows(ctx context.Context, tx Tx, ref BlobRef) ([]*Blob, error) {
	return tx.NameRows(ctx, ref.Account, ref.Container, ref.Name)
}

// versionOf reads the version versionID of ref: the current blob when it
// is that version, else the previous version; 404 BlobNotFound when
// neither.
func versionOf(ctx context.Context, tx Tx, ref BlobRef, cur *Blob, versionID string) (*Blob, error) {
	if cur != nil && cur.VersionID == versionID {
		return cur, nil
	}
	v, err := tx.Version(ctx, ref.Account, ref.Container, ref.Name, versionID)
	if err == nil && v == nil {
		err = svcerr.New(svcerr.BlobNotFound)
	}
	return v, err
}

// GetVersion reads one version of a blob for Get Blob / Get Blob
// Properties / Get Blob Metadata with ?versionid=: 404 BlobNotFound when
// the name has no such version (the current blob answers to its own
// version id), then, for the current version, the read lease check Get
// Blob takes without ?versionid= (leaseID, x-ms-lease-id, when given,
// must match the active lease), then the read conditions. A previous
// version has no lease: reading it needs no lease id.
func (d *DB) GetVersion(ctx context.Context, ref BlobRef, versionID, leaseID string, cond Conditions) (*Blob, time.Time, error) {
	var out *Blob
	var now time.Time
	err := d.blobView(ctx, ref, func(tx Tx, n time.Time, b *Blob) error {
		now = n
		v, err := versionOf(ctx, tx, ref, b, versionID)
		if err != nil {
			return err
		}
		if !v.NonCurrent {
			if err := CheckReadLease(v.Lease, leaseID, BlobTarget, now); err != nil {
				return err
			}
		}
		out = v
		return EvalRead(cond, blobResource(v))
	})
	return out, now, err
}

// DeleteVersion is Delete Blob with ?versionid=: it removes that previous
// version only; its extents are collected unless another row of the name
// still references them. With the account's DeleteRetentionPolicy on the
// version is soft-deleted instead, as Azure does (soft reports it: Delete
// Blob's x-ms-delete-type-permanent false): it reads as absent (404) and
// leaves the listing of versions until Undelete Blob restores it or the
// collector purges it once the retention passed. A version already
// soft-deleted is 404 BlobNotFound, as a soft-deleted snapshot is. The
// current version cannot be deleted by its id (403
// OperationNotAllowedOnRootBlob, as Azure answers): a Delete Blob without
// versionid deletes the current blob.
func (d *DB) DeleteVersion(ctx context.Context, ref BlobRef, versionID string, cond Conditions) (soft bool, err error) {
	if err := d.checkWrite(cond); err != nil {
		return false, err
	}
	err = d.blobTx(ctx, ref, func(tx Tx, now time.Time, b *Blob) error {
		soft = false // the transaction may run again
		if b != nil && b.VersionID == versionID {
			return svcerr.Newf(svcerr.OperationNotAllowedOnRootBlob, "The current version of a blob cannot be deleted by its version id; delete the blob instead.")
		}
		return d.deleteNameRow(ctx, tx, ref, now, b, cond,
			func() (*Blob, error) { return tx.Version(ctx, ref.Account, ref.Container, ref.Name, versionID) },
			func() error { return tx.DeleteVersion(ctx, ref.Account, ref.Container, ref.Name, versionID) },
			func(v *Blob) (bool, error) {
				days, err := retention(ctx, tx, ref.Account)
				if err != nil || days == 0 {
					return false, err
				}
				soft = true
				return true, d.softDeleteVersion(ctx, tx, v, now, days)
			})
	})
	return soft, err
}

// updateVersion changes the tier or tags of one version (Set Blob Tier,
// Set Blob Tags with ?versionid=): the current version through its blob
// row, with the current blob's lease check as the operation takes it
// without ?versionid= (writeLease: Set Blob Tags', an active lease needs
// its id; otherwise Set Blob Tier's read-style check, an id, when given,
// must match); a previous version through its own row. cond is evaluated
// against the version. Nothing else of a version changes.
func (d *DB) updateVersion(ctx context.Context, ref BlobRef, versionID, leaseID string, writeLease bool, cond Conditions, fn func(v *Blob) error) (*Blob, error) {
	if err := d.checkWrite(cond); err != nil {
		return nil, err
	}
	var out *Blob
	err := d.blobTx(ctx, ref, func(tx Tx, now time.Time, b *Blob) error {
		v, err := versionOf(ctx, tx, ref, b, versionID)
		if err != nil {
			return err
		}
		switch {
		case v.NonCurrent:
		case writeLease:
			if v.Lease, err = CheckWriteLease(v.Lease, leaseID, BlobTarget, now); err != nil {
				return err
			}
		default:
			if err := CheckReadLease(v.Lease, leaseID, BlobTarget, now); err != nil {
				return err
			}
		}
		if err := EvalWrite(cond, blobResource(v), UpdateWrite); err != nil {
			return err
		}
		if err := fn(v); err != nil {
			return err
		}
		if v.NonCurrent {
			err = tx.PutVersion(ctx, v)
		} else {
			err = tx.PutBlob(ctx, v)
		}
		if err != nil {
			return err
		}
		out = v
		return nil
	})
	return out, err
}

// SetVersionTags is Set Blob Tags with ?versionid=. tags must already be
// valid (ValidateTags). Only the current version's tags are in the index
// Find Blobs by Tags reads.
func (d *DB) SetVersionTags(ctx context.Context, ref BlobRef, versionID, leaseID string, cond Conditions, tags map[string]string) (*Blob, error) {
	return d.updateVersion(ctx, ref, versionID, leaseID, true, cond, func(v *Blob) error {
		v.Tags = tags
		return nil
	})
}

// SetVersionTier is Set Blob Tier with ?versionid= (see SetBlobTier).
func (d *DB) SetVersionTier(ctx context.Context, ref BlobRef, versionID, leaseID string, cond Conditions, tier string) (*Blob, error) {
	return d.updateVersion(ctx, ref, versionID, leaseID, false, cond, func(v *Blob) error {
		return applyTier(v, tier)
	})
}

// GetVersionTags reads one version for Get Blob Tags with ?versionid=:
// 404 BlobNotFound when absent, then, for the current version, the read
// lease check Get Blob Tags takes without ?versionid= (leaseID, when
// given, must match the active lease), then cond (x-ms-if-tags and
// x-ms-blob-if-*); every failed condition is 412 (a tag read has no 304).
func (d *DB) GetVersionTags(ctx context.Context, ref BlobRef, versionID, leaseID string, cond Conditions) (*Blob, error) {
	var out *Blob
	err := d.blobView(ctx, ref, func(tx Tx, now time.Time, b *Blob) error {
		v, err := versionOf(ctx, tx, ref, b, versionID)
		if err != nil {
			return err
		}
		if !v.NonCurrent {
			if err := CheckReadLease(v.Lease, leaseID, BlobTarget, now); err != nil {
				return err
			}
		}
		out = v
		return EvalWrite(cond, blobResource(v), UpdateWrite)
	})
	return out, err
}
