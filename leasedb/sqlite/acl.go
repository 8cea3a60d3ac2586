package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// ServiceProperties implements leasedb.Tx.
func (t *tx) ServiceProperties(ctx context.Context, account string) (string, error) {
	if err := checkText(account); err != nil {
		return "", err
	}
	var doc string
	err := t.tx.QueryRowContext(ctx, `SELECT doc FROM service_properties WHERE account = ?`, account).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("leasedb/sqlite: service properties %s: %w", account, err)
	}
	return doc, nil
}

// PutServiceProperties implements leasedb.Tx.
func (t *tx) PutServiceProperties(ctx context.Context, account, doc string) error {
	if err := checkText(account, doc); err != nil {
		return err
	}
	_, err := t.tx.ExecContext(ctx, `INSERT INTO service_properties (account, doc) VALUES (?, ?)
		ON CONFLICT (account) DO UPDATE SET doc = excluded.doc`, account, doc)
	if err != nil {
		return fmt.Errorf("leasedb/sqlite: put service properties %s: %w", account, err)
	}
	return nil
}
