package sqlite

import (
	"context"

	"github.com/blobgw/blobgw/leasedb"
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
	SELECT key, account || '/' || container || '/' || blob || ' (staged block ' || block_id || ')' FROM blocks
	UNION ALL
	SELECT key, '' FROM gc_queue
) GROUP BY key ORDER BY key`

// ReferencedKeys implements leasedb.Store. It runs once (no retry on
// SQLITE_BUSY): fn may already have seen keys when a statement fails.
func (s *Store) ReferencedKeys(ctx context.Context, fn func(key, ref string) error) error {
	return s.run(ctx, true, func(ltx leasedb.Tx) error {
		return ltx.(*tx).ReferencedKeys(ctx, referencedKeysSQL, fn)
	})
}
