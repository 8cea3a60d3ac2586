package leasedb

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// AccountKeys is one storage account as the metadata store keeps it, so
// that every replica on the database serves the same accounts with the
// same keys. Key1 and Key2 are opaque to the store: the caller decides
// whether they are the keys' base64 text or sealed (internal/accounts);
// Key2 is "" for an account with one key.
type AccountKeys struct {
	Name       string
	Key1, Key2 string
	CreatedAt  time.Time
	UpdatedAt  time.Time
	// Generation is the store's account generation (see
	// AccountTx.AccountKeysGeneration) of the account's last change.
	Generation int64
}

// AccountTx is the part of Tx that keeps the accounts.
type AccountTx interface {
	// AccountKeysGeneration is a counter that every change to the
	// accounts (insert, update, delete) increases: a replica compares it
	// with the one it last read and rereads the accounts only when it
	// moved. One row read.
	AccountKeysGeneration(ctx context.Context) (int64, error)
	// LockAccountKeys takes the lock every change to the accounts takes
	// (the generation's), for the rest of the transaction: a change that
	// reads an account before it writes it (SetAccountKey) reads it after
	// any concurrent change committed.
	LockAccountKeys(ctx context.Context) error
	// ListAccountKeys returns every account, ordered by name.
	ListAccountKeys(ctx context.Context) ([]AccountKeys, error)
	// InsertAccountKeys inserts a (Name, Key1, Key2, CreatedAt, UpdatedAt
	// as given), sets a.Generation to the new generation, and returns
	// ErrExists, changing nothing, when the name is taken.
	InsertAccountKeys(ctx context.Context, a *AccountKeys) error
	// UpdateAccountKeys overwrites Key1, Key2 and UpdatedAt of the
	// account a.Name and sets a.Generation to the new generation;
	// ErrNotFound when absent.
	UpdateAccountKeys(ctx context.Context, a *AccountKeys) error
	// DeleteAccountKeys deletes the account and moves the generation;
	// ErrNotFound when absent.
	DeleteAccountKeys(ctx context.Context, name string) error
}

// ErrAccountHasContainers refuses to remove an account that still has
// containers (blobgw account remove without --force).
var ErrAccountHasContainers = errors.New("leasedb: account still has containers")

// AccountKeysGeneration reads the accounts' generation (cheap: one row).
func (d *DB) AccountKeysGeneration(ctx context.Context) (int64, error) {
	var gen int64
	err := d.Store.View(ctx, func(tx Tx) error {
		var err error
		gen, err = tx.AccountKeysGeneration(ctx)
		return err
	})
	return gen, err
}

// ListAccountKeys returns every account and the generation they are at,
// read in one transaction.
func (d *DB) ListAccountKeys(ctx context.Context) ([]AccountKeys, int64, error) {
	var out []AccountKeys
	var gen int64
	err := d.Store.View(ctx, func(tx Tx) error {
		var err error
		if gen, err = tx.AccountKeysGeneration(ctx); err != nil {
			return err
		}
		out, err = tx.ListAccountKeys(ctx)
		return err
	})
	return out, gen, err
}

// AddAccountKeys adds an account (blobgw account add); ErrExists when the
// name is taken.
func (d *DB) AddAccountKeys(ctx context.Context, name, key1, key2 string) (*AccountKeys, error) {
	if key1 == "" {
		return nil, fmt.Errorf("leasedb: account %s: key1 is required", name)
	}
	var out *AccountKeys
	err := d.Store.Update(ctx, func(tx Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		a := &AccountKeys{Name: name, Key1: key1, Key2: key2, CreatedAt: now, UpdatedAt: now}
		if err := tx.InsertAccountKeys(ctx, a); err != nil {
			return err
		}
		out = a
		return nil
	})
	return out, err
}

// SeedAccountKeys adds each account of seed whose name the store does not
// hold, and never changes an account it holds. With onlyIfEmpty it adds
// nothing unless the store's accounts were never set up: no account, and
// a generation still 0, so no account was ever added or removed (the
// built-in development account, with its published key, seeds only a
// database that never held an account, never one an operator emptied
// with blobgw account remove). It returns the names added. Replicas
// seeding at once add each account once.
func (d *DB) SeedAccountKeys(ctx context.Context, seed []AccountKeys, onlyIfEmpty bool) ([]string, error) {
	var added []string
	err := d.Store.Update(ctx, func(tx Tx) error {
		added = added[:0]
		if onlyIfEmpty {
			// Locked before the reads: a removal committing meanwhile
			// is seen (its generation), not seeded over.
			if err := tx.LockAccountKeys(ctx); err != nil {
				return err
			}
			gen, err := tx.AccountKeysGeneration(ctx)
			if err != nil {
				return err
			}
			have, err := tx.ListAccountKeys(ctx)
			if err != nil {
				return err
			}
			if len(have) > 0 || gen != 0 {
				return nil
			}
		}
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		for _, s := range seed {
			a := &AccountKeys{Name: s.Name, Key1: s.Key1, Key2: s.Key2, CreatedAt: now, UpdatedAt: now}
			err := tx.InsertAccountKeys(ctx, a)
			if errors.Is(err, ErrExists) {
				continue
			}
			if err != nil {
				return err
			}
			added = append(added, s.Name)
		}
		return nil
	})
	return added, err
}

// SetAccountKey replaces key slot (1 or 2) of the account (blobgw account
// rotate-key); the other key is kept. ErrNotFound when the account is
// absent.
func (d *DB) SetAccountKey(ctx context.Context, name string, slot int, key string) (*AccountKeys, error) {
	if slot != 1 && slot != 2 {
		return nil, fmt.Errorf("leasedb: account key slot %d (want 1 or 2)", slot)
	}
	if key == "" {
		return nil, fmt.Errorf("leasedb: account %s: empty key", name)
	}
	var out *AccountKeys
	err := d.Store.Update(ctx, func(tx Tx) error {
		// Locked before the read: a concurrent rotation of the other
		// key is kept, never written back over with the key it retired.
		if err := tx.LockAccountKeys(ctx); err != nil {
			return err
		}
		all, err := tx.ListAccountKeys(ctx)
		if err != nil {
			return err
		}
		var a *AccountKeys
		for i := range all {
			if all[i].Name == name {
				a = &all[i]
			}
		}
		if a == nil {
			return fmt.Errorf("leasedb: account %s: %w", name, ErrNotFound)
		}
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		if slot == 1 {
			a.Key1 = key
		} else {
			a.Key2 = key
		}
		a.UpdatedAt = now
		if err := tx.UpdateAccountKeys(ctx, a); err != nil {
			return err
		}
		out = a
		return nil
	})
	return out, err
}

// RemoveAccountKeys removes the account (blobgw account remove). Unless
// force is set it refuses, with ErrAccountHasContainers, an account that
// has a container; with force the containers and their blobs stay in the
// store, unreachable until an account of that name is added again.
// ErrNotFound when the account is absent.
func (d *DB) RemoveAccountKeys(ctx context.Context, name string, force bool) error {
	return d.Store.Update(ctx, func(tx Tx) error {
		if !force {
			cs, err := tx.ListContainers(ctx, name, "", "", 1)
			if err != nil {
				return err
			}
			if len(cs) > 0 {
				return fmt.Errorf("leasedb: account %s (container %s): %w", name, cs[0].Name, ErrAccountHasContainers)
			}
		}
		return tx.DeleteAccountKeys(ctx, name)
	})
}
