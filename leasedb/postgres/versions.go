package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

var putVersionSQL = sqlq.PutVersion(dialect.Placeholder)

// PutVersion implements leasedb.Tx. A missing container is ErrNotFound
// (the transaction is then aborted; see Update). Callers serialize on the
// name through Blob with LockExclusive.
func (t *tx) PutVersion(ctx context.Context, b *leasedb.Blob) error {
	if err := checkText(b.Account, b.Container, b.Name, b.VersionID); err != nil {
		return err
	}
	if b.VersionID == "" {
		return fmt.Errorf("leasedb/postgres: put version %s/%s/%s: empty version id", b.Account, b.Container, b.Name)
	}
	vals, err := sqlq.BlobValues(b, ts)
	if err != nil {
		return err
	}
	if _, err := t.tx.Exec(ctx, putVersionSQL, vals...); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == codeForeignKeyViolation {
			return fmt.Errorf("leasedb/postgres: put version %s/%s/%s@%s: container: %w", b.Account, b.Container, b.Name, b.VersionID, leasedb.ErrNotFound)
		}
		return fmt.Errorf("leasedb/postgres: put version %s/%s/%s@%s: %w", b.Account, b.Container, b.Name, b.VersionID, sqlq.CtxErr(ctx, err))
	}
	return nil
}

// Version implements leasedb.Tx.
func (t *tx) Version(ctx context.Context, account, container, blob, versionID string) (*leasedb.Blob, error) {
	if err := checkText(account, container, blob, versionID); err != nil {
		return nil, err
	}
	rows, err := t.tx.Query(ctx, `SELECT `+sqlq.VersionCols+` FROM versions
		WHERE account = $1 AND container = $2 AND name = $3 AND version_id = $4`, account, container, blob, versionID)
	if err != nil {
		return nil, fmt.Errorf("leasedb/postgres: get version %s/%s/%s@%s: %w", account, container, blob, versionID, sqlq.CtxErr(ctx, err))
	}
	bs, err := scanVersions(rows)
	if err != nil {
		return nil, fmt.Errorf("leasedb/postgres: get version %s/%s/%s@%s: %w", account, container, blob, versionID, sqlq.CtxErr(ctx, err))
	}
	if len(bs) == 0 {
		return nil, nil
	}
	return bs[0], nil
}

// Versions implements leasedb.Tx: ordered by version id (COLLATE "C",
// byte order); nil when there are none.
func (t *tx) Versions(ctx context.Context, account, container, blob string) ([]*leasedb.Blob, error) {
	if err := checkText(account, container, blob); err != nil {
		return nil, err
	}
	rows, err := t.tx.Query(ctx, `SELECT `+sqlq.VersionCols+` FROM versions
		WHERE account = $1 AND container = $2 AND name = $3 ORDER BY version_id`, account, container, blob)
	if err != nil {
		return nil, fmt.Errorf("leasedb/postgres: versions %s/%s/%s: %w", account, container, blob, sqlq.CtxErr(ctx, err))
	}
	bs, err := scanVersions(rows)
	if err != nil {
		return nil, fmt.Errorf("leasedb/postgres: versions %s/%s/%s: %w", account, container, blob, sqlq.CtxErr(ctx, err))
	}
	return bs, nil
}

// DeleteVersion implements leasedb.Tx.
func (t *tx) DeleteVersion(ctx context.Context, account, container, blob, versionID string) error {
	if err := checkText(account, container, blob, versionID); err != nil {
		return err
	}
	tag, err := t.tx.Exec(ctx, `DELETE FROM versions WHERE account = $1 AND container = $2 AND name = $3 AND version_id = $4`,
		account, container, blob, versionID)
	if err != nil {
		return fmt.Errorf("leasedb/postgres: delete version %s/%s/%s@%s: %w", account, container, blob, versionID, sqlq.CtxErr(ctx, err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("leasedb/postgres: delete version %s/%s/%s@%s: %w", account, container, blob, versionID, leasedb.ErrNotFound)
	}
	return nil
}

func scanVersions(rows pgx.Rows) ([]*leasedb.Blob, error) {
	defer rows.Close()
	return sqlq.ScanVersions(rows, fromTS)
}

// AccountSettings implements leasedb.Tx.
func (t *tx) AccountSettings(ctx context.Context, account string) (leasedb.AccountSettings, error) {
	if err := checkText(account); err != nil {
		return leasedb.AccountSettings{}, err
	}
	if t.settings != nil && account == t.account {
		return *t.settings, nil // read with the clock (Now)
	}
	var v int
	var days int
	err := t.tx.QueryRow(ctx, `SELECT versioning, delete_retention_days FROM account_settings WHERE account = $1`, account).Scan(&v, &days)
	if errors.Is(err, pgx.ErrNoRows) {
		return leasedb.AccountSettings{}, nil
	}
	if err != nil {
		return leasedb.AccountSettings{}, fmt.Errorf("leasedb/postgres: account settings %s: %w", account, sqlq.CtxErr(ctx, err))
	}
	return leasedb.AccountSettings{Versioning: v != 0, DeleteRetentionDays: days}, nil
}

// PutAccountSettings implements leasedb.Tx.
func (t *tx) PutAccountSettings(ctx context.Context, account string, s leasedb.AccountSettings) error {
	if err := checkText(account); err != nil {
		return err
	}
	_, err := t.tx.Exec(ctx, sqlq.PutAccountSettings(dialect.Placeholder), account, sqlq.BoolInt(s.Versioning), s.DeleteRetentionDays)
	if err != nil {
		return fmt.Errorf("leasedb/postgres: put account settings %s: %w", account, sqlq.CtxErr(ctx, err))
	}
	if account == t.account {
		t.settings = &s
	}
	return nil
}

var nameRowsSQL = sqlq.NameRows(dialect.Placeholder)

// NameRows implements leasedb.Tx.
func (t *tx) NameRows(ctx context.Context, account, container, blob string) ([]*leasedb.Blob, error) {
	if err := checkText(account, container, blob); err != nil {
		return nil, err
	}
	rows, err := t.tx.Query(ctx, nameRowsSQL, account, container, blob)
	if err != nil {
		return nil, fmt.Errorf("leasedb/postgres: rows of %s/%s/%s: %w", account, container, blob, sqlq.CtxErr(ctx, err))
	}
	items, err := scanItems(rows)
	if err != nil {
		return nil, fmt.Errorf("leasedb/postgres: rows of %s/%s/%s: %w", account, container, blob, sqlq.CtxErr(ctx, err))
	}
	return sqlq.NameRowBlobs(items), nil
}
