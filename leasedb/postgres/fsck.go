package postgres

import (
	"context"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/jackc/pgx/v5"
)

// rowRefsSQL is every key a row references, with the row's name: blob,
// snapshot and version rows' extents, soft-deleted rows' (a soft-deleted
// version's snapshot column is "v" and its id: leasedb.DeletedKey) and
// staged blocks. An inline extent (key "", its bytes in the row)
// references none.
const rowRefsSQL = `
	SELECT (e->>'k') COLLATE "C" AS key, (b.account || '/' || b.container || '/' || b.name) COLLATE "C" AS ref
	FROM blobs AS b, jsonb_array_elements(b.extents::jsonb) AS e WHERE e->>'k' <> ''
	UNION ALL
	SELECT (e->>'k') COLLATE "C", (s.account || '/' || s.container || '/' || s.name || '?snapshot=' || s.snapshot) COLLATE "C"
	FROM snapshots AS s, jsonb_array_elements(s.extents::jsonb) AS e WHERE e->>'k' <> ''
	UNION ALL
	SELECT (e->>'k') COLLATE "C", (v.account || '/' || v.container || '/' || v.name || '?versionid=' || v.version_id) COLLATE "C"
	FROM versions AS v, jsonb_array_elements(v.extents::jsonb) AS e WHERE e->>'k' <> ''
	UNION ALL
	SELECT (e->>'k') COLLATE "C", (d.account || '/' || d.container || '/' || d.name || (CASE WHEN d.snapshot = '' THEN '' WHEN d.snapshot >= 'v' THEN '?versionid=' || d.version_id ELSE '?snapshot=' || d.snapshot END) || ' (soft-deleted)') COLLATE "C"
	FROM deleted_blobs AS d, jsonb_array_elements(d.extents::jsonb) AS e WHERE e->>'k' <> ''
	UNION ALL
	SELECT key COLLATE "C", (account || '/' || container || '/' || blob || ' (staged block ' || block_id || ')') COLLATE "C" FROM blocks`

// referencedKeysSQL lists every referenced key once, in byte order
// (COLLATE "C" whatever the database's collation). MAX(ref) prefers a
// row's name over the queue's "". The server sorts or hashes within
// work_mem and spills to temporary files past it; pgx reads the rows as
// they arrive, so memory stays bounded on both sides.
const referencedKeysSQL = `
SELECT key, MAX(ref) FROM (` + rowRefsSQL + `
	UNION ALL
	SELECT key COLLATE "C", '' COLLATE "C" FROM gc_queue
) AS r GROUP BY key ORDER BY key`

// queuedReferencedSQL lists the keys the collection queue holds for
// deletion (not upload intents) that a row still references, once each in
// byte order, with one such row.
const queuedReferencedSQL = `
SELECT q.key, MAX(r.ref) FROM gc_queue AS q JOIN (` + rowRefsSQL + `
) AS r ON r.key = q.key COLLATE "C" WHERE NOT q.is_intent GROUP BY q.key ORDER BY q.key COLLATE "C"`

// ReferencedKeys implements leasedb.Store in one REPEATABLE READ, READ
// ONLY transaction (one snapshot), without retry: fn may already have seen
// keys when the statement fails.
func (s *Store) ReferencedKeys(ctx context.Context, fn func(key, ref string) error) error {
	return s.keyRefs(ctx, referencedKeysSQL, fn)
}

// QueuedReferencedKeys implements leasedb.Store like ReferencedKeys.
func (s *Store) QueuedReferencedKeys(ctx context.Context, fn func(key, ref string) error) error {
	return s.keyRefs(ctx, queuedReferencedSQL, fn)
}

// keyRefs runs q, a query of (key, ref) rows, and calls fn for each row.
func (s *Store) keyRefs(ctx context.Context, q string, fn func(key, ref string) error) error {
	err := s.run(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, true, func(ltx leasedb.Tx) error {
		return ltx.(*tx).ReferencedKeys(ctx, q, fn)
	})
	return markUnavailable(ctx, err)
}
