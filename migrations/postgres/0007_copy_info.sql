-- 0007_copy_info: what Copy Blob wrote a blob (x-ms-copy-id, -source,
-- -status, -progress, -completion-time). Keep equivalent to
-- sqlite/0007_copy_info.sql.

-- copy_info is the JSON text of leasedb.CopyInfo; '' when the blob was not
-- written by a copy (or was changed since). Snapshots keep their base's.
ALTER TABLE blobs ADD COLUMN copy_info TEXT NOT NULL DEFAULT '';
ALTER TABLE snapshots ADD COLUMN copy_info TEXT NOT NULL DEFAULT '';
