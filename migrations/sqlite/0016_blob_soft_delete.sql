-- 0016_blob_soft_delete: blob soft delete (Set Blob Service Properties
-- DeleteRetentionPolicy, Undelete Blob). Keep equivalent to
-- postgres/0016_blob_soft_delete.sql.

-- The effective retention of the account's DeleteRetentionPolicy in days
-- (0: soft delete off), written with the service properties document in
-- one transaction, so a commit reads it with the versioning setting.
ALTER TABLE account_settings ADD COLUMN delete_retention_days INTEGER NOT NULL DEFAULT 0;

-- Soft-deleted blob rows: every column of blobs as the row was when Delete
-- Blob (or an overwrite, which keeps the replaced blob as a soft-deleted
-- snapshot) removed it. snapshot is '' for a soft-deleted base blob, else
-- the snapshot id. A row here shares its extents with the other rows of the
-- name like a snapshot does, so its objects stay until the row goes:
-- Undelete Blob moves it back, and once expires_at passes (database clock)
-- the collector removes it. deleted_at and expires_at are microseconds
-- since the Unix epoch in both dialects (List Blobs reads them as text).
CREATE TABLE deleted_blobs (
    account             TEXT NOT NULL,
    container           TEXT NOT NULL,
    name                TEXT NOT NULL,
    blob_type           TEXT NOT NULL,
    etag                TEXT NOT NULL,
    created             INTEGER,
    last_modified       INTEGER,
    size                INTEGER NOT NULL DEFAULT 0,
    content_type        TEXT NOT NULL DEFAULT '',
    content_encoding    TEXT NOT NULL DEFAULT '',
    content_language    TEXT NOT NULL DEFAULT '',
    content_disposition TEXT NOT NULL DEFAULT '',
    cache_control       TEXT NOT NULL DEFAULT '',
    content_md5         BLOB,
    metadata            TEXT NOT NULL DEFAULT '{}',
    extents             TEXT NOT NULL DEFAULT '[]',
    block_count         INTEGER NOT NULL DEFAULT 0,
    lease_id            TEXT NOT NULL DEFAULT '',
    lease_state         TEXT NOT NULL DEFAULT '',
    lease_duration      INTEGER NOT NULL DEFAULT 0,
    lease_expires       INTEGER,
    lease_break_at      INTEGER,
    lease_since         INTEGER,
    access_tier         TEXT,
    tags                TEXT,
    copy_info           TEXT NOT NULL DEFAULT '',
    sealed              INTEGER NOT NULL DEFAULT 0 CHECK (sealed IN (0, 1)),
    version_id          TEXT NOT NULL DEFAULT '',
    sequence_number     INTEGER NOT NULL DEFAULT 0,
    snapshot            TEXT NOT NULL,
    deleted_at          INTEGER NOT NULL,
    expires_at          INTEGER NOT NULL,
    PRIMARY KEY (account, container, name, snapshot),
    -- Like blobs: DeleteContainer deletes these rows (collecting their
    -- extents) before the container row.
    FOREIGN KEY (account, container) REFERENCES containers (account, name)
) STRICT, WITHOUT ROWID;

-- The collector finds expired rows by this index, never by a scan.
CREATE INDEX deleted_blobs_expires ON deleted_blobs (expires_at);
