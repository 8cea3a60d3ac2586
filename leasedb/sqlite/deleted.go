package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

var (
	moveContainerSQL   = sqlq.MoveContainer(dialect.Placeholder)
	containerExistsSQL = sqlq.ContainerExists(dialect.Placeholder)
	insertDeletedSQL   = sqlq.InsertDeleted(plain)
	deletedWhereSQL    = sqlq.DeletedWhere(dialect.Placeholder)
	expiredDeletedSQL  = sqlq.ExpiredDeleted(dialect.Placeholder)
)

// MoveContainer implements leasedb.Tx.
func (t *tx) MoveContainer(ctx context.Context, from, name, to string) error {
	if err := checkText(from, name, to); err != nil {
		return err
	}
	for i, q := range moveContainerSQL {
		res, err := t.tx.ExecContext(ctx, q.SQL, q.Args(from, name, to)...)
		if err != nil {
			return fmt.Errorf("leasedb/sqlite: move container %s/%s to %s: %w", from, name, to, sqlq.CtxErr(ctx, err))
		}
		if i > 0 {
			continue
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("leasedb/sqlite: move container %s/%s to %s: %w", from, name, to, err)
		} else if n == 0 {
			return t.moveRefused(ctx, from, name, to)
		}
	}
	return nil
}

// moveRefused says why the container row was not copied: no source row,
// or the target name taken.
func (t *tx) moveRefused(ctx context.Context, from, name, to string) error {
	var one int
	err := t.tx.QueryRowContext(ctx, containerExistsSQL, from, name).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("leasedb/sqlite: move container %s/%s: %w", from, name, leasedb.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("leasedb/sqlite: move container %s/%s: %w", from, name, sqlq.CtxErr(ctx, err))
	}
	return fmt.Errorf("leasedb/sqlite: move container %s/%s to %s: %w", from, name, to, leasedb.ErrExists)
}

// InsertDeletedContainer implements leasedb.Tx.
func (t *tx) InsertDeletedContainer(ctx context.Context, d *leasedb.DeletedContainer) error {
	if err := checkText(d.Account, d.Name, d.Version); err != nil {
		return err
	}
	res, err := t.tx.ExecContext(ctx, insertDeletedSQL, d.Account, d.Name, d.Version, d.DeletedAt.UnixMicro(), d.ExpiresAt.UnixMicro())
	if err != nil {
		return fmt.Errorf("leasedb/sqlite: insert deleted container %s/%s: %w", d.Account, d.Name, sqlq.CtxErr(ctx, err))
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("leasedb/sqlite: insert deleted container %s/%s: %w", d.Account, d.Name, err)
	} else if n == 0 {
		return fmt.Errorf("leasedb/sqlite: insert deleted container %s/%s %s: %w", d.Account, d.Name, d.Version, leasedb.ErrExists)
	}
	return nil
}

// DeletedContainer implements leasedb.Tx.
func (t *tx) DeletedContainer(ctx context.Context, account, name, version string) (*leasedb.DeletedContainer, error) {
	if err := checkText(account, name, version); err != nil {
		return nil, err
	}
	out, err := t.queryDeleted(ctx, `SELECT `+sqlq.DeletedCols+` FROM deleted_containers`+deletedWhereSQL, account, name, version)
	if err != nil || len(out) == 0 {
		return nil, err
	}
	return out[0], nil
}

// RemoveDeletedContainer implements leasedb.Tx.
func (t *tx) RemoveDeletedContainer(ctx context.Context, account, name, version string) error {
	if err := checkText(account, name, version); err != nil {
		return err
	}
	res, err := t.tx.ExecContext(ctx, `DELETE FROM deleted_containers`+deletedWhereSQL, account, name, version)
	if err != nil {
		return fmt.Errorf("leasedb/sqlite: remove deleted container %s/%s: %w", account, name, sqlq.CtxErr(ctx, err))
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("leasedb/sqlite: remove deleted container %s/%s: %w", account, name, err)
	} else if n == 0 {
		return fmt.Errorf("leasedb/sqlite: remove deleted container %s/%s %s: %w", account, name, version, leasedb.ErrNotFound)
	}
	return nil
}

// ListDeletedContainers implements leasedb.Tx.
func (t *tx) ListDeletedContainers(ctx context.Context, account, prefix, after, afterVersion string, limit int) ([]*leasedb.DeletedContainer, error) {
	if err := checkText(account, prefix, after, afterVersion); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	q, args := sqlq.ListDeleted(dialect.Placeholder, account, prefix, after, afterVersion, limit)
	return t.queryDeleted(ctx, q, args...)
}

// ExpiredContainers implements leasedb.Tx.
func (t *tx) ExpiredContainers(ctx context.Context, before time.Time, limit int) ([]*leasedb.DeletedContainer, error) {
	if limit <= 0 {
		return nil, nil
	}
	return t.queryDeleted(ctx, expiredDeletedSQL, before.UnixMicro(), limit)
}

func (t *tx) queryDeleted(ctx context.Context, q string, args ...any) ([]*leasedb.DeletedContainer, error) {
	rows, err := t.tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("leasedb/sqlite: deleted containers: %w", sqlq.CtxErr(ctx, err))
	}
	defer rows.Close()
	var out []*leasedb.DeletedContainer
	for rows.Next() {
		var d leasedb.DeletedContainer
		var del, exp int64
		if err := rows.Scan(&d.Account, &d.Name, &d.Version, &del, &exp); err != nil {
			return nil, fmt.Errorf("leasedb/sqlite: deleted containers: %w", err)
		}
		d.DeletedAt, d.ExpiresAt = time.UnixMicro(del).UTC(), time.UnixMicro(exp).UTC()
		out = append(out, &d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("leasedb/sqlite: deleted containers: %w", sqlq.CtxErr(ctx, err))
	}
	return out, nil
}
