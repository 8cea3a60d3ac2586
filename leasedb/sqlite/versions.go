package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
	sqlite3 "modernc.org/sqlite/lib"
)

var putVersionSQL = sqlq.PutVersion(plain)

// PutVersion implements leasedb.Tx. A missing container is ErrNotFound.
func (t *tx) PutVersion(ctx context.Context, b *leasedb.Blob) error {
	if err := checkText(b.Account, b.Container, b.Name, b.VersionID); err != nil {
		return err
	}
	if b.VersionID == "" {
		return fmt.Errorf("leasedb/sqlite: put version %s/%s/%s: empty version id", b.Account, b.Container, b.Name)
	}
	vals, err := sqlq.BlobValues(b, micros)
	if err != nil {
		return err
	}
	if _, err := t.tx.ExecContext(ctx, putVersionSQL, vals...); err != nil {
		if code(err) == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY {
			return fmt.Errorf("leasedb/sqlite: put version %s/%s/%s@%s: container: %w", b.Account, b.Container, b.Name, b.VersionID, leasedb.ErrNotFound)
		}
		return fmt.Errorf("leasedb/sqlite: put version %s/%s/%s@%s: %w", b.Account, b.Container, b.Name, b.VersionID, err)
	}
	return nil
}

// Version implements leasedb.Tx.
func (t *tx) Version(ctx context.Context, account, container, blob, versionID string) (*leasedb.Blob, error) {
	if err := checkText(account, container, blob, versionID); err != nil {
		return nil, err
	}
	rows, err := t.tx.QueryContext(ctx, `SELECT `+sqlq.VersionCols+` FROM versions
		WHERE account = ? AND container = ? AND name = ? AND version_id = ?`, account, container, blob, versionID)
	if err != nil {
		return nil, fmt.Errorf("leasedb/sqlite: get version %s/%s/%s@%s: %w", account, container, blob, versionID, err)
	}
	bs, err := scanVersions(rows)
	if err != nil {
		return nil, fmt.Errorf("leasedb/sqlite: get version %s/%s/%s@%s: %w", account, container, blob, versionID, err)
	}
	if len(bs) == 0 {
		return nil, nil
	}
	return bs[0], nil
}

// Versions implements leasedb.Tx: ordered by version id (byte order); nil
// when there are none.
func (t *tx) Versions(ctx context.Context, account, container, blob string) ([]*leasedb.Blob, error) {
	if err := checkText(account, container, blob); err != nil {
		return nil, err
	}
	rows, err := t.tx.QueryContext(ctx, `SELECT `+sqlq.VersionCols+` FROM versions
		WHERE account = ? AND container = ? AND name = ? ORDER BY version_id`, account, container, blob)
	if err != nil {
		return nil, fmt.Errorf("leasedb/sqlite: versions %s/%s/%s: %w", account, container, blob, err)
	}
	bs, err := scanVersions(rows)
	if err != nil {
		return nil, fmt.Errorf("leasedb/sqlite: versions %s/%s/%s: %w", account, container, blob, err)
	}
	return bs, nil
}

// DeleteVersion implements leasedb.Tx.
func (t *tx) DeleteVersion(ctx context.Context, account, container, blob, versionID string) error {
	if err := checkText(account, container, blob, versionID); err != nil {
		return err
	}
	res, err := t.tx.ExecContext(ctx, `DELETE FROM versions WHERE account = ? AND container = ? AND name = ? AND version_id = ?`,
		account, container, blob, versionID)
	if err != nil {
		return fmt.Errorf("leasedb/sqlite: delete version %s/%s/%s@%s: %w", account, container, blob, versionID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("leasedb/sqlite: delete version %s/%s/%s@%s: %w", account, container, blob, versionID, err)
	} else if n == 0 {
		return fmt.Errorf("leasedb/sqlite: delete version %s/%s/%s@%s: %w", account, container, blob, versionID, leasedb.ErrNotFound)
	}
	return nil
}

func scanVersions(rows *sql.Rows) ([]*leasedb.Blob, error) {
	defer rows.Close()
	return sqlq.ScanVersions(rows, fromMicros)
}

// AccountSettings implements leasedb.Tx.
func (t *tx) AccountSettings(ctx context.Context, account string) (leasedb.AccountSettings, error) {
	if err := checkText(account); err != nil {
		return leasedb.AccountSettings{}, err
	}
	var v, days int
	err := t.tx.QueryRowContext(ctx, `SELECT versioning, delete_retention_days FROM account_settings WHERE account = ?`, account).Scan(&v, &days)
	if errors.Is(err, sql.ErrNoRows) {
		return leasedb.AccountSettings{}, nil
	}
	if err != nil {
		return leasedb.AccountSettings{}, fmt.Errorf("leasedb/sqlite: account settings %s: %w", account, err)
	}
	return leasedb.AccountSettings{Versioning: v != 0, DeleteRetentionDays: days}, nil
}

// PutAccountSettings implements leasedb.Tx.
func (t *tx) PutAccountSettings(ctx context.Context, account string, s leasedb.AccountSettings) error {
	if err := checkText(account); err != nil {
		return err
	}
	_, err := t.tx.ExecContext(ctx, sqlq.PutAccountSettings(plain), account, sqlq.BoolInt(s.Versioning), s.DeleteRetentionDays)
	if err != nil {
		return fmt.Errorf("leasedb/sqlite: put account settings %s: %w", account, err)
	}
	return nil
}

var nameRowsSQL = sqlq.NameRows(dialect.Placeholder)

// NameRows implements leasedb.Tx.
func (t *tx) NameRows(ctx context.Context, account, container, blob string) ([]*leasedb.Blob, error) {
	if err := checkText(account, container, blob); err != nil {
		return nil, err
	}
	rows, err := t.tx.QueryContext(ctx, nameRowsSQL, account, container, blob)
	if err != nil {
		return nil, fmt.Errorf("leasedb/sqlite: rows of %s/%s/%s: %w", account, container, blob, err)
	}
	items, err := scanItems(rows)
	if err != nil {
		return nil, fmt.Errorf("leasedb/sqlite: rows of %s/%s/%s: %w", account, container, blob, err)
	}
	return sqlq.NameRowBlobs(items), nil
}
