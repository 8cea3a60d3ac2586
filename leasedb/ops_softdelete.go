package leasedb

import (
	"context"
	"errors"
	"time"

	"github.com/blobgw/blobgw/svcerr"
)

// Blob soft delete (Set Blob Service Properties DeleteRetentionPolicy,
// Undelete Blob). With a retention of N days set on the account, Delete
// Blob keeps the blob and its snapshots as soft-deleted rows (the
// deleted_blobs table), an overwrite keeps the replaced blob as a
// soft-deleted snapshot, Undelete Blob moves them back, and the collector
// purges a row N days (by the database clock) after its deletion. A
// soft-deleted row is a row of its name like a snapshot: it keeps its
// extents alive, so a key is collected only when its last row goes.

// SoftDeleteTx is what a store keeps of soft-deleted blob rows.
type SoftDeleteTx interface {
	// PutDeletedBlob inserts a soft-deleted row: b.NonCurrent for a
	// version (b.VersionID its id), else b.Snapshot "" for a base blob
	// or the snapshot id; b.DeletedTime and b.DeleteExpires set; every
	// other column of b stored as for PutBlob. ErrExists when the name
	// has that row already (DeletedKey); the container must exist
	// (ErrNotFound).
	PutDeletedBlob(ctx context.Context, b *Blob) error
	// DeletedBlobs lists the soft-deleted rows of a blob name: its base
	// blob first (Snapshot ""), then its snapshots by id, then its
	// versions (NonCurrent) by id.
	DeletedBlobs(ctx context.Context, account, container, blob string) ([]*Blob, error)
	// RemoveDeletedBlob removes one soft-deleted row, named by its
	// DeletedKey; ErrNotFound when absent.
	RemoveDeletedBlob(ctx context.Context, account, container, blob, key string) error
	// ExpiredBlobs returns up to limit soft-deleted rows (any account)
	// whose DeleteExpires is not after before, soonest first, from an
	// index of the expiry times.
	ExpiredBlobs(ctx context.Context, before time.Time, limit int) ([]DeletedRef, error)
}

// DeletedRef names one soft-deleted row.
type DeletedRef struct {
	BlobRef
	// Snapshot is the row's DeletedKey: "" for a soft-deleted base blob.
	Snapshot string
}

// DeletedKey names a soft-deleted row among its name's: "" for the base
// blob, the snapshot id for a snapshot, "v" and the version id for a
// previous version (the listing position of a version, which sorts after
// every snapshot id). A version id and a snapshot id of one name may be
// equal (both are times of the database clock), their keys never are.
func DeletedKey(b *Blob) string {
	if b.NonCurrent {
		return versionPos + b.VersionID
	}
	return b.Snapshot
}

// MaxRetentionDays bounds DeleteRetentionPolicy Days (Azure: 1 to 365).
const MaxRetentionDays = 365

// ClockOffsetter is implemented by stores whose database clock a test can
// move forward (Tx.Now, and the clock the one-statement reads return, are
// the clock plus the offset), to test what the database clock decides
// (retention expiry, lease expiry) without waiting days.
type ClockOffsetter interface {
	SetClockOffset(d time.Duration)
}

// day is the length of one retention day: 24 h unless a test shortens it
// (DB.RetentionDay).
func (d *DB) day() time.Duration {
	if d.RetentionDay > 0 {
		return d.RetentionDay
	}
	return 24 * time.Hour
}

// RemainingDays is what List Blobs reports as RemainingRetentionDays of a
// soft-deleted row at now: the days left until it expires, rounded up
// (with day the length of a retention day).
func RemainingDays(b *Blob, now time.Time, day time.Duration) int {
	if day <= 0 {
		day = 24 * time.Hour
	}
	left := b.DeleteExpires.Sub(now)
	if left <= 0 {
		return 0
	}
	return int((left + day - 1) / day)
}

