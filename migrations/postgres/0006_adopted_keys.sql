-- 0006_adopted_keys: which blob adopted each object of the bucket's other
-- key space (blobgw import s3). Keep equivalent to
-- sqlite/0006_adopted_keys.sql.

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
    key       TEXT COLLATE "C" PRIMARY KEY,
    account   TEXT COLLATE "C" NOT NULL,
    container TEXT COLLATE "C" NOT NULL,
    name      TEXT COLLATE "C" NOT NULL
);

-- Adoptions made before this version: every adopted key a blob row, then a
-- snapshot row, references (one holder each; where an object was already
-- adopted twice, the first row found keeps it).
INSERT INTO adopted_keys (key, account, container, name)
SELECT e ->> 'k', b.account, b.container, b.name
FROM blobs AS b, jsonb_array_elements(b.extents::jsonb) AS e
WHERE left(e ->> 'k', 2) = 'x/'
ON CONFLICT (key) DO NOTHING;

INSERT INTO adopted_keys (key, account, container, name)
SELECT e ->> 'k', s.account, s.container, s.name
FROM snapshots AS s, jsonb_array_elements(s.extents::jsonb) AS e
WHERE left(e ->> 'k', 2) = 'x/'
ON CONFLICT (key) DO NOTHING;
