-- 0018_extents_keys: the column Postgres's 0018 adds
-- (postgres/0018_extents_keys.sql), which its driver writes with every
-- blob row and its LockForReplace reads. The SQLite driver neither writes
-- nor reads it (NULL: not known); it is here so that the two dialects
-- declare the same schema at every version.
ALTER TABLE blobs ADD COLUMN extents_keys INTEGER; -- STRICT: booleans are 0 and 1
