-- 0008_extent_shares: backend objects shared by several blob names. Keep
-- equivalent to postgres/0008_extent_shares.sql.

-- Within one blob name (its blob and snapshot rows) extents are shared
-- freely, and a key leaves the name when no row of the name references it
-- any more. A Copy Blob within the gateway may make a second name
-- reference the source's objects instead of copying them; names counts the
-- blob names that reference key. A row exists only while at least two do:
-- a key without a row belongs to one name, and when it leaves that name it
-- is queued for collection.
CREATE TABLE extent_shares (
    key   TEXT NOT NULL PRIMARY KEY,
    names INTEGER NOT NULL CHECK (names >= 2)
) STRICT;