// PastRetention reports whether b is a soft-deleted row whose retention
// has passed at now: permanently deleted, as Undelete Blob holds, though
// the collector may not have purged it yet.
func PastRetention(b *Blob, now time.Time) bool {
	return !b.DeletedTime.IsZero() && !now.Before(b.DeleteExpires)
}

// SetServicePropertiesRetention is Set Blob Service Properties: it stores
// the document and, in the same transaction, the effective blob delete
// retention (days, 0 when DeleteRetentionPolicy is off) in the account's
// settings, where every commit of every replica reads it.
func (d *DB) SetServicePropertiesRetention(ctx context.Context, account, doc string, days int) error {
	if days < 0 || days > MaxRetentionDays {
		return svcerr.New(svcerr.InvalidXmlDocument)
	}
	return d.Store.Update(ctx, func(tx Tx) error {
		if err := tx.PutServiceProperties(ctx, account, doc); err != nil {
			return err
		}
		return putRetentionDays(ctx, tx, account, days)
	})
}

// putRetentionDays stores the account's blob delete retention days in its
// settings, keeping the rest of them (locked before the read, so a
// concurrent SetVersioning is not written back over).
func putRetentionDays(ctx context.Context, tx Tx, account string, days int) error {
	s, err := tx.LockAccountSettings(ctx, account)
	if err != nil {
		return err
	}
	if s.DeleteRetentionDays == days {
		return nil
	}
	s.DeleteRetentionDays = days
	return tx.PutAccountSettings(ctx, account, s)
}

// softDelete keeps row (a blob or snapshot row of ref just removed from
// the live tables) as a soft-deleted row under snapshot ("" for the base
// blob) from now for days. A soft-deleted base blob already there (a
// blob deleted, then created and deleted again) is kept as a soft-deleted
// snapshot of its own, as only one base of a name can be soft-deleted;
// a snapshot id already taken among the soft-deleted rows (the same 100
// ns tick) gets the next free one.
func (d *DB) softDelete(ctx context.Context, tx Tx, ref BlobRef, row *Blob, snapshot string, now time.Time, days int) error {
	r := *row
	r.Lease, r.NonCurrent, r.Snapshot = Lease{}, false, snapshot
	r.DeletedTime, r.DeleteExpires = now, now.Add(time.Duration(days)*d.day())
	err := tx.PutDeletedBlob(ctx, &r)
	if !errors.Is(err, ErrExists) {
		return err
	}
	if snapshot == "" {
		rows, err := tx.DeletedBlobs(ctx, ref.Account, ref.Container, ref.Name)
		if err != nil {
			return err
		}
		if len(rows) == 0 || rows[0].Snapshot != "" {
			return errors.New("leasedb: soft delete: the deleted base blob vanished under the name lock")
		}
		old := rows[0]
		if err := tx.RemoveDeletedBlob(ctx, ref.Account, ref.Container, ref.Name, ""); err != nil {
			return err
		}
		if old.Snapshot, err = freeSnapshotID(ctx, tx, ref, now); err != nil {
			return err
		}
		if err := tx.PutDeletedBlob(ctx, old); err != nil {
			return err
		}
		return tx.PutDeletedBlob(ctx, &r)
	}
	if r.Snapshot, err = freeSnapshotID(ctx, tx, ref, now); err != nil {
		return err
	}
	return tx.PutDeletedBlob(ctx, &r)
}

// softDeleteVersion keeps v, a previous version of ref just removed from
// the versions table, as a soft-deleted version from now for days (Delete
// Blob ?versionid= under a DeleteRetentionPolicy, as Azure soft-deletes a
// version): a row of its name, so its extents stay until it is restored
// or purged. Version ids are unique per name, so there is no clash.
func (d *DB) softDeleteVersion(ctx context.Context, tx Tx, v *Blob, now time.Time, days int) error {
	r := *v
	r.Lease, r.NonCurrent, r.Snapshot = Lease{}, true, ""
	r.DeletedTime, r.DeleteExpires = now, now.Add(time.Duration(days)*d.day())
	return tx.PutDeletedBlob(ctx, &r)
}

