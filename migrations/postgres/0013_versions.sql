-- 0013_versions: blob versioning per account. Keep equivalent to
-- sqlite/0013_versions.sql.

-- One row per account whose settings differ from the defaults; no row
-- means versioning off. versioning is 1 while every write that creates or
-- replaces a blob keeps the previous blob as a version. Shared by every
-- replica: the commit transaction reads it.
CREATE TABLE account_settings (
    account    TEXT COLLATE "C" PRIMARY KEY,
    versioning INTEGER NOT NULL DEFAULT 0 CHECK (versioning IN (0, 1))
);

-- version_id is the version id (x-ms-version-id, the snapshot id form) of
-- the current blob when it was written with versioning on; '' otherwise.
-- Snapshot rows keep the version id of the blob they were taken of.
ALTER TABLE blobs ADD COLUMN version_id TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE snapshots ADD COLUMN version_id TEXT COLLATE "C" NOT NULL DEFAULT '';

-- The previous versions of a blob name: every column of blobs as the row
-- was when a write replaced or deleted it. Ids of one name sort by time in
-- byte order (COLLATE "C") and only grow. A version shares its extents
-- with the other rows of the name (blob, snapshots, versions): a key is
-- collected only when no row of the name references it any more. There is
-- no foreign key to blobs: a name may have versions and no current blob.
CREATE TABLE versions (
    account             TEXT COLLATE "C" NOT NULL,
    container           TEXT COLLATE "C" NOT NULL,
    name                TEXT COLLATE "C" NOT NULL,
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
    copy_info           TEXT NOT NULL DEFAULT '',
    sealed              INTEGER NOT NULL DEFAULT 0 CHECK (sealed IN (0, 1)),
    version_id          TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (account, container, name, version_id),
    -- Like blobs: DeleteContainer deletes the version rows (collecting
    -- their extents) before the container row.
    FOREIGN KEY (account, container) REFERENCES containers (account, name)
);
