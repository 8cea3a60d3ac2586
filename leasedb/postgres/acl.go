package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

// ServiceProperties implements leasedb.Tx.
func (t *tx) ServiceProperties(ctx context.Context, account string) (string, error) {
	if err := checkText(account); err != nil {
		return "", err
	}
	var doc string
	err := t.tx.QueryRow(ctx, `SELECT doc FROM service_properties WHERE account = $1`, account).Scan(&doc)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("leasedb/postgres: service properties %s: %w", account, sqlq.CtxErr(ctx, err))
	}
	return doc, nil
}

// PutServiceProperties implements leasedb.Tx.
func (t *tx) PutServiceProperties(ctx context.Context, account, doc string) error {
	if err := checkText(account, doc); err != nil {
		return err
	}
	_, err := t.tx.Exec(ctx, `INSERT INTO service_properties (account, doc) VALUES ($1, $2)
		ON CONFLICT (account) DO UPDATE SET doc = EXCLUDED.doc`, account, doc)
	if err != nil {
		return fmt.Errorf("leasedb/postgres: put service properties %s: %w", account, sqlq.CtxErr(ctx, err))
	}
	return nil
}