// freeSnapshotID is a snapshot id from now that no snapshot of ref, live
// or soft-deleted, has (the caller holds the name lock).
func freeSnapshotID(ctx context.Context, tx Tx, ref BlobRef, now time.Time) (string, error) {
	rows, err := nameRows(ctx, tx, ref)
	if err != nil {
		return "", err
	}
	taken := map[string]bool{}
	for _, r := range rows {
		if r.Snapshot != "" {
			taken[r.Snapshot] = true
		}
	}
	return firstFreeSnapshotID(now, func(id string) (bool, error) { return taken[id], nil })
}

// keepOverwritten is the soft-delete step of a write that replaces the
// whole blob old (nil when none) of ref: with a retention set and old not
// kept as a version (versioning off, old not a version), old is kept as a
// soft-deleted snapshot, as Azure protects overwritten data. It runs
// before the write's own bookkeeping, so the row counts as a reference to
// old's extents.
func (d *DB) keepOverwritten(ctx context.Context, tx Tx, ref BlobRef, now time.Time, old *Blob) error {
	if old == nil {
		return nil
	}
	s, err := tx.AccountSettings(ctx, ref.Account)
	if err != nil || s.DeleteRetentionDays == 0 || s.Versioning || old.VersionID != "" {
		return err
	}
	id, err := freeSnapshotID(ctx, tx, ref, now)
	if err != nil {
		return err
	}
	return d.softDelete(ctx, tx, ref, old, id, now, s.DeleteRetentionDays)
}

// UndeleteBlob is Undelete Blob: it restores the name's soft-deleted base
// blob, when there is no live blob under the name, every soft-deleted
// snapshot (a live snapshot with the same id keeps its place and the
// soft-deleted one stays) and every soft-deleted version (Azure: Undelete
// Blob always restores all soft-deleted versions of the blob). With a
// live blob it restores the snapshots and versions only, as Azure
// documents; with versioning, whose Delete Blob keeps a previous version
// instead of a soft-deleted blob, the snapshots and versions of a name
// whose current version was deleted, without making any of them current
// (restoring a version as current is a copy onto the base). A name with
// no live blob and nothing to restore is 404 BlobNotFound; a live blob
// with nothing soft-deleted succeeds and changes nothing. A row past its
// retention (by the database clock) is never restored, as Azure deletes
// it permanently then; the purge removes it.
func (d *DB) UndeleteBlob(ctx context.Context, ref BlobRef) error {
	return d.blobTx(ctx, ref, func(tx Tx, now time.Time, b *Blob) error {
		all, err := tx.DeletedBlobs(ctx, ref.Account, ref.Container, ref.Name)
		if err != nil {
			return err
		}
		// A row whose retention passed is permanently deleted, whether
		// or not the collector has purged it yet: it stays for the purge.
		rows := all[:0]
		for _, r := range all {
			if now.Before(r.DeleteExpires) {
				rows = append(rows, r)
			}
		}
		hasBase, hasVersions := false, false
		for _, r := range rows {
			hasBase = hasBase || (r.Snapshot == "" && !r.NonCurrent)
			hasVersions = hasVersions || r.NonCurrent
		}
		if b == nil && !hasBase && !hasVersions {
			// No blob to restore. With versioning a deleted blob
			// is a previous version (restored by copying it) and
			// Undelete Blob restores its soft-deleted snapshots;
			// without, there is no blob to hold them.
			vs, err := tx.Versions(ctx, ref.Account, ref.Container, ref.Name)
			if err != nil {
				return err
			}
			if len(rows) == 0 || len(vs) == 0 {
				return svcerr.New(svcerr.BlobNotFound)
			}
		}
		for _, r := range rows {
			live := *r
			live.DeletedTime, live.DeleteExpires = time.Time{}, time.Time{}
			switch {
			case r.NonCurrent:
				// Ids of one name never repeat (latestVersionID
				// counts the soft-deleted ones), so a live version
				// of the same id is not expected; should one be
				// there, it keeps its place, as a snapshot does.
				if v, err := tx.Version(ctx, ref.Account, ref.Container, ref.Name, r.VersionID); err != nil {
					return err
				} else if v != nil {
					continue
				}
				if err := tx.PutVersion(ctx, &live); err != nil {
					return err
				}
			case r.Snapshot == "":
				if b != nil {
					continue
				}
				if err := tx.PutBlob(ctx, &live); err != nil {
					return err
				}
			default:
				if err := tx.PutSnapshot(ctx, &live); errors.Is(err, ErrExists) {
					continue
				} else if err != nil {
					return err
				}
			}
			if err := tx.RemoveDeletedBlob(ctx, ref.Account, ref.Container, ref.Name, DeletedKey(r)); err != nil {
				return err
			}
		}
		return nil
	})
}

