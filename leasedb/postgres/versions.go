package postgres

import (
	"context"

	"github.com/blobgw/blobgw/leasedb"
)

// AccountSettings implements leasedb.Tx: the settings Now read with the
// clock when it is the transaction's account.
func (t *tx) AccountSettings(ctx context.Context, account string) (leasedb.AccountSettings, error) {
	if t.settings != nil && account == t.account {
		return *t.settings, nil
	}
	return t.Tx.AccountSettings(ctx, account)
}

// PutAccountSettings implements leasedb.Tx; the transaction's account
// keeps what it wrote for AccountSettings.
func (t *tx) PutAccountSettings(ctx context.Context, account string, s leasedb.AccountSettings) error {
	if err := t.Tx.PutAccountSettings(ctx, account, s); err != nil {
		return err
	}
	if account == t.account {
		t.settings = &s
	}
	return nil
}
