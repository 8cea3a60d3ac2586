package leasedb

import (
	"context"
	"errors"
	"time"

	"github.com/blobgw/blobgw/svcerr"
)

// SnapshotFormat is the form of snapshot ids (x-ms-snapshot): UTC, seven
// fractional digits. Ids of one blob sort by time in byte order.
const SnapshotFormat = "2006-01-02T15:04:05.0000000Z"

// ParseSnapshot validates a snapshot query value.
func ParseSnapshot(v string) (string, error) {
	t, err := time.Parse(SnapshotFormat, v)
	if err != nil {
		return "", svcerr.Query(svcerr.InvalidQueryParameterValue, "snapshot", v, "not a snapshot time")
	}
	return t.UTC().Format(SnapshotFormat), nil
}

// CreateSnapshot is Snapshot Blob: a read-only copy of the blob row that
// shares its extents. The lease id is checked read-style (optional; if
// given it must match an active lease); write conditions apply. The snapshot keeps the base's ETag and Last-Modified
// unless the request supplies metadata (meta non-nil), which gives it its
// own. Snapshots have no lease.
func (d *DB) CreateSnapshot(ctx context.Context, ref BlobRef, leaseID string, cond Conditions, meta map[string]string) (*Blob, error) {
	if err := d.checkWrite(cond); err != nil {
		return nil, err
	}
	var out *Blob
	err := d.blobTx(ctx, ref, func(tx Tx, now time.Time, b *Blob) error {
		if err := checkReadLeaseUpdate(b, leaseID, cond, now); err != nil {
			return err
		}
		if b.IsIncrementalCopy() {
			// Its snapshots are the copies Incremental Copy Blob made.
			return errIncrementalCopyBlob()
		}
		snap := *b
		snap.Lease = Lease{}
		if meta != nil {
			etag, err := tx.NextETag(ctx)
			if err != nil {
				return err
			}
			snap.Metadata, snap.ETag, snap.LastModified = meta, etag, now
		}
		id, err := nextSnapshotID(ctx, tx, ref, now)
		if err != nil {
			return err
		}
		snap.Snapshot = id
		if err := tx.PutSnapshot(ctx, &snap); err != nil {
			return err
		}
		out = &snap
		return nil
	})
	return out, err
}

// GetSnapshot reads a snapshot for Get Blob / Get Blob Properties with
// ?snapshot=: 404 BlobNotFound when absent, then the read conditions.
func (d *DB) GetSnapshot(ctx context.Context, ref BlobRef, snapshot string, cond Conditions) (*Blob, time.Time, error) {
	var out *Blob
	var now time.Time
	err := d.Store.View(ctx, func(tx Tx) error {
		_, err := containerOf(ctx, tx, ref.Account, ref.Container, LockNone)
		if err != nil {
			return err
		}
		b, err := tx.Snapshot(ctx, ref.Account, ref.Container, ref.Name, snapshot)
		if err != nil {
			return err
		}
		if b == nil {
			return svcerr.New(svcerr.BlobNotFound)
		}
		if now, err = tx.Now(ctx); err != nil {
			return err
		}
		out = b
		return EvalRead(cond, blobResource(b))
	})
	return out, now, err
}

// DeleteSnapshot deletes one snapshot (Delete Blob with ?snapshot=); its
// extents are collected unless the base blob or another snapshot still
// references them. Snapshots cannot be leased, so no lease id is needed.
func (d *DB) DeleteSnapshot(ctx context.Context, ref BlobRef, snapshot string, cond Conditions) error {
	if err := d.checkWrite(cond); err != nil {
		return err
	}
	return d.blobTx(ctx, ref, func(tx Tx, now time.Time, b *Blob) error {
		return d.deleteNameRow(ctx, tx, ref, now, b, cond,
			func() (*Blob, error) { return tx.Snapshot(ctx, ref.Account, ref.Container, ref.Name, snapshot) },
			func() error { return tx.DeleteSnapshot(ctx, ref.Account, ref.Container, ref.Name, snapshot) },
			func(sn *Blob) (bool, error) {
				days, err := retention(ctx, tx, ref.Account)
				if err != nil || days == 0 {
					return false, err
				}
				// Blob soft delete: the snapshot is kept, soft-deleted.
				return true, d.softDelete(ctx, tx, ref, sn, snapshot, now, days)
			})
	})
}

// deleteNameRow deletes one row of ref's name other than the current blob
// b (a snapshot or a previous version), which get reads (nil when absent:
// BlobNotFound) and del removes, if cond holds for it. Its extents are
// collected unless another row of the name still references them, or
// unless keep (when not nil) kept the row another way (blob soft delete)
// and says so.
func (d *DB) deleteNameRow(ctx context.Context, tx Tx, ref BlobRef, now time.Time, b *Blob, cond Conditions,
	get func() (*Blob, error), del func() error, keep func(row *Blob) (bool, error)) error {
	row, err := get()
	if err != nil {
		return err
	}
	if row == nil {
		return svcerr.New(svcerr.BlobNotFound)
	}
	if err := EvalWrite(cond, blobResource(row), UpdateWrite); err != nil {
		return err
	}
	if err := del(); err != nil {
		if errors.Is(err, ErrNotFound) {
			return svcerr.New(svcerr.BlobNotFound)
		}
		return err
	}
	if keep != nil {
		if kept, err := keep(row); err != nil || kept {
			return err
		}
	}
	kept, err := nameRows(ctx, tx, ref)
	if err != nil {
		return err
	}
	if b != nil {
		kept = append(kept, b)
	}
	return release(ctx, tx, unreferenced([]*Blob{row}, kept), now.Add(d.Grace))
}

// nextSnapshotID is a new snapshot id of ref at now. Ids are unique per
// blob: under the blob lock, it steps past an id taken in the same 100 ns
// tick, by a live snapshot or a soft-deleted one (the clock standing still
// or stepped back), which Undelete Blob would bring back beside it.
func nextSnapshotID(ctx context.Context, tx Tx, ref BlobRef, now time.Time) (string, error) {
	var deleted map[string]bool
	return firstFreeSnapshotID(now, func(id string) (bool, error) {
		existing, err := tx.Snapshot(ctx, ref.Account, ref.Container, ref.Name, id)
		if err != nil || existing != nil {
			return existing != nil, err
		}
		if deleted == nil {
			rows, err := tx.DeletedBlobs(ctx, ref.Account, ref.Container, ref.Name)
			if err != nil {
				return false, err
			}
			deleted = make(map[string]bool, len(rows))
			for _, r := range rows {
				deleted[r.Snapshot] = true
			}
		}
		return deleted[id], nil
	})
}

// firstFreeSnapshotID is the snapshot id of now, stepped by 100 ns past
// every id taken reports as in use.
func firstFreeSnapshotID(now time.Time, taken func(id string) (bool, error)) (string, error) {
	at := now.UTC().Truncate(100 * time.Nanosecond)
	for {
		id := at.Format(SnapshotFormat)
		used, err := taken(id)
		if err != nil || !used {
			return id, err
		}
		at = at.Add(100 * time.Nanosecond)
	}
}
