package sqlite

import (
	"context"

	"github.com/blobgw/blobgw/leasedb"
)

// rowRefsSQL is every key a row references, with the row's name: blob,
// snapshot and version rows' extents, soft-deleted rows' (a soft-deleted
// version's snapshot column is "v" and its id: leasedb.DeletedKey) and
// staged blocks. An inline extent (key "", its bytes in the row)
// references none.
const rowRefsSQL = `
	SELECT json_extract(e.value, '$.k') AS key, b.account || '/' || b.container || '/' || b.name AS ref
	FROM blobs AS b, json_each(b.extents) AS e WHERE json_extract(e.value, '$.k') <> ''
	UNION ALL
	SELECT json_extract(e.value, '$.k'), s.account || '/' || s.container || '/' || s.name || '?snapshot=' || s.snapshot
	FROM snapshots AS s, json_each(s.extents) AS e WHERE json_extract(e.value, '$.k') <> ''
	UNION ALL
	SELECT json_extract(e.value, '$.k'), v.account || '/' || v.container || '/' || v.name || '?versionid=' || v.version_id
	FROM versions AS v, json_each(v.extents) AS e WHERE json_extract(e.value, '$.k') <> ''
	UNION ALL
	SELECT json_extract(e.value, '$.k'), d.account || '/' || d.container || '/' || d.name || (CASE WHEN d.snapshot = '' THEN '' WHEN d.snapshot >= 'v' THEN '?versionid=' || d.version_id ELSE '?snapshot=' || d.snapshot END) || ' (soft-deleted)'
	FROM deleted_blobs AS d, json_each(d.extents) AS e WHERE json_extract(e.value, '$.k') <> ''
	UNION ALL
	SELECT key, account || '/' || container || '/' || blob || ' (staged block ' || block_id || ')' FROM blocks`

// referencedKeysSQL lists every referenced key once, in byte order (BINARY
// collation). MAX(ref) prefers a row's name over the queue's "", which sorts
// first. The GROUP BY sorts in a temporary b-tree, which SQLite spills to a
// temporary file past its cache, so memory stays bounded.
const referencedKeysSQL = `
SELECT key, MAX(ref) FROM (` + rowRefsSQL + `
	UNION ALL
	SELECT key, '' FROM gc_queue
) GROUP BY key ORDER BY key`

// queuedReferencedSQL lists the keys the collection queue holds for
// deletion (not upload intents) that a row still references, once each in
// byte order, with one such row.
const queuedReferencedSQL = `
SELECT q.key, MAX(r.ref) FROM gc_queue AS q JOIN (` + rowRefsSQL + `
) AS r ON r.key = q.key WHERE q.is_intent = 0 GROUP BY q.key ORDER BY q.key`

// ReferencedKeys implements leasedb.Store. It runs once (no retry on
// SQLITE_BUSY): fn may already have seen keys when a statement fails.
func (s *Store) ReferencedKeys(ctx context.Context, fn func(key, ref string) error) error {
	return s.keyRefs(ctx, referencedKeysSQL, fn)
}

// QueuedReferencedKeys implements leasedb.Store like ReferencedKeys.
func (s *Store) QueuedReferencedKeys(ctx context.Context, fn func(key, ref string) error) error {
	return s.keyRefs(ctx, queuedReferencedSQL, fn)
}

// keyRefs runs q, a query of (key, ref) rows, and calls fn for each row.
func (s *Store) keyRefs(ctx context.Context, q string, fn func(key, ref string) error) error {
	return s.run(ctx, true, func(ltx leasedb.Tx) error {
		return ltx.(*tx).ReferencedKeys(ctx, q, fn)
	})
}
