-- 0002_blocks_leases: staged (uncommitted) blocks, when a lease was taken,
-- and partial indexes for listing leases. Keep equivalent to
-- sqlite/0002_blocks_leases.sql.

-- lease_since is when the current lease id was acquired (NULL: none).
ALTER TABLE containers ADD COLUMN lease_since TIMESTAMPTZ;
ALTER TABLE blobs ADD COLUMN lease_since TIMESTAMPTZ;

-- Staged blocks of block blobs, keyed by the blob name: an uncommitted blob
-- has no row in blobs, only its blocks here. block_id is the base64 id as
-- the client sent it; key is the backend object holding the bytes.
-- staged_at is never NULL (Go's zero time is stored as 0001-01-01 UTC);
-- blocks list oldest first, then by block_id in byte order.
CREATE TABLE blocks (
    account   TEXT COLLATE "C" NOT NULL,
    container TEXT COLLATE "C" NOT NULL,
    blob      TEXT COLLATE "C" NOT NULL,
    block_id  TEXT COLLATE "C" NOT NULL,
    key       TEXT COLLATE "C" NOT NULL,
    size      BIGINT NOT NULL,
    staged_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (account, container, blob, block_id),
    -- Like blobs: DeleteContainer deletes the blocks (collecting their
    -- keys) before the container row.
    FOREIGN KEY (account, container) REFERENCES containers (account, name)
);

-- ListLeases reads only rows holding a lease; the predicate must stay
-- textually identical to the query's so the planner can use the indexes.
CREATE INDEX containers_leased ON containers (account, name)
    WHERE lease_state NOT IN ('', 'available');
CREATE INDEX blobs_leased ON blobs (account, container, name)
    WHERE lease_state NOT IN ('', 'available');
