-- 0005_snapshots: blob snapshots. Keep equivalent to
-- sqlite/0005_snapshots.sql.

-- One row per snapshot of a blob name, with every column of blobs as the
-- row was when the snapshot was taken, plus the snapshot id
-- ("2024-01-01T00:00:00.0000000Z"; ids of one name sort by time in byte
-- order, hence COLLATE "C"). A snapshot shares its extents with the base
-- blob and the other snapshots of the name: a key is collected only when
-- no row of the name references it any more. There is no foreign key to
-- blobs: whether a base blob may go while it has snapshots is decided by
-- the operations.
CREATE TABLE snapshots (
    account             TEXT COLLATE "C" NOT NULL,
    container           TEXT COLLATE "C" NOT NULL,
    name                TEXT COLLATE "C" NOT NULL,
    snapshot            TEXT COLLATE "C" NOT NULL,
    blob_type           TEXT NOT NULL,
    etag                TEXT NOT NULL,
    created             TIMESTAMPTZ,
    last_modified       TIMESTAMPTZ,
    size                BIGINT NOT NULL DEFAULT 0,
    content_type        TEXT NOT NULL DEFAULT '',
    content_encoding    TEXT NOT NULL DEFAULT '',
    content_language    TEXT NOT NULL DEFAULT '',
    content_disposition TEXT NOT NULL DEFAULT '',
    cache_control       TEXT NOT NULL DEFAULT '',
    content_md5         BYTEA,
    metadata            TEXT NOT NULL DEFAULT '{}',
    extents             TEXT NOT NULL DEFAULT '[]',
    block_count         INTEGER NOT NULL DEFAULT 0,
    lease_id            TEXT NOT NULL DEFAULT '',
    lease_state         TEXT NOT NULL DEFAULT '',
    lease_duration      INTEGER NOT NULL DEFAULT 0,
    lease_expires       TIMESTAMPTZ,
    lease_break_at      TIMESTAMPTZ,
    lease_since         TIMESTAMPTZ,
    access_tier         TEXT,
    tags                TEXT,
    PRIMARY KEY (account, container, name, snapshot),
    -- Like blobs: DeleteContainer deletes the snapshot rows (collecting
    -- their extents) before the container row.
    FOREIGN KEY (account, container) REFERENCES containers (account, name)
);
