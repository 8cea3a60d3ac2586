package postgres

import "context"

// ServiceProperties implements leasedb.Tx.
func (t *tx) ServiceProperties(ctx context.Context, account string) (string, error) {
	return t.shared().ServiceProperties(ctx, account)
}

// PutServiceProperties implements leasedb.Tx.
func (t *tx) PutServiceProperties(ctx context.Context, account, doc string) error {
	return t.shared().PutServiceProperties(ctx, account, doc)
}
