-- 0009_blob_tags: an index of blob index tags for Find Blobs by Tags. Keep
-- equivalent to postgres/0009_blob_tags.sql.

-- One row per tag of a blob row (snapshots have no index entries: Find
-- Blobs by Tags reports base blobs). The rows are derived from
-- blobs.tags by triggers, so every write path (Put Blob, Set Blob Tags,
-- copies, deletes, Delete Container) keeps them exact in its own
-- transaction without knowing of them. The primary key is the only index:
-- it serves Find's lookup of one key's values, ordered by container and
-- name within one value (the order in which Find pages), and the triggers,
-- which find a row's old entries through its old tags. (A second index by
-- name would tempt the planner into walking a container in name order and
-- filtering, which reads every row of it.)
CREATE TABLE blob_tags (
    account   TEXT NOT NULL,
    container TEXT NOT NULL,
    name      TEXT NOT NULL,
    key       TEXT NOT NULL,
    value     TEXT NOT NULL,
    PRIMARY KEY (account, key, value, container, name)
) STRICT, WITHOUT ROWID;

CREATE TRIGGER blobs_tags_insert AFTER INSERT ON blobs
    WHEN NEW.tags IS NOT NULL
BEGIN
    INSERT INTO blob_tags (account, container, name, key, value)
        SELECT NEW.account, NEW.container, NEW.name, e.key, e.value FROM json_each(NEW.tags) AS e;
END;
CREATE TRIGGER blobs_tags_update AFTER UPDATE OF tags ON blobs
    WHEN OLD.tags IS NOT NEW.tags
BEGIN
    DELETE FROM blob_tags WHERE account = OLD.account AND (key, value) IN (SELECT e.key, e.value FROM json_each(OLD.tags) AS e)
        AND container = OLD.container AND name = OLD.name;
    INSERT INTO blob_tags (account, container, name, key, value)
        SELECT NEW.account, NEW.container, NEW.name, e.key, e.value FROM json_each(NEW.tags) AS e
        WHERE NEW.tags IS NOT NULL;
END;
CREATE TRIGGER blobs_tags_delete AFTER DELETE ON blobs
    WHEN OLD.tags IS NOT NULL
BEGIN
    DELETE FROM blob_tags WHERE account = OLD.account AND (key, value) IN (SELECT e.key, e.value FROM json_each(OLD.tags) AS e)
        AND container = OLD.container AND name = OLD.name;
END;

INSERT INTO blob_tags (account, container, name, key, value)
    SELECT b.account, b.container, b.name, e.key, e.value
    FROM blobs b, json_each(b.tags) AS e
    WHERE b.tags IS NOT NULL;
