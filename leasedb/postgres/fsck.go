package postgres

import (
	"context"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/jackc/pgx/v5"
)

// referencedKeysSQL lists every referenced key once, in byte order
// (COLLATE "C" whatever the database's collation). MAX(ref) prefers a
// row's name over the queue's "". The server sorts or hashes within
// work_mem and spills to temporary files past it; pgx reads the rows as
// they arrive, so memory stays bounded on both sides.
const referencedKeysSQL = `
SELECT key, MAX(ref) FROM (
	SELECT (e->>'k') COLLATE "C" AS key, (b.account || '/' || b.container || '/' || b.name) COLLATE "C" AS ref
	FROM blobs AS b, jsonb_array_elements(b.extents::jsonb) AS e
	UNION ALL
	SELECT (e->>'k') COLLATE "C", (s.account || '/' || s.container || '/' || s.name || '?snapshot=' || s.snapshot) COLLATE "C"
	FROM snapshots AS s, jsonb_array_elements(s.extents::jsonb) AS e
	UNION ALL
	SELECT (e->>'k') COLLATE "C", (v.account || '/' || v.container || '/' || v.name || '?versionid=' || v.version_id) COLLATE "C"
	FROM versions AS v, jsonb_array_elements(v.extents::jsonb) AS e
	UNION ALL
	SELECT key COLLATE "C", (account || '/' || container || '/' || blob || ' (staged block ' || block_id || ')') COLLATE "C" FROM blocks
	UNION ALL
	SELECT key COLLATE "C", '' COLLATE "C" FROM gc_queue
) AS r GROUP BY key ORDER BY key`

// ReferencedKeys implements leasedb.Store in one REPEATABLE READ, READ
// ONLY transaction (one snapshot), without retry: fn may already have seen
// keys when the statement fails.
func (s *Store) ReferencedKeys(ctx context.Context, fn func(key, ref string) error) error {
	err := s.run(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, true, func(ltx leasedb.Tx) error {
		return ltx.(*tx).shared().ReferencedKeys(ctx, referencedKeysSQL, fn)
	})
	return markUnavailable(ctx, err)
}
