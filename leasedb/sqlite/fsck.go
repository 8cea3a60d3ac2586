package sqlite

import (
	"context"
	"fmt"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

// referencedKeysSQL lists every referenced key once, in byte order (BINARY
// collation). MAX(ref) prefers a row's name over the queue's "", which sorts
// first. The GROUP BY sorts in a temporary b-tree, which SQLite spills to a
// temporary file past its cache, so memory stays bounded.
const referencedKeysSQL = `
SELECT key, MAX(ref) FROM (
	SELECT json_extract(e.value, '$.k') AS key, b.account || '/' || b.container || '/' || b.name AS ref
	FROM blobs AS b, json_each(b.extents) AS e
	UNION ALL
	SELECT json_extract(e.value, '$.k'), s.account || '/' || s.container || '/' || s.name || '?snapshot=' || s.snapshot
	FROM snapshots AS s, json_each(s.extents) AS e
	UNION ALL
	SELECT json_extract(e.value, '$.k'), v.account || '/' || v.container || '/' || v.name || '?versionid=' || v.version_id
	FROM versions AS v, json_each(v.extents) AS e
	UNION ALL
	SELECT json_extract(e.value, '$.k'), d.account || '/' || d.container || '/' || d.name || (CASE WHEN d.snapshot = '' THEN '' ELSE '?snapshot=' || d.snapshot END) || ' (soft-deleted)'
	FROM deleted_blobs AS d, json_each(d.extents) AS e
	UNION ALL
	SELECT key, account || '/' || container || '/' || blob || ' (staged block ' || block_id || ')' FROM blocks
	UNION ALL
	SELECT key, '' FROM gc_queue
) GROUP BY key ORDER BY key`

// ReferencedKeys implements leasedb.Store. It runs once (no retry on
// SQLITE_BUSY): fn may already have seen keys when a statement fails.
func (s *Store) ReferencedKeys(ctx context.Context, fn func(key, ref string) error) error {
	return s.run(ctx, true, func(ltx leasedb.Tx) error {
		rows, err := ltx.(*tx).tx.QueryContext(ctx, referencedKeysSQL)
		if err != nil {
			return fmt.Errorf("leasedb/sqlite: referenced keys: %w", sqlq.CtxErr(ctx, err))
		}
		defer rows.Close()
		for rows.Next() {
			var key, ref string
			if err := rows.Scan(&key, &ref); err != nil {
				return fmt.Errorf("leasedb/sqlite: referenced keys: %w", err)
			}
			if err := fn(key, ref); err != nil {
				return err
			}
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("leasedb/sqlite: referenced keys: %w", sqlq.CtxErr(ctx, err))
		}
		return nil
	})
}
