package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

// AccountKeysGeneration implements leasedb.Tx.
func (t *tx) AccountKeysGeneration(ctx context.Context) (int64, error) {
	var gen int64
	if err := t.tx.QueryRowContext(ctx, `SELECT generation FROM account_keys_generation WHERE id = 1`).Scan(&gen); err != nil {
		return 0, fmt.Errorf("leasedb/sqlite: account generation: %w", sqlq.CtxErr(ctx, err))
	}
	return gen, nil
}

// LockAccountKeys implements leasedb.Tx: the generation's row, which
// every account change updates, updated to itself.
func (t *tx) LockAccountKeys(ctx context.Context) error {
	if _, err := t.tx.ExecContext(ctx, `UPDATE account_keys_generation SET generation = generation WHERE id = 1`); err != nil {
		return fmt.Errorf("leasedb/sqlite: lock accounts: %w", sqlq.CtxErr(ctx, err))
	}
	return nil
}

// bumpAccountKeys moves the generation and returns the new value.
func (t *tx) bumpAccountKeys(ctx context.Context) (int64, error) {
	var gen int64
	if err := t.tx.QueryRowContext(ctx, `UPDATE account_keys_generation SET generation = generation + 1 WHERE id = 1 RETURNING generation`).Scan(&gen); err != nil {
		return 0, fmt.Errorf("leasedb/sqlite: account generation: %w", sqlq.CtxErr(ctx, err))
	}
	return gen, nil
}

// ListAccountKeys implements leasedb.Tx.
func (t *tx) ListAccountKeys(ctx context.Context) ([]leasedb.AccountKeys, error) {
	rows, err := t.tx.QueryContext(ctx, `SELECT name, key1, key2, created_at, updated_at, generation FROM account_keys ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("leasedb/sqlite: list accounts: %w", sqlq.CtxErr(ctx, err))
	}
	defer rows.Close()
	var out []leasedb.AccountKeys
	for rows.Next() {
		var a leasedb.AccountKeys
		var created, updated sql.NullInt64
		if err := rows.Scan(&a.Name, &a.Key1, &a.Key2, &created, &updated, &a.Generation); err != nil {
			return nil, fmt.Errorf("leasedb/sqlite: list accounts: %w", sqlq.CtxErr(ctx, err))
		}
		a.CreatedAt, a.UpdatedAt = fromMicros(created), fromMicros(updated)
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("leasedb/sqlite: list accounts: %w", sqlq.CtxErr(ctx, err))
	}
	return out, nil
}

// InsertAccountKeys implements leasedb.Tx.
func (t *tx) InsertAccountKeys(ctx context.Context, a *leasedb.AccountKeys) error {
	if err := checkText(a.Name, a.Key1, a.Key2); err != nil {
		return err
	}
	res, err := t.tx.ExecContext(ctx, `INSERT INTO account_keys (name, key1, key2, created_at, updated_at, generation)
		VALUES (?, ?, ?, ?, ?, 0) ON CONFLICT (name) DO NOTHING`, a.Name, a.Key1, a.Key2, a.CreatedAt.UnixMicro(), a.UpdatedAt.UnixMicro())
	if err != nil {
		return fmt.Errorf("leasedb/sqlite: insert account %s: %w", a.Name, sqlq.CtxErr(ctx, err))
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("leasedb/sqlite: insert account %s: %w", a.Name, err)
	} else if n == 0 {
		return fmt.Errorf("leasedb/sqlite: insert account %s: %w", a.Name, leasedb.ErrExists)
	}
	return t.setAccountGeneration(ctx, a)
}

func (t *tx) setAccountGeneration(ctx context.Context, a *leasedb.AccountKeys) error {
	gen, err := t.bumpAccountKeys(ctx)
	if err != nil {
		return err
	}
	if _, err := t.tx.ExecContext(ctx, `UPDATE account_keys SET generation = ? WHERE name = ?`, gen, a.Name); err != nil {
		return fmt.Errorf("leasedb/sqlite: account %s: %w", a.Name, sqlq.CtxErr(ctx, err))
	}
	a.Generation = gen
	return nil
}

// UpdateAccountKeys implements leasedb.Tx.
func (t *tx) UpdateAccountKeys(ctx context.Context, a *leasedb.AccountKeys) error {
	if err := checkText(a.Name, a.Key1, a.Key2); err != nil {
		return err
	}
	res, err := t.tx.ExecContext(ctx, `UPDATE account_keys SET key1 = ?, key2 = ?, updated_at = ? WHERE name = ?`,
		a.Key1, a.Key2, a.UpdatedAt.UnixMicro(), a.Name)
	if err != nil {
		return fmt.Errorf("leasedb/sqlite: update account %s: %w", a.Name, sqlq.CtxErr(ctx, err))
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("leasedb/sqlite: update account %s: %w", a.Name, err)
	} else if n == 0 {
		return fmt.Errorf("leasedb/sqlite: update account %s: %w", a.Name, leasedb.ErrNotFound)
	}
	return t.setAccountGeneration(ctx, a)
}

// DeleteAccountKeys implements leasedb.Tx.
func (t *tx) DeleteAccountKeys(ctx context.Context, name string) error {
	if err := checkText(name); err != nil {
		return err
	}
	res, err := t.tx.ExecContext(ctx, `DELETE FROM account_keys WHERE name = ?`, name)
	if err != nil {
		return fmt.Errorf("leasedb/sqlite: delete account %s: %w", name, sqlq.CtxErr(ctx, err))
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("leasedb/sqlite: delete account %s: %w", name, err)
	} else if n == 0 {
		return fmt.Errorf("leasedb/sqlite: delete account %s: %w", name, leasedb.ErrNotFound)
	}
	_, err = t.bumpAccountKeys(ctx)
	return err
}
