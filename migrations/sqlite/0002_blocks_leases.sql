-- 0002_blocks_leases: staged (uncommitted) blocks, when a lease was taken,
-- and partial indexes for listing leases. Keep equivalent to
-- postgres/0002_blocks_leases.sql.

-- lease_since is when the current lease id was acquired (NULL: none).
ALTER TABLE containers ADD COLUMN lease_since INTEGER;
ALTER TABLE blobs ADD COLUMN lease_since INTEGER;

-- Staged blocks of block blobs, keyed by the blob name: an uncommitted blob
-- has no row in blobs, only its blocks here. block_id is the base64 id as
-- the client sent it; key is the backend object holding the bytes.
-- staged_at is never NULL (Go's zero time is stored as its own Unix
-- microseconds); blocks list oldest first, then by block_id in byte order.
CREATE TABLE blocks (
    account   TEXT NOT NULL,
    container TEXT NOT NULL,
    blob      TEXT NOT NULL,
    block_id  TEXT NOT NULL,
    key       TEXT NOT NULL,
    size      INTEGER NOT NULL,
    staged_at INTEGER NOT NULL,
    PRIMARY KEY (account, container, blob, block_id),
    -- Like blobs: DeleteContainer deletes the blocks (collecting their
    -- keys) before the container row.
    FOREIGN KEY (account, container) REFERENCES containers (account, name)
) STRICT, WITHOUT ROWID;

-- ListLeases reads only rows holding a lease; the predicate must stay
-- textually identical to the query's so the planner can use the indexes.
CREATE INDEX containers_leased ON containers (account, name)
    WHERE lease_state NOT IN ('', 'available');
CREATE INDEX blobs_leased ON blobs (account, container, name)
    WHERE lease_state NOT IN ('', 'available');
