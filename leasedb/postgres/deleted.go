package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

// moveContainerSQL copies a blob row's extents_keys with it (upsertSQL).
var moveContainerSQL = sqlq.MoveContainer(dialect.Placeholder, "extents_keys")

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
		return t.MoveRefused(ctx, from, name, to)
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
