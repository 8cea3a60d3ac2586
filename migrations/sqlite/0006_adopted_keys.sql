-- 0006_adopted_keys: which blob adopted each object of the bucket's other
-- key space (blobgw import s3). Keep equivalent to
-- postgres/0006_adopted_keys.sql.

-- Extents are shared only between a blob name and its own snapshots, and
-- collection counts on it: a key is queued when the last row of its name
-- drops it. An adopted object's key is derived from the object's name
-- (s3.AdoptedKey: "x/" + base64url), so adopting one object under two
-- names would share a key across names, and deleting either blob would
-- collect the other's bytes. One row per adopted key names the blob that
-- adopted it; AdoptBlob claims the key here (the primary key serializes
-- two claims) and refuses it while the holder's name (its blob or a
-- snapshot) still references the key. Rows are not removed when the
-- holder drops the key: a row whose name no longer references it is free,
-- and the next adoption of the key takes it over.
CREATE TABLE adopted_keys (
    key       TEXT NOT NULL PRIMARY KEY,
    account   TEXT NOT NULL,
    container TEXT NOT NULL,
    name      TEXT NOT NULL
) STRICT, WITHOUT ROWID;

-- Adoptions made before this version: every adopted key a blob row, then a
-- snapshot row, references (one holder each; where an object was already
-- adopted twice, the first row found keeps it).
INSERT OR IGNORE INTO adopted_keys (key, account, container, name)
SELECT json_extract(e.value, '$.k'), b.account, b.container, b.name
FROM blobs AS b, json_each(b.extents) AS e
WHERE substr(json_extract(e.value, '$.k'), 1, 2) = 'x/';

INSERT OR IGNORE INTO adopted_keys (key, account, container, name)
SELECT json_extract(e.value, '$.k'), s.account, s.container, s.name
FROM snapshots AS s, json_each(s.extents) AS e
WHERE substr(json_extract(e.value, '$.k'), 1, 2) = 'x/';
