-- 0011_blocks_staged_at: an index on when blocks were staged, so the
-- collector finds uncommitted blocks past block_expiry (Tx.StaleBlockNames)
-- without reading every staged block. Keep equivalent to
-- sqlite/0011_blocks_staged_at.sql.
CREATE INDEX blocks_staged_at ON blocks (staged_at);
