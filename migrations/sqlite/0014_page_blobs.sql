-- 0014_page_blobs: page blobs. Keep equivalent to
-- postgres/0014_page_blobs.sql.

-- sequence_number is a page blob's x-ms-blob-sequence-number (0 for other
-- blob types). Snapshots and previous versions (0013_versions) keep the
-- number of the blob they were taken of.
-- A page blob's page map needs no table of its own: its written runs are
-- the row's extents, each with its blob offset and its offset in the
-- object ("a" and "o" in the extents JSON), so every reader of extents
-- (snapshots, ReferencedKeys, DeleteContainer, the collector) already
-- counts them as references.
ALTER TABLE blobs ADD COLUMN sequence_number INTEGER NOT NULL DEFAULT 0;
ALTER TABLE snapshots ADD COLUMN sequence_number INTEGER NOT NULL DEFAULT 0;
ALTER TABLE versions ADD COLUMN sequence_number INTEGER NOT NULL DEFAULT 0;
