package postgres

import (
	"context"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

// StaleBlockNames implements leasedb.Tx.
func (t *tx) StaleBlockNames(ctx context.Context, before time.Time, limit int) ([]leasedb.BlobRef, error) {
	return t.shared().StaleBlockNames(ctx, before, limit)
}
