package leasedb

import (
	"context"
	"time"
)

// AddIntent records an upload intent for key, collectable after ttl unless
// a commit takes it first.
func (d *DB) AddIntent(ctx context.Context, key string, ttl time.Duration) error {
	return d.Store.Update(ctx, func(tx Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		return tx.AddIntent(ctx, key, now.Add(ttl))
	})
}

// IntentsAdder is an optional Tx interface: AddIntent for several keys
// in one statement (the intent pool's refills, one per 16 uploads, were a
// statement per key on Postgres). ErrExists when any key is already
// queued, as AddIntent; the caller's transaction then fails whole.
type IntentsAdder interface {
	AddIntents(ctx context.Context, keys []string, deadline time.Time) error
}

// AddIntents records upload intents for keys in one transaction, each
// collectable after ttl unless a commit takes it first.
func (d *DB) AddIntents(ctx context.Context, keys []string, ttl time.Duration) error {
	return d.Store.Update(ctx, func(tx Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		if a, ok := tx.(IntentsAdder); ok {
			return a.AddIntents(ctx, keys, now.Add(ttl))
		}
		for _, k := range keys {
			if err := tx.AddIntent(ctx, k, now.Add(ttl)); err != nil {
				return err
			}
		}
		return nil
	})
}
