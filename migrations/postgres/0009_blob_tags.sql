-- 0009_blob_tags: an index of blob index tags for Find Blobs by Tags. Keep
-- equivalent to sqlite/0009_blob_tags.sql.

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
    account   TEXT COLLATE "C" NOT NULL,
    container TEXT COLLATE "C" NOT NULL,
    name      TEXT COLLATE "C" NOT NULL,
    key       TEXT COLLATE "C" NOT NULL,
    value     TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (account, key, value, container, name)
);

CREATE FUNCTION blob_tags_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' AND OLD.tags IS NOT NULL THEN
        DELETE FROM blob_tags t USING jsonb_each_text(OLD.tags::jsonb) AS e
            WHERE t.account = OLD.account AND t.key = e.key AND t.value = e.value
                AND t.container = OLD.container AND t.name = OLD.name;
    END IF;
    IF TG_OP <> 'DELETE' AND NEW.tags IS NOT NULL THEN
        INSERT INTO blob_tags (account, container, name, key, value)
            SELECT NEW.account, NEW.container, NEW.name, e.key, e.value
            FROM jsonb_each_text(NEW.tags::jsonb) AS e;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER blobs_tags_insert AFTER INSERT ON blobs
    FOR EACH ROW WHEN (NEW.tags IS NOT NULL) EXECUTE FUNCTION blob_tags_sync();
CREATE TRIGGER blobs_tags_update AFTER UPDATE OF tags ON blobs
    FOR EACH ROW WHEN (OLD.tags IS DISTINCT FROM NEW.tags) EXECUTE FUNCTION blob_tags_sync();
CREATE TRIGGER blobs_tags_delete AFTER DELETE ON blobs
    FOR EACH ROW WHEN (OLD.tags IS NOT NULL) EXECUTE FUNCTION blob_tags_sync();

INSERT INTO blob_tags (account, container, name, key, value)
    SELECT b.account, b.container, b.name, e.key, e.value
    FROM blobs b, jsonb_each_text(b.tags::jsonb) AS e
    WHERE b.tags IS NOT NULL;
