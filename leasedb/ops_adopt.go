package leasedb

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// AdoptRequest describes an object that already sits in the backend and is
// to become a blob without copying its bytes (blobgw import s3).
type AdoptRequest struct {
	// Key is the backend key the row will reference (for S3,
	// s3.AdoptedKey of the object name).
	Key  string
	Size int64
	// Props and Metadata become the blob's properties and metadata.
	Props    Props
	Metadata map[string]string
}

// ErrAdoptConflict is returned by AdoptBlob when a blob that does not
// reference the object already exists at the name: adoption never replaces
// a blob implicitly.
var ErrAdoptConflict = errors.New("leasedb: a different blob exists at that name")

// ErrAdoptChanged is returned by AdoptBlob when the blob at the name already
// references the object but with another size: the object was changed
// behind the gateway's back after it was adopted.
var ErrAdoptChanged = errors.New("leasedb: the adopted object's size changed since it was adopted")

// ErrAdoptQueued is returned by AdoptBlob when the object's key is in the
// collection queue (an adopted blob was overwritten or deleted and its
// object is about to be collected): adopting it again would lose the bytes.
var ErrAdoptQueued = errors.New("leasedb: the object is queued for collection")

// ErrAdoptShared is returned by AdoptBlob when another blob name already
// references the object. Across names extents are shared only where
// extent_shares records it (a copy that shares its source's extents), and
// collection counts on that (a key is queued when the last row of its
// name drops it and no share names it): a second name adopting one object,
// with no share recorded, would let a delete of either blob collect the
// other's bytes.
var ErrAdoptShared = errors.New("leasedb: the object is already adopted as another blob")

// AdoptBlob makes an existing backend object the block blob ref, in one
// transaction under the row lock. It reports false (and changes nothing)
// when ref already is that object with the same size, which makes reruns
// idempotent. Another blob at ref is ErrAdoptConflict. From then on the
// gateway owns the object: an overwrite or delete of the blob queues its key
// for collection like any other.
//
// One object backs one blob name: the key is claimed in the adopted_keys
// record (Tx.ClaimAdoptedKey), and while the name recorded there (its blob
// or one of its snapshots) still references the key, adopting it under
// another name is ErrAdoptShared. That costs two index lookups, never a
// scan of the blob rows. A recorded name that no longer references the key
// has let it go (overwritten, deleted, its container deleted); the record
// then moves to ref.
//
// No upload intent is recorded: the bytes exist already and nothing
// collects them until a row that references them drops them. The key must
// not be in the collection queue (ErrAdoptQueued); that is checked by
// recording an intent and taking it straight back in the same transaction.
func (d *DB) AdoptBlob(ctx context.Context, ref BlobRef, req AdoptRequest) (adopted bool, err error) {
	if req.Key == "" || req.Size < 0 {
		return false, fmt.Errorf("leasedb: adopt %s: invalid request (key %q, size %d)", ref, req.Key, req.Size)
	}
	err = d.blobTx(ctx, ref, func(tx Tx, now time.Time, old *Blob) error {
		adopted = false
		if old != nil {
			if len(old.Extents) == 1 && old.Extents[0].Key == req.Key {
				if old.Size != req.Size {
					return fmt.Errorf("adopt %s: %w (row %d bytes, object %d bytes)", ref, ErrAdoptChanged, old.Size, req.Size)
				}
				return nil
			}
			return fmt.Errorf("adopt %s: %w", ref, ErrAdoptConflict)
		}
		if err := claimAdoptedKey(ctx, tx, ref, req.Key); err != nil {
			return err
		}
		if err := tx.AddIntent(ctx, req.Key, now.Add(time.Hour)); err != nil {
			if errors.Is(err, ErrExists) {
				return fmt.Errorf("adopt %s: %w", ref, ErrAdoptQueued)
			}
			return err
		}
		if ok, err := tx.TakeIntent(ctx, req.Key); err != nil {
			return err
		} else if !ok {
			return fmt.Errorf("adopt %s: %w", ref, ErrAdoptQueued)
		}
		etag, err := tx.NextETag(ctx)
		if err != nil {
			return err
		}
		b := &Blob{
			Account: ref.Account, Container: ref.Container, Name: ref.Name,
			Type: "BlockBlob", ETag: etag, Created: now, LastModified: now, Size: req.Size,
			Props: req.Props, Metadata: req.Metadata,
			Extents: []Extent{{Key: req.Key, Size: req.Size}},
		}
		// As Put Blob: uncommitted blocks of the name are discarded.
		if err := dropStaged(ctx, tx, ref, now); err != nil {
			return err
		}
		if err := tx.PutBlob(ctx, b); err != nil {
			return err
		}
		adopted = true
		return nil
	})
	if err != nil {
		return false, err
	}
	return adopted, nil
}

// claimAdoptedKey records ref as the one blob name that adopted key, or
// refuses with ErrAdoptShared while the recorded name still references it.
// It runs under ref's name lock with no row of ref (AdoptBlob checked), and
// the record's lock serializes it against every other claim of key.
func claimAdoptedKey(ctx context.Context, tx Tx, ref BlobRef, key string) error {
	holder, claimed, err := tx.ClaimAdoptedKey(ctx, key, ref)
	if err != nil || claimed || holder == ref {
		// holder == ref: the name adopted the key before and dropped it;
		// its snapshots may still share it, as snapshots do.
		return err
	}
	held, err := nameReferences(ctx, tx, holder, key)
	if err != nil {
		return err
	}
	if held {
		return fmt.Errorf("adopt %s: %w (%s)", ref, ErrAdoptShared, holder)
	}
	return tx.MoveAdoptedKey(ctx, key, ref)
}

// nameReferences reports whether the blob row of ref or one of its other
// rows (snapshots, versions, soft-deleted rows) references key. It holds
// ref's name lock while it reads them: the two reads are two statements,
// and a key moves between them in both directions (an overwrite keeps the
// old blob as a version or soft-deleted snapshot; Undelete Blob moves a
// soft-deleted blob back), so unlocked reads could straddle such a move
// and find the key in neither. Adopting the key under ref again would need
// this record, which the caller holds locked.
func nameReferences(ctx context.Context, tx Tx, ref BlobRef, key string) (bool, error) {
	b, err := tx.Blob(ctx, ref.Account, ref.Container, ref.Name, LockExclusive)
	if err != nil {
		return false, err
	}
	rows := []*Blob{b}
	if b == nil {
		rows = nil
	}
	snaps, err := nameRows(ctx, tx, ref)
	if err != nil {
		return false, err
	}
	for _, r := range append(rows, snaps...) {
		for _, e := range r.Extents {
			if e.Key == key {
				return true, nil
			}
		}
	}
	return false, nil
}
