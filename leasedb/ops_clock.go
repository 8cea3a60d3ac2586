package leasedb

import (
	"context"
	"time"
)

// Now reads the database clock in a read transaction: the one time source
// every replica shares (Get Blob Service Stats reports it as the last sync
// time, the store being the single copy every endpoint reads).
func (d *DB) Now(ctx context.Context) (time.Time, error) {
	var now time.Time
	err := d.Store.View(ctx, func(tx Tx) error {
		var err error
		now, err = tx.Now(ctx)
		return err
	})
	return now, err
}
