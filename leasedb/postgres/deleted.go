package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

var (
	moveContainerSQL   = sqlq.MoveContainer(dialect.Placeholder)
	containerExistsSQL = sqlq.ContainerExists(dialect.Placeholder)
	insertDeletedSQL   = sqlq.InsertDeleted(dialect.Placeholder)
	deletedWhereSQL    = sqlq.DeletedWhere(dialect.Placeholder)
	expiredDeletedSQL  = sqlq.ExpiredDeleted(dialect.Placeholder)
)

// MoveContainer implements leasedb.Tx. The container row's copy goes
// first and alone: when it copies nothing (no row, or a taken name)
// nothing else may run. The other statements then go in one batch (one
// round trip).
func (t *tx) MoveContainer(ctx context.Context, from, name, to string) error {
	if err := checkText(from, name, to); err != nil {
		return err
	}
	tag, err := t.tx.Exec(ctx, moveContainerSQL[0].SQL, moveContainerSQL[0].Args(from, name, to)...)
	if err != nil {
		return fmt.Errorf("leasedb/postgres: move container %s/%s to %s: %w", from, name, to, sqlq.CtxErr(ctx, err))
	}
	if tag.RowsAffected() == 0 {
		var one int
		err = t.tx.QueryRow(ctx, containerExistsSQL, from, name).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("leasedb/postgres: move container %s/%s: %w", from, name, leasedb.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("leasedb/postgres: move container %s/%s: %w", from, name, sqlq.CtxErr(ctx, err))
		}
		return fmt.Errorf("leasedb/postgres: move container %s/%s to %s: %w", from, name, to, leasedb.ErrExists)
	}
	b := &pgx.Batch{}
	for _, q := range moveContainerSQL[1:] {
		b.Queue(q.SQL, q.Args(from, name, to)...)
	}
	br := t.tx.SendBatch(ctx, b)
	for range moveContainerSQL[1:] {
		if _, err = br.Exec(); err != nil {
			break
		}
	}
	if cerr := br.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("leasedb/postgres: move container %s/%s to %s: %w", from, name, to, sqlq.CtxErr(ctx, err))
	}
	return nil
}

// InsertDeletedContainer implements leasedb.Tx.
func (t *tx) InsertDeletedContainer(ctx context.Context, d *leasedb.DeletedContainer) error {
	if err := checkText(d.Account, d.Name, d.Version); err != nil {
		return err
	}
	tag, err := t.tx.Exec(ctx, insertDeletedSQL, d.Account, d.Name, d.Version, ts(d.DeletedAt), ts(d.ExpiresAt))
	if err != nil {
		return fmt.Errorf("leasedb/postgres: insert deleted container %s/%s: %w", d.Account, d.Name, sqlq.CtxErr(ctx, err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("leasedb/postgres: insert deleted container %s/%s %s: %w", d.Account, d.Name, d.Version, leasedb.ErrExists)
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
	tag, err := t.tx.Exec(ctx, `DELETE FROM deleted_containers`+deletedWhereSQL, account, name, version)
	if err != nil {
		return fmt.Errorf("leasedb/postgres: remove deleted container %s/%s: %w", account, name, sqlq.CtxErr(ctx, err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("leasedb/postgres: remove deleted container %s/%s %s: %w", account, name, version, leasedb.ErrNotFound)
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
	return t.queryDeleted(ctx, expiredDeletedSQL, ts(before), limit)
}

func (t *tx) queryDeleted(ctx context.Context, q string, args ...any) ([]*leasedb.DeletedContainer, error) {
	rows, err := t.tx.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("leasedb/postgres: deleted containers: %w", sqlq.CtxErr(ctx, err))
	}
	var (
		out      []*leasedb.DeletedContainer
		d        leasedb.DeletedContainer
		del, exp pgtype.Timestamptz
	)
	_, err = pgx.ForEachRow(rows, []any{&d.Account, &d.Name, &d.Version, &del, &exp}, func() error {
		one := d
		one.DeletedAt, one.ExpiresAt = fromTS(del), fromTS(exp)
		out = append(out, &one)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("leasedb/postgres: deleted containers: %w", sqlq.CtxErr(ctx, err))
	}
	return out, nil
}
