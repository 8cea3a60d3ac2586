-- 0001_init: containers, blob rows, the collection queue and the ETag
-- counter. Keep equivalent to postgres/0001_init.sql.
--
-- Names use SQLite's default BINARY collation, which compares bytes: Azure
-- lists in byte order.
-- Times are INTEGER microseconds since the Unix epoch (UTC); NULL is Go's
-- zero time. metadata is the JSON text of a map[string]string, extents the
-- JSON text of []leasedb.Extent. Tables are STRICT so a wrong type is an
-- error, not a silent conversion.

CREATE TABLE containers (
    account        TEXT NOT NULL,
    name           TEXT NOT NULL,
    etag           TEXT NOT NULL,
    last_modified  INTEGER,
    metadata       TEXT NOT NULL DEFAULT '{}',
    public_access  TEXT NOT NULL DEFAULT '',
    lease_id       TEXT NOT NULL DEFAULT '',
    lease_state    TEXT NOT NULL DEFAULT '',
    lease_duration INTEGER NOT NULL DEFAULT 0,
    lease_expires  INTEGER,
    lease_break_at INTEGER,
    PRIMARY KEY (account, name)
) STRICT, WITHOUT ROWID;

CREATE TABLE blobs (
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
    PRIMARY KEY (account, container, name),
    -- A blob row never outlives its container: DeleteContainer deletes the
    -- blob rows (collecting their extents) before the container row.
    -- Enforced because every connection sets PRAGMA foreign_keys = ON.
    FOREIGN KEY (account, container) REFERENCES containers (account, name)
) STRICT, WITHOUT ROWID;

-- The collection queue: upload intents (is_intent) and objects to delete.
-- claimed_at is set by ClaimDue; a claimed intent can no longer be taken.
CREATE TABLE gc_queue (
    key        TEXT NOT NULL PRIMARY KEY,
    due_at     INTEGER NOT NULL,
    is_intent  INTEGER NOT NULL DEFAULT 0 CHECK (is_intent IN (0, 1)),
    claimed_at INTEGER
) STRICT, WITHOUT ROWID;

CREATE INDEX gc_queue_due ON gc_queue (due_at) WHERE claimed_at IS NULL;
CREATE INDEX gc_queue_claimed ON gc_queue (claimed_at) WHERE claimed_at IS NOT NULL;

-- ETags are "0x" + hex(0x8D0000000000000 + n): unique forever. One row,
-- incremented inside the (serialized) write transaction.
CREATE TABLE etag_seq (
    id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    n  INTEGER NOT NULL
) STRICT;

INSERT INTO etag_seq (id, n) VALUES (1, 0);
