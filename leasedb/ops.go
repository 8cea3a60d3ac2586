package leasedb

import (
	"context"
	"time"
)

// DB is the operation layer: each method is one Blob operation's metadata
// decision, taken in one transaction under the row lock, with the rules in
// conditions.go, lease.go and rules.go. The gateway calls these for every
// decision; it uses Store directly only for the collection queue (see the
// package comment).
type DB struct {
	Store Store
	// Grace is how long replaced backend objects stay readable after an
	// overwrite or delete, so a reader that started before finishes on the
	// old bytes.
	Grace time.Duration
	// StrictConditions rejects the header combinations the docs forbid on
	// writes (ValidateWrite); off by default.
	StrictConditions bool
	// RetentionDay is the length of one day of a blob delete retention
	// (DeleteRetentionPolicy Days); 0 is 24 h. Only tests shorten it, to
	// see a retention pass without waiting a day.
	RetentionDay time.Duration
	// StagedBlockLimit is the most staged blocks a blob name may have
	// (Put Block: 409 BlockCountExceedsLimit); 0 is MaxUncommittedBlocks.
	// Only tests lower it, to reach it without staging 100,000 blocks.
	StagedBlockLimit int
}

// BlobRef names a blob.
type BlobRef struct {
	Account, Container, Name string
}

func (r BlobRef) String() string { return r.Account + "/" + r.Container + "/" + r.Name }

func blobResource(b *Blob) Resource {
	if b == nil {
		return Resource{}
	}
	return Resource{Exists: true, ETag: b.ETag, LastModified: b.LastModified, Tags: b.Tags}
}

func containerResource(c *Container) Resource {
	if c == nil {
		return Resource{}
	}
	return Resource{Exists: true, ETag: c.ETag, LastModified: c.LastModified, Container: true}
}

// blobTx locks the container (shared) and the blob name (exclusive) and
// hands fn the current row (nil when absent) and the database clock.
func (d *DB) blobTx(ctx context.Context, ref BlobRef, fn func(tx Tx, now time.Time, b *Blob) error) error {
	return d.Store.Update(ctx, func(tx Tx) error { return withBlob(ctx, tx, ref, LockShare, LockExclusive, fn) })
}

// blobView is blobTx without locks, for the pre-checks that refuse a
// request before its body is read (the commit checks again under the lock).
func (d *DB) blobView(ctx context.Context, ref BlobRef, fn func(tx Tx, now time.Time, b *Blob) error) error {
	return d.Store.View(ctx, func(tx Tx) error { return withBlob(ctx, tx, ref, LockNone, LockNone, fn) })
}

func withBlob(ctx context.Context, tx Tx, ref BlobRef, cLock, bLock LockMode, fn func(tx Tx, now time.Time, b *Blob) error) error {
	_, err := containerOf(ctx, tx, ref.Account, ref.Container, cLock)
	if err != nil {
		return err
	}
	b, err := tx.Blob(ctx, ref.Account, ref.Container, ref.Name, bLock)
	if err != nil {
		return err
	}
	now, err := tx.Now(ctx)
	if err != nil {
		return err
	}
	return fn(tx, now, b)
}

func (d *DB) checkWrite(cond Conditions) error {
	if d.StrictConditions {
		return ValidateWrite(cond)
	}
	return nil
}

// release queues for collection at due the keys that left one blob name
// (keys repeat once per name when several names left at once), except
// those another name still references (a copy shares them: Tx.ShareKeys).
func release(ctx context.Context, tx Tx, keys []string, due time.Time) error {
	free, err := tx.ReleaseKeys(ctx, keys)
	if err != nil {
		return err
	}
	return tx.AddGC(ctx, free, due)
}

// unreferenced returns the distinct keys of the dropped rows that no kept
// row references: snapshots share extents with their base blob, so a key
// is collected only when its last row goes.
func unreferenced(dropped, kept []*Blob) []string {
	used := map[string]bool{}
	for _, k := range kept {
		for _, e := range k.Extents {
			used[e.Key] = true
		}
	}
	var out []string
	for _, b := range dropped {
		for _, k := range b.Keys() {
			if !used[k] {
				used[k] = true
				out = append(out, k)
			}
		}
	}
	return out
}

// dropStaged removes every staged block of a blob name and queues their
// objects for collection at once: no committed blob references them.
func dropStaged(ctx context.Context, tx Tx, ref BlobRef, now time.Time) error {
	staged, err := tx.Blocks(ctx, ref.Account, ref.Container, ref.Name)
	if err != nil || len(staged) == 0 {
		return err
	}
	keys := make([]string, len(staged))
	for i, b := range staged {
		keys[i] = b.Key
	}
	if err := tx.DeleteBlocks(ctx, ref.Account, ref.Container, ref.Name); err != nil {
		return err
	}
	return tx.AddGC(ctx, keys, now)
}
