-- 0001_init: containers, blob rows, the collection queue and the ETag
-- sequence. Keep equivalent to sqlite/0001_init.sql.
--
-- Names are TEXT COLLATE "C" so that ORDER BY, > and the prefix range used
-- by listings compare bytes (UTF-8 code point order), whatever the
-- database's default collation: Azure lists in byte order.
-- Times are TIMESTAMPTZ (microsecond precision); NULL is Go's zero time.
-- metadata is the JSON text of a map[string]string, extents the JSON text
-- of []leasedb.Extent.

CREATE TABLE containers (
    account        TEXT COLLATE "C" NOT NULL,
    name           TEXT COLLATE "C" NOT NULL,
    etag           TEXT NOT NULL,
    last_modified  TIMESTAMPTZ,
    metadata       TEXT NOT NULL DEFAULT '{}',
    public_access  TEXT NOT NULL DEFAULT '',
    lease_id       TEXT NOT NULL DEFAULT '',
    lease_state    TEXT NOT NULL DEFAULT '',
    lease_duration INTEGER NOT NULL DEFAULT 0,
    lease_expires  TIMESTAMPTZ,
    lease_break_at TIMESTAMPTZ,
    PRIMARY KEY (account, name)
);

CREATE TABLE blobs (
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
    PRIMARY KEY (account, container, name),
    -- A blob row never outlives its container: DeleteContainer deletes the
    -- blob rows (collecting their extents) before the container row.
    FOREIGN KEY (account, container) REFERENCES containers (account, name)
);

-- The collection queue: upload intents (is_intent) and objects to delete.
-- claimed_at is set by ClaimDue; a claimed intent can no longer be taken.
CREATE TABLE gc_queue (
    key        TEXT COLLATE "C" PRIMARY KEY,
    due_at     TIMESTAMPTZ NOT NULL,
    is_intent  BOOLEAN NOT NULL DEFAULT FALSE,
    claimed_at TIMESTAMPTZ
);

CREATE INDEX gc_queue_due ON gc_queue (due_at) WHERE claimed_at IS NULL;
CREATE INDEX gc_queue_claimed ON gc_queue (claimed_at) WHERE claimed_at IS NOT NULL;

-- ETags are "0x" + hex(0x8D0000000000000 + nextval): unique forever.
CREATE SEQUENCE etag_seq AS BIGINT START WITH 1 INCREMENT BY 1 NO CYCLE;
