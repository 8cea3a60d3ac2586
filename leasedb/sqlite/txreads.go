package sqlite

import (
	"context"
	"fmt"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

// Reads a transaction repeats, answered without their statement.
//
// On SQLite a statement costs no round trip, but each one still costs the
// driver a row object with the names and declared types of every column
// (modernc.org/sqlite reads them for each query), database/sql its rows
// and context bookkeeping, and SQLite a VDBE run: about 30 allocations and
// several µs of CPU for even a one-row read.

// AccountSettings implements leasedb.Tx: read once per transaction. A
// write of the settings in the same transaction goes through
// PutAccountSettings, which keeps the copy current; nothing else writes
// them, and no other writer runs inside this transaction (Update holds the
// write lock; a View reads one snapshot). A Put Blob over an existing blob
// read them twice before (its versioning check and its soft delete check).
func (t *tx) AccountSettings(ctx context.Context, account string) (leasedb.AccountSettings, error) {
	if t.settingsOK && t.settingsFor == account {
		return t.settings, nil
	}
	s, err := t.Tx.AccountSettings(ctx, account)
	if err != nil {
		return s, err
	}
	t.settings, t.settingsFor, t.settingsOK = s, account, true
	return s, nil
}

// PutAccountSettings implements leasedb.Tx, keeping AccountSettings' copy.
func (t *tx) PutAccountSettings(ctx context.Context, account string, s leasedb.AccountSettings) error {
	t.settingsOK = false
	if err := t.Tx.PutAccountSettings(ctx, account, s); err != nil {
		return err
	}
	t.settings, t.settingsFor, t.settingsOK = s, account, true
	return nil
}

// nameRowsExistSQL answers whether sqlq.NameRows would return a row: one
// integer instead of the 29 columns of the union, which for a name
// without snapshots, versions or soft-deleted rows (every overwrite in an
// account without them) is the whole answer.
var nameRowsExistSQL = func() string {
	where := ` WHERE account = ?1 AND container = ?2 AND name = ?3)`
	return `SELECT EXISTS (SELECT 1 FROM snapshots` + where +
		` OR EXISTS (SELECT 1 FROM versions` + where +
		` OR EXISTS (SELECT 1 FROM deleted_blobs` + where + ` AS a` // named quietly (resultcols.go)
}()

// NameRows implements leasedb.Tx: the union only when the name has such
// rows. Both statements run in the same transaction, so they see the
// same rows.
func (t *tx) NameRows(ctx context.Context, account, container, blob string) ([]*leasedb.Blob, error) {
	if err := checkText(account, container, blob); err != nil {
		return nil, err
	}
	var some bool
	if err := t.tx.QueryRowContext(ctx, nameRowsExistSQL, account, container, blob).Scan(&some); err != nil {
		return nil, fmt.Errorf("leasedb/sqlite: rows of %s/%s/%s: %w", account, container, blob, sqlq.CtxErr(ctx, err))
	}
	if !some {
		return []*leasedb.Blob{}, nil
	}
	return t.Tx.NameRows(ctx, account, container, blob)
}
