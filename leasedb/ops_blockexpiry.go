package leasedb

import (
	"context"
	"time"

	"github.com/blobgw/blobgw/svcerr"
)

// DefaultBlockExpiry is how long Azure keeps the uncommitted blocks of a
// blob after the last Put Block (or Put Block List) on it: a week.
const DefaultBlockExpiry = 7 * 24 * time.Hour

// ExpireBlocks discards the staged blocks of up to limit blob names that
// had no Put Block for expiry, as Azure garbage-collects the uncommitted
// block list of a blob a week after its last Put Block when no Put Block
// List came. Each name is handled in its own transaction under the name
// lock that Put Block and Put Block List take, and is re-checked there, so
// a block staged or a list committed meanwhile wins: the name is left
// alone. The dropped blocks' objects are queued for collection at once
// (no committed blob references a staged block; committed blocks are
// untouched). It returns how many names it emptied.
func (d *DB) ExpireBlocks(ctx context.Context, expiry time.Duration, limit int) (int, error) {
	var names []BlobRef
	err := d.Store.View(ctx, func(tx Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		names, err = tx.StaleBlockNames(ctx, now.Add(-expiry), limit)
		return err
	})
	if err != nil {
		return 0, err
	}
	emptied := 0
	for _, ref := range names {
		dropped := false
		err := d.blobTx(ctx, ref, func(tx Tx, now time.Time, _ *Blob) error {
			dropped = false // the transaction may run again
			staged, err := tx.Blocks(ctx, ref.Account, ref.Container, ref.Name)
			if err != nil || len(staged) == 0 {
				return err
			}
			cutoff := now.Add(-expiry)
			keys := make([]string, len(staged))
			for i, b := range staged {
				if !b.StagedAt.Before(cutoff) {
					return nil // a Put Block landed since the scan
				}
				keys[i] = b.Key
			}
			if err := tx.DeleteBlocks(ctx, ref.Account, ref.Container, ref.Name); err != nil {
				return err
			}
			dropped = true
			return tx.AddGC(ctx, keys, now)
		})
		if svcerr.HasCode(err, svcerr.ContainerNotFound) {
			continue // deleted meanwhile, with its blocks
		}
		if err != nil {
			return emptied, err
		}
		if dropped {
			emptied++
		}
	}
	return emptied, nil
}
