package postgres

import (
	"context"

	"github.com/blobgw/blobgw/leasedb"
)

// PutVersion implements leasedb.Tx.
func (t *tx) PutVersion(ctx context.Context, b *leasedb.Blob) error {
	return t.shared().PutVersion(ctx, b)
}

// Version implements leasedb.Tx.
func (t *tx) Version(ctx context.Context, account, container, blob, versionID string) (*leasedb.Blob, error) {
	return t.shared().Version(ctx, account, container, blob, versionID)
}

// Versions implements leasedb.Tx.
func (t *tx) Versions(ctx context.Context, account, container, blob string) ([]*leasedb.Blob, error) {
	return t.shared().Versions(ctx, account, container, blob)
}

// DeleteVersion implements leasedb.Tx.
func (t *tx) DeleteVersion(ctx context.Context, account, container, blob, versionID string) error {
	return t.shared().DeleteVersion(ctx, account, container, blob, versionID)
}

// NameRows implements leasedb.Tx.
func (t *tx) NameRows(ctx context.Context, account, container, blob string) ([]*leasedb.Blob, error) {
	return t.shared().NameRows(ctx, account, container, blob)
}

// AccountSettings implements leasedb.Tx: the settings Now read with the
// clock when it is the transaction's account.
func (t *tx) AccountSettings(ctx context.Context, account string) (leasedb.AccountSettings, error) {
	if t.settings != nil && account == t.account {
		return *t.settings, nil
	}
	return t.shared().AccountSettings(ctx, account)
}

// PutAccountSettings implements leasedb.Tx; the transaction's account
// keeps what it wrote for AccountSettings.
func (t *tx) PutAccountSettings(ctx context.Context, account string, s leasedb.AccountSettings) error {
	if err := t.shared().PutAccountSettings(ctx, account, s); err != nil {
		return err
	}
	if account == t.account {
		t.settings = &s
	}
	return nil
}
