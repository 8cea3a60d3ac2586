-- 0010_sealed: sealed append blobs (Append Blob Seal). Keep equivalent to
-- sqlite/0010_sealed.sql.

-- sealed is 1 once an append blob is sealed: Append Block is refused (409
-- BlobIsSealed) until the name is overwritten. Snapshots keep the flag of
-- the blob they were taken of. An integer on both dialects, so that the
-- column lists the drivers share (leasedb/internal/sqlq) read the same.
ALTER TABLE blobs ADD COLUMN sealed INTEGER NOT NULL DEFAULT 0 CHECK (sealed IN (0, 1));
ALTER TABLE snapshots ADD COLUMN sealed INTEGER NOT NULL DEFAULT 0 CHECK (sealed IN (0, 1));
