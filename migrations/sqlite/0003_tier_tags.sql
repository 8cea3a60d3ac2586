-- 0003_tier_tags: access tiers and blob index tags. Keep equivalent to
-- postgres/0003_tier_tags.sql.

-- access_tier is the tier set by Put Blob / Put Block List / Set Blob Tier
-- ('Hot', 'Cool', 'Cold', 'Archive'); NULL when never set, which is
-- reported as Hot (inferred). tags is the JSON text of a
-- map[string]string; NULL when the blob has no tags. Find Blobs by Tags
-- reads the index that 0009_blob_tags derives from this column.
ALTER TABLE blobs ADD COLUMN access_tier TEXT;
ALTER TABLE blobs ADD COLUMN tags TEXT;