// PurgeExpiredBlobs removes up to limit soft-deleted rows whose retention
// passed (the database clock decides), each under its name's lock, and
// queues the objects no other row of the name references for collection
// after the grace period. It returns how many rows it removed.
func (d *DB) PurgeExpiredBlobs(ctx context.Context, limit int) (int, error) {
	var refs []DeletedRef
	err := d.Store.View(ctx, func(tx Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		refs, err = tx.ExpiredBlobs(ctx, now, limit)
		return err
	})
	if err != nil {
		return 0, err
	}
	purged := 0
	for _, r := range refs {
		done := false
		err := d.blobTx(ctx, r.BlobRef, func(tx Tx, now time.Time, b *Blob) error {
			done = false // the transaction may run again
			row, err := deletedRow(ctx, tx, r.BlobRef, r.Snapshot)
			if err != nil {
				return err
			}
			if row == nil || now.Before(row.DeleteExpires) {
				return nil // undeleted or purged meanwhile
			}
			done = true
			return d.dropDeleted(ctx, tx, r.BlobRef, row, b, now)
		})
		var se *svcerr.Error
		if errors.As(err, &se) && se.Code == svcerr.ContainerNotFound {
			continue // the container went with its rows
		}
		if err != nil {
			return purged, err
		}
		if done {
			purged++
		}
	}
	return purged, nil
}

// retention is the account's blob delete retention in days (0: off), read
// in the caller's transaction.
func retention(ctx context.Context, tx Tx, account string) (int, error) {
	s, err := tx.AccountSettings(ctx, account)
	return s.DeleteRetentionDays, err
}

// deletedRow is the soft-deleted row of ref whose DeletedKey is key, nil
// when it has none.
func deletedRow(ctx context.Context, tx Tx, ref BlobRef, key string) (*Blob, error) {
	rows, err := tx.DeletedBlobs(ctx, ref.Account, ref.Container, ref.Name)
	if err != nil {
		return nil, err
	}
	for _, x := range rows {
		if DeletedKey(x) == key {
			return x, nil
		}
	}
	return nil, nil
}

// dropDeleted removes the soft-deleted row of ref for good (the purge on
// expiry, Delete Blob deletetype=permanent) and queues for collection
// after the grace period the keys no other row of the name, nor its live
// blob (nil when none), references.
func (d *DB) dropDeleted(ctx context.Context, tx Tx, ref BlobRef, row, live *Blob, now time.Time) error {
	if err := tx.RemoveDeletedBlob(ctx, ref.Account, ref.Container, ref.Name, DeletedKey(row)); err != nil {
		return err
	}
	kept, err := nameRows(ctx, tx, ref)
	if err != nil {
		return err
	}
	if live != nil {
		kept = append(kept, live)
	}
	return release(ctx, tx, unreferenced([]*Blob{row}, kept), now.Add(d.Grace))
}
