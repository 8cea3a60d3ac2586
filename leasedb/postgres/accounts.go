package postgres

import (
	"context"
	"fmt"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

// AccountKeysGeneration implements leasedb.Tx.
func (t *tx) AccountKeysGeneration(ctx context.Context) (int64, error) {
	var gen int64
	if err := t.tx.QueryRow(ctx, `SELECT generation FROM account_keys_generation WHERE id = 1`).Scan(&gen); err != nil {
		return 0, fmt.Errorf("leasedb/postgres: account generation: %w", sqlq.CtxErr(ctx, err))
	}
	return gen, nil
}

// LockAccountKeys implements leasedb.Tx: the generation's row, which
// every account change updates, updated to itself.
func (t *tx) LockAccountKeys(ctx context.Context) error {
	if _, err := t.tx.Exec(ctx, `UPDATE account_keys_generation SET generation = generation WHERE id = 1`); err != nil {
		return fmt.Errorf("leasedb/postgres: lock accounts: %w", sqlq.CtxErr(ctx, err))
	}
	return nil
}

// bumpAccountKeys moves the generation (taking its row lock, so account
// changes serialize) and returns the new value.
func (t *tx) bumpAccountKeys(ctx context.Context) (int64, error) {
	var gen int64
	if err := t.tx.QueryRow(ctx, `UPDATE account_keys_generation SET generation = generation + 1 WHERE id = 1 RETURNING generation`).Scan(&gen); err != nil {
		return 0, fmt.Errorf("leasedb/postgres: account generation: %w", sqlq.CtxErr(ctx, err))
	}
	return gen, nil
}

// ListAccountKeys implements leasedb.Tx.
func (t *tx) ListAccountKeys(ctx context.Context) ([]leasedb.AccountKeys, error) {
	rows, err := t.tx.Query(ctx, `SELECT name, key1, key2, created_at, updated_at, generation FROM account_keys ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("leasedb/postgres: list accounts: %w", sqlq.CtxErr(ctx, err))
	}
	defer rows.Close()
	var out []leasedb.AccountKeys
	for rows.Next() {
		var a leasedb.AccountKeys
		if err := rows.Scan(&a.Name, &a.Key1, &a.Key2, &a.CreatedAt, &a.UpdatedAt, &a.Generation); err != nil {
			return nil, fmt.Errorf("leasedb/postgres: list accounts: %w", sqlq.CtxErr(ctx, err))
		}
		a.CreatedAt, a.UpdatedAt = a.CreatedAt.UTC(), a.UpdatedAt.UTC()
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("leasedb/postgres: list accounts: %w", sqlq.CtxErr(ctx, err))
	}
	return out, nil
}

// InsertAccountKeys implements leasedb.Tx.
func (t *tx) InsertAccountKeys(ctx context.Context, a *leasedb.AccountKeys) error {
	if err := checkText(a.Name, a.Key1, a.Key2); err != nil {
		return err
	}
	tag, err := t.tx.Exec(ctx, `INSERT INTO account_keys (name, key1, key2, created_at, updated_at, generation)
		VALUES ($1, $2, $3, $4, $5, 0) ON CONFLICT (name) DO NOTHING`, a.Name, a.Key1, a.Key2, a.CreatedAt, a.UpdatedAt)
	if err != nil {
		return fmt.Errorf("leasedb/postgres: insert account %s: %w", a.Name, sqlq.CtxErr(ctx, err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("leasedb/postgres: insert account %s: %w", a.Name, leasedb.ErrExists)
	}
	return t.setAccountGeneration(ctx, a)
}

func (t *tx) setAccountGeneration(ctx context.Context, a *leasedb.AccountKeys) error {
	gen, err := t.bumpAccountKeys(ctx)
	if err != nil {
		return err
	}
	if _, err := t.tx.Exec(ctx, `UPDATE account_keys SET generation = $2 WHERE name = $1`, a.Name, gen); err != nil {
		return fmt.Errorf("leasedb/postgres: account %s: %w", a.Name, sqlq.CtxErr(ctx, err))
	}
	a.Generation = gen
	return nil
}

// UpdateAccountKeys implements leasedb.Tx.
func (t *tx) UpdateAccountKeys(ctx context.Context, a *leasedb.AccountKeys) error {
	if err := checkText(a.Name, a.Key1, a.Key2); err != nil {
		return err
	}
	tag, err := t.tx.Exec(ctx, `UPDATE account_keys SET key1 = $2, key2 = $3, updated_at = $4 WHERE name = $1`,
		a.Name, a.Key1, a.Key2, a.UpdatedAt)
	if err != nil {
		return fmt.Errorf("leasedb/postgres: update account %s: %w", a.Name, sqlq.CtxErr(ctx, err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("leasedb/postgres: update account %s: %w", a.Name, leasedb.ErrNotFound)
	}
	return t.setAccountGeneration(ctx, a)
}

// DeleteAccountKeys implements leasedb.Tx.
func (t *tx) DeleteAccountKeys(ctx context.Context, name string) error {
	if err := checkText(name); err != nil {
		return err
	}
	tag, err := t.tx.Exec(ctx, `DELETE FROM account_keys WHERE name = $1`, name)
	if err != nil {
		return fmt.Errorf("leasedb/postgres: delete account %s: %w", name, sqlq.CtxErr(ctx, err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("leasedb/postgres: delete account %s: %w", name, leasedb.ErrNotFound)
	}
	_, err = t.bumpAccountKeys(ctx)
	return err
}
